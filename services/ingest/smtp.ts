/**
 * The SMTP listener (contract §3), built on `smtp-server`. It behaves like the MX of `INBOUND_DOMAIN`:
 * no AUTH, mail accepted only for known project inbound addresses, and "250" to DATA only once the
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
 * One transaction may name recipients of several projects: the message is ingested once per project
 * (each with the envelope recipients of that project only). SMTP has one reply for DATA, so a
 * transient failure for any project answers 451 (projects that already committed deduplicate the
 * retry), otherwise a permanent failure for any project answers with its 5xx code.
 *
 * No Received trace header is prepended (RFC 5321 §4.4 asks relays to): this service is the final
 * destination, the raw bytes are kept exactly as sent so that resends deduplicate, and the trace
 * data (client, envelope, time) is stored with the message instead.
 */
import { readFileSync } from "node:fs";
import type { AddressInfo, Socket } from "node:net";
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
import { AppError } from "../lib/errors.ts";
import type { Envelope } from "../lib/message.ts";
import { metrics } from "../lib/metrics.ts";
import { projectByInboundAddress } from "../resources/projects.ts";
import { type IngestResult, ingestMessage, LARGE_MESSAGE_BYTES, MAX_RAW_BYTES } from "./ingest.ts";
import { keepsRawInline } from "./raw.ts";
import { SpoolSlot, spoolDir } from "./spool.ts";

/** Where to listen; defaults to `SMTP_HOST:SMTP_PORT`. Port 0 binds an ephemeral port (tests). */
export interface SmtpListenOptions {
  host?: string;
  port?: number;
}

/** A started listener. `close` stops accepting and waits for open sessions (up to 30 s). */
export interface RunningSmtp {
  port: number;
  close(): Promise<void>;
}

/** An error smtp-server turns into a reply line: `<responseCode> <enhanced code> <message>`. */
export class SmtpReplyError extends Error {
  constructor(
    readonly responseCode: number,
    message: string,
  ) {
    super(message);
    this.name = "SmtpReplyError";
  }
}

/** The SMTP reply for an ingest failure; anything unexpected is transient (451). */
export function smtpReplyFor(err: unknown): SmtpReplyError {
  if (err instanceof AppError) {
    switch (err.code) {
      case "ingest.too_large":
        return new SmtpReplyError(552, "Message exceeds the maximum message size");
      case "ingest.quota_exceeded":
        return new SmtpReplyError(552, "Mailbox storage quota exceeded");
      case "ingest.unparseable":
        return new SmtpReplyError(554, "Message cannot be parsed");
      case "projects.not_found":
        return new SmtpReplyError(550, "Mailbox unavailable");
    }
  }
  return new SmtpReplyError(451, "Temporary local failure, please try again later");
}

/** Project id per accepted recipient, per transaction (smtp-server replaces the envelope on RSET/next MAIL). */
const recipients = new WeakMap<SMTPServerEnvelope, Map<string, string>>();

function recipientMap(session: SMTPServerSession): Map<string, string> {
  let m = recipients.get(session.envelope);
  if (!m) {
    m = new Map();
    recipients.set(session.envelope, m);
  }
  return m;
}

/** Each connection's spool file, reused from message to message (spool.ts, SpoolSlot). */
const slots = new WeakMap<SMTPServerSession, SpoolSlot>();

function slotOf(session: SMTPServerSession, dir: string): SpoolSlot {
  let slot = slots.get(session);
  if (!slot) {
    slot = new SpoolSlot(dir);
    slots.set(session, slot);
  }
  return slot;
}

/** Recently resolved recipients: address → project id, for {@link RECIPIENT_CACHE_MS}. */
const RECIPIENT_CACHE_MS = 10_000;
const RECIPIENT_CACHE_MAX = 10_000;
const recipientCache = new WeakMap<AppContext, Map<string, { projectId: string; until: number }>>();

/**
 * The project of an inbound address, cached briefly: a steady stream to one address costs one lookup
 * per 10 s instead of one per message. Only hits are cached, so a new project is reachable at once; a
 * deleted one may still pass RCPT for 10 s and is then refused at DATA (550).
 */
async function resolveRecipient(ctx: AppContext, address: string): Promise<string | null> {
  let cache = recipientCache.get(ctx);
  if (!cache) {
    cache = new Map();
    recipientCache.set(ctx, cache);
  }
  const key = address.toLowerCase();
  const now = Date.now();
  const hit = cache.get(key);
  if (hit && hit.until > now) return hit.projectId;
  const project = await projectByInboundAddress(ctx, address);
  if (!project) return null;
  if (cache.size >= RECIPIENT_CACHE_MAX) cache.clear();
  cache.set(key, { projectId: project.id, until: now + RECIPIENT_CACHE_MS });
  return project.id;
}

/**
 * Coalesces the replies to one batch of pipelined commands (RFC 2920) into one socket write.
 * smtp-server writes every reply line separately, so `MAIL`/`RCPT`/`DATA` sent together cost three
 * sends — three TCP segments and three wake-ups of the client. The socket is corked when a read
 * arrives and uncorked three event-loop turns later (smtp-server resumes its command reader and its
 * `setImmediate`, and the cached recipient lookup answers in a microtask), so the replies to one
 * batch leave together. A reply that takes longer (a recipient lookup that goes to the database, the
 * ingest behind DATA) is simply written on its own once the socket is uncorked; no reply is held for
 * more than those three turns (measured: two are not always enough, three coalesce every batch).
 */
export function coalesceReplies(socket: Socket, turns = 3): void {
  // Before smtp-server's own reader (registered first), which may answer synchronously.
  socket.prependListener("data", () => {
    if (socket.writableCorked > 0 || socket.destroyed) return;
    socket.cork();
    let seen = 0;
    const tick = (): void => {
      if (++seen >= turns) socket.uncork();
      else setImmediate(tick);
    };
    setImmediate(tick);
  });
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
  const dir = spoolDir(config.dataDir);
  const options: SMTPServerOptions = {
    name: config.inboundDomain,
    banner: "mailhook",
    size: MAX_RAW_BYTES,
    rejectOversized: true,
    hideENHANCEDSTATUSCODES: false,
    maxClients: config.smtpMaxConnections,
    authOptional: true,
    // The client hostname is only informational here; a PTR lookup per connection costs latency.
    disableReverseLookup: true,
    // Like an MX: no AUTH. Without a certificate STARTTLS is off (smtp-server would otherwise offer a
    // built-in test certificate whose private key is public).
    disabledCommands: tls ? ["AUTH"] : ["AUTH", "STARTTLS"],
    ...(tls ?? {}),
    logger: false,
    onRcptTo(address: SMTPServerAddress, session: SMTPServerSession, callback: (err?: Error | null) => void) {
      resolveRecipient(ctx, address.address).then(
        (projectId) => {
          if (!projectId) {
            metrics.ingestRejected.inc({ source: "smtp", code: "smtp.unknown_recipient" });
            return callback(new SmtpReplyError(550, "Mailbox unavailable"));
          }
          recipientMap(session).set(address.address, projectId);
          callback();
        },
        (err) => {
          logger.warn("smtp: recipient lookup failed", { err });
          callback(new SmtpReplyError(451, "Temporary local failure, please try again later"));
        },
      );
    },
    onClose(session: SMTPServerSession) {
      void slots.get(session)?.close();
    },
    onData(stream: SMTPServerDataStream, session: SMTPServerSession, callback) {
      receive(ctx, dir, stream, session).then(
        (reply) => callback(null, reply),
        (err: unknown) => callback(err instanceof SmtpReplyError ? err : smtpReplyFor(err)),
      );
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
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Spools one DATA stream, ingests it once per project, and returns the 250 text. */
async function receive(
  ctx: AppContext,
  dir: string,
  stream: SMTPServerDataStream,
  session: SMTPServerSession,
): Promise<string> {
  const rcpts = recipientMap(session);
  const slot = slotOf(session, dir);
  // Throws (and removes the file) when the client goes away mid-DATA: nothing is ingested.
  const spooled = await slot.spool(stream, {
    limit: MAX_RAW_BYTES,
    overflow: "drain",
    keepBytes: LARGE_MESSAGE_BYTES,
  });
  try {
    // smtp-server answers 552 5.3.4 itself for an oversized message (rejectOversized).
    if (spooled.exceeded || stream.sizeExceeded) {
      metrics.ingestRejected.inc({ source: "smtp", code: "ingest.too_large" });
      return "Message rejected";
    }
    const byProject = new Map<string, string[]>();
    for (const rcpt of session.envelope.rcptTo) {
      const projectId = rcpts.get(rcpt.address);
      if (projectId === undefined) continue;
      byProject.set(projectId, [...(byProject.get(projectId) ?? []), rcpt.address]);
    }
    const mailFrom = session.envelope.mailFrom ? session.envelope.mailFrom.address : "";
    const accepted: IngestResult[] = [];
    const failures: unknown[] = [];
    for (const [projectId, rcptTo] of byProject) {
      const envelope: Envelope = { mail_from: mailFrom, rcpt_to: rcptTo };
      try {
        accepted.push(
          await ingestMessage(ctx, {
            projectId,
            // A large spool file (bytes not kept) adopted by the first project would be gone for the next.
            raw:
              byProject.size > 1 && spooled.bytes === undefined
                ? { path: spooled.path, size: spooled.size }
                : spooled,
            sourceType: "smtp",
            envelope,
          }),
        );
      } catch (err) {
        failures.push(err);
      }
    }
    if (failures.length > 0) {
      const replies = failures.map(smtpReplyFor);
      throw replies.find((r) => r.responseCode < 500) ?? replies[0];
    }
    return `Ok: accepted as ${accepted.map((r) => r.messagePk).join(", ")}`;
  } finally {
    // A raw message kept in its row never leaves the file; a larger one may have been renamed into
    // the blob store, so the next message gets a new file.
    await slot.done(!spooled.exceeded && keepsRawInline(spooled.size));
  }
}
