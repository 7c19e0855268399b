/**
 * The SMTP listener (docs/ingest.md), built on `smtp-server`. It behaves like the MX of `INBOUND_DOMAIN`:
 * no AUTH, mail accepted only for known project inbound addresses and the projects' addresses at their
 * own verified domains (resources/domains.ts), and "250" to DATA only once the
 * message and its events are committed (RFC 5321 §4.1.1.4, §6.1: once we answer 250 we own the mail).
 *
 * Replies (enhanced status codes per RFC 3463, advertised with ENHANCEDSTATUSCODES):
 * - RCPT for an unknown address → 550 5.1.1; lookup failure → 451 4.3.0.
 * - Over 50 MiB → 552 5.3.4 (SIZE is advertised, RFC 1870, so good clients stop at MAIL FROM).
 * - Project storage quota reached → 552 5.2.2. Unparseable message → 554 5.6.0.
 * - Transient failure (database or blob store down) → 451 4.3.0: the client retries, and a retry of
 *   the same bytes is deduplicated, so nothing is stored twice.
 *
 * DATA is streamed to a spool file (`DATA_DIR/spool`), never buffered whole in memory, then ingested.
 * Each connection reuses one spool file for its messages and removes it when it closes (`SpoolSlot`).
 * A client that disconnects mid-DATA leaves nothing behind.
 *
 * This is one intake source (intake.ts): recipients are resolved to projects at RCPT time through the
 * source's `Intake`, and DATA hands the spooled message to it. One transaction may name recipients of
 * several projects: the message is ingested once per project (each with the envelope recipients of
 * that project only). SMTP has one reply for DATA, so the intake's deciding failure is rendered: a
 * transient failure for any project answers 451 (projects that already committed deduplicate the
 * retry), otherwise a permanent failure answers with its 5xx code.
 *
 * Per-client limits (connections per address, session and DATA deadlines, recipients per transaction)
 * live in smtp-limits.ts; the rendering of replies in smtp-replies.ts.
 *
 * No Received trace header is prepended (RFC 5321 §4.4 asks relays to): this service is the final
 * destination, the raw bytes are kept exactly as sent so that resends deduplicate, and the trace
 * data (client, envelope, time) is stored with the message instead.
 */
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { createSecureContext } from "node:tls";
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerDataStream,
  type SMTPServerEnvelope,
  type SMTPServerOptions,
  type SMTPServerSession,
} from "smtp-server";
import { type Config, ConfigError } from "../config.ts";
import type { AppContext } from "../context.ts";
import { metrics } from "../lib/metrics.ts";
import { LARGE_MESSAGE_BYTES, MAX_RAW_BYTES } from "./ingest.ts";
import { groupByProject, Intake, type IntakeSource } from "./intake.ts";
import { INLINE_RAW_MAX_BYTES, keepsRawInline } from "./raw.ts";
import { ConnectionGuard, type SmtpLimits, smtpLimits } from "./smtp-limits.ts";
import { coalesceReplies, SmtpReplyError, smtpReplyFor, smtpReplyTo } from "./smtp-replies.ts";
import { SpoolSlot, spoolDir } from "./spool.ts";

/**
 * Where to listen; defaults to `SMTP_HOST:SMTP_PORT`. Port 0 binds an ephemeral port (tests). `intake`
 * defaults to a new one for source type `smtp`; `limits` override those of the configuration (tests).
 */
export interface SmtpListenOptions {
  host?: string;
  port?: number;
  intake?: Intake;
  limits?: Partial<SmtpLimits>;
}

/** A started listener. `close` stops accepting and waits for open sessions (up to 30 s). */
export interface RunningSmtp {
  port: number;
  close(): Promise<void>;
}

/**
 * What one listener keeps per client: the project of each accepted recipient per transaction
 * (smtp-server replaces the envelope on RSET and the next MAIL), and each connection's spool file,
 * reused from message to message (spool.ts, SpoolSlot). Keyed weakly by smtp-server's own objects.
 */
class Sessions {
  readonly #recipients = new WeakMap<SMTPServerEnvelope, Map<string, string>>();
  readonly #slots = new WeakMap<SMTPServerSession, SpoolSlot>();

  constructor(readonly spoolDir: string) {}

  recipients(session: SMTPServerSession): Map<string, string> {
    let m = this.#recipients.get(session.envelope);
    if (!m) {
      m = new Map();
      this.#recipients.set(session.envelope, m);
    }
    return m;
  }

  slot(session: SMTPServerSession): SpoolSlot {
    let slot = this.#slots.get(session);
    if (!slot) {
      slot = new SpoolSlot(this.spoolDir);
      this.#slots.set(session, slot);
    }
    return slot;
  }

  close(session: SMTPServerSession): void {
    const closing = this.#slots.get(session)?.close();
    if (!closing) return;
    const tracked = closing.catch(() => {}).finally(() => this.#closing.delete(tracked));
    this.#closing.add(tracked);
  }

  /** Resolves once every connection's spool file removal that has begun is done. */
  async settled(): Promise<void> {
    await Promise.all([...this.#closing]);
  }

  readonly #closing = new Set<Promise<void>>();
}

/**
 * The STARTTLS key pair, read and checked once at start: a missing file, a file that is not PEM or a
 * key that does not match the certificate is a ConfigError naming the variables (exit 78), not a stack
 * trace or a handshake failure at the first client.
 */
export function loadTlsPair(
  config: Pick<Config, "tlsCert" | "tlsKey">,
): { key: Buffer; cert: Buffer } | null {
  if (!config.tlsCert || !config.tlsKey) return null;
  let pair: { key: Buffer; cert: Buffer };
  try {
    pair = { key: readFileSync(config.tlsKey), cert: readFileSync(config.tlsCert) };
  } catch (err) {
    throw new ConfigError([
      `TLS_CERT/TLS_KEY: cannot read ${(err as { path?: string }).path ?? "the files"}: ${(err as Error).message}`,
    ]);
  }
  try {
    createSecureContext(pair);
  } catch (err) {
    throw new ConfigError([
      `TLS_CERT/TLS_KEY: not a usable PEM certificate and matching private key (${(err as Error).message})`,
    ]);
  }
  return pair;
}

/** Starts the listener. Rejects if the port cannot be bound. */
export async function startSmtpServer(ctx: AppContext, opts: SmtpListenOptions = {}): Promise<RunningSmtp> {
  const { config, logger } = ctx;
  const tls = loadTlsPair(config);
  const intake = opts.intake ?? new Intake(ctx, "smtp");
  const sessions = new Sessions(spoolDir(config.dataDir));
  const limits: SmtpLimits = { ...smtpLimits(config), ...opts.limits };
  const guard = new ConnectionGuard(limits, config.inboundDomain, logger);
  const options: SMTPServerOptions = {
    name: config.inboundDomain,
    banner: "mailhook",
    size: MAX_RAW_BYTES,
    rejectOversized: true,
    hideENHANCEDSTATUSCODES: false,
    maxClients: config.smtpMaxConnections,
    maxRecipients: limits.maxRecipients,
    socketTimeout: limits.idleTimeoutMs,
    authOptional: true,
    // The client hostname is only informational here; a PTR lookup per connection costs latency.
    disableReverseLookup: true,
    // Like an MX: no AUTH. Without a certificate STARTTLS is off (smtp-server would otherwise offer a
    // built-in test certificate whose private key is public).
    disabledCommands: tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(tls ?? {}),
    logger: false,
    onConnect(session: SMTPServerSession, callback: (err?: Error | null) => void) {
      // The session object is the connection's own; onConnect runs once it is in `connections`.
      const conn = [...server.connections].find((c) => c.session === session);
      if (conn && guard.admit(session, conn)) return callback();
      callback(new SmtpReplyError(421, guard.refusal()));
    },
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      intake.recipients.projectOf(address.address).then(
        (projectId) => {
          if (!projectId) {
            metrics.ingestRejected.inc({ source: "smtp", code: "smtp.unknown_recipient" });
            return callback(new SmtpReplyError(550, "Mailbox unavailable"));
          }
          sessions.recipients(session).set(address.address, projectId);
          callback();
        },
        (err) => {
          logger.warn("smtp: recipient lookup failed", { err });
          callback(new SmtpReplyError(451, "Temporary local failure, please try again later"));
        },
      );
    },
    onClose(session: SMTPServerSession) {
      guard.release(session);
      sessions.close(session);
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      receive(intake, sessions, session, stream, guard.receive(session, stream))
        .then(
          (reply) => callback(null, reply),
          (err: unknown) => {
            const reply = err instanceof SmtpReplyError ? err : smtpReplyFor(err);
            const conn = reply.enhancedCode
              ? [...server.connections].find((c) => c.session === session)
              : undefined;
            if (conn && reply.enhancedCode) withEnhancedCode(conn, reply.responseCode, reply.enhancedCode);
            callback(reply);
          },
        )
        .finally(() => guard.replied(session));
    },
  };
  const server = new SMTPServer(options);
  // Until it listens, an error is the bind failing: the caller reports that (roles.ts ListenError).
  server.on("error", (err) => {
    if (server.server.listening) logger.warn("smtp: connection error", { err });
  });
  server.server.on("connection", coalesceReplies);
  const host = opts.host ?? config.smtpHost;
  const port = opts.port ?? config.smtpPort;
  await new Promise<void>((resolve, reject) => {
    server.server.once("error", reject);
    server.listen(port, host, () => {
      server.server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.server.address() as AddressInfo).port;
  logger.info("smtp listening", { host, port: bound, starttls: Boolean(tls) });
  return {
    port: bound,
    // Closed sessions remove their spool files as they go; the listener is closed once those are gone too.
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      // smtp-server calls onClose in a setImmediate after a connection closes, which may come after the
      // listener's close callback: one more turn lets those run, so their removals are waited for too.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await sessions.settled();
    },
  };
}

/**
 * Makes the connection's next reply with `code` carry `enhanced` (e.g. `550 5.7.1` for a policy
 * refusal, where smtp-server would derive `5.1.1` from the code alone). smtp-server has no option for a
 * per-reply enhanced code, so its lookup is wrapped for that one reply, then restored.
 */
function withEnhancedCode(conn: object, code: number, enhanced: string): void {
  const c = conn as { _getEnhancedStatusCode?: (code: number, context?: unknown) => string };
  const original = c._getEnhancedStatusCode;
  if (typeof original !== "function") return;
  c._getEnhancedStatusCode = function (this: unknown, replyCode: number, context?: unknown): string {
    if (replyCode !== code) return original.call(this, replyCode, context);
    c._getEnhancedStatusCode = original;
    return enhanced;
  };
}

/**
 * The SMTP intake source: the listener on `SMTP_HOST:SMTP_PORT`, off when `SMTP_PORT=0`. A port in
 * use rejects with the listen error (EADDRINUSE, …), which its role reports (roles.ts, ListenError).
 */
export const smtpSource = {
  name: "smtp",
  async start(ctx, intake) {
    if (ctx.config.smtpPort === 0) return { stop: async () => {} };
    const smtp = await startSmtpServer(ctx, { intake });
    return { port: smtp.port, stop: () => smtp.close() };
  },
} satisfies IntakeSource;

/**
 * Spools one DATA stream, hands it to the intake for its recipients' projects, and returns the 250 text.
 * `source` is `stream` under the DATA deadline (smtp-limits.ts).
 */
async function receive(
  intake: Intake,
  sessions: Sessions,
  session: SMTPServerSession,
  stream: SMTPServerDataStream,
  source: AsyncIterable<Uint8Array>,
): Promise<string> {
  const rcpts = sessions.recipients(session);
  const slot = sessions.slot(session);
  // Throws (and removes the file) when the client goes away mid-DATA: nothing is ingested.
  const spooled = await slot.spool(source, {
    limit: MAX_RAW_BYTES,
    overflow: "drain",
    keepBytes: LARGE_MESSAGE_BYTES,
    // A message kept in its row is never read from the file: it need not be written at all.
    deferBytes: INLINE_RAW_MAX_BYTES,
  });
  try {
    // smtp-server answers 552 5.3.4 itself for an oversized message (rejectOversized).
    if (spooled.exceeded || stream.sizeExceeded) {
      metrics.ingestRejected.inc({ source: "smtp", code: "ingest.too_large" });
      return "Message rejected";
    }
    // Recipients were resolved at RCPT time (unknown ones refused there), so none is dropped here.
    const { byProject } = groupByProject(
      session.envelope.rcptTo.map((rcpt) => rcpt.address),
      (address) => rcpts.get(address),
    );
    const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
    // an IPv4-mapped IPv6 address is kept as the IPv4 address it carries
    const client = {
      ip: (session.remoteAddress ?? "").replace(/^::ffff:(?=\d+\.)/i, ""),
      helo: session.hostNameAppearsAs ?? "",
    };
    return smtpReplyTo(await intake.acceptForProjects(spooled, byProject, mailFrom, client));
  } finally {
    // A raw message kept in its row never leaves the file; a larger one may have been renamed into
    // the blob store, so the next message gets a new file.
    await slot.done(!spooled.exceeded && keepsRawInline(spooled.size));
  }
}
