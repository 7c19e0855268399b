/**
 * What one SMTP client may hold of the listener (docs/ingest.md, "Limits"), so that no client can keep
 * every connection slot busy by trickling bytes:
 *
 * - **Connections per client address** (`SMTP_MAX_CONNECTIONS_PER_IP`): counted from the session's
 *   start to its close; one more is refused with `421 4.7.0` and closed. An IPv4-mapped IPv6 address
 *   (`::ffff:a.b.c.d`, as a dual-stack socket reports IPv4 peers) counts as its IPv4 address.
 * - **Idle timeout** (smtp-server's `socketTimeout`): 60 s without a byte while the client owes us input.
 *   Every byte resets it, so it alone does not stop a trickle; the two deadlines below do.
 * - **Session deadline** (`SMTP_SESSION_TIMEOUT_S`): how long a connection may stay open. When it passes
 *   the client gets `421 4.4.2` and the connection is closed — at once between commands; a DATA transfer
 *   in progress is not cut by it (it has its own deadline), the connection is closed right after that
 *   message's reply. A message received in full is always processed and answered first.
 * - **DATA deadline**: `dataGraceMs` after `354`, plus one second for every `dataMinBytesPerSecond` bytes
 *   received — a minimum average rate once the grace is used up. A transfer that falls behind gets
 *   `421 4.4.2`, the connection is closed and nothing of the message is stored (RFC 5321 §4.5.3.2: the
 *   client keeps the message and retries). Defaults: 60 s and 32 KiB/s (~256 kbit/s), so a 50 MiB message
 *   at 1 Mbit/s (~7 min) passes with a wide margin, while one byte per 20 s is cut after a minute.
 *
 * RCPT per transaction (`SMTP_MAX_RECIPIENTS`) is enforced by smtp-server's `maxRecipients`, which
 * answers `452 4.5.3` (RFC 5321 §4.5.3.1.10: the client sends the rest in another transaction).
 *
 * Invariant: every admitted session is released exactly once (smtp-server calls `onClose` once per
 * connection), and its timers die with it.
 */
import { isIPv6 } from "node:net";
import type { SMTPServerSession } from "smtp-server";
import type { Config } from "../config.ts";
import type { Logger } from "../lib/logger.ts";
import { metrics } from "../lib/metrics.ts";

/** The limits of one listener. */
export interface SmtpLimits {
  /** concurrent connections per client address ({@link clientKey}) */
  maxConnectionsPerIp: number;
  /** RCPT per transaction */
  maxRecipients: number;
  /** idle time allowed while the client owes us input */
  idleTimeoutMs: number;
  /** time a connection may stay open (a DATA in progress finishes first) */
  sessionTimeoutMs: number;
  /** time a DATA transfer gets before the minimum rate applies */
  dataGraceMs: number;
  /** each this many bytes received extend the DATA deadline by one second */
  dataMinBytesPerSecond: number;
}

/** Idle timeout default: smtp-server's own (a byte resets it, so the deadlines do the real work). */
export const IDLE_TIMEOUT_MS = 60_000;
/** DATA grace default: as long as the idle timeout, so a client that stalls at once is cut by either. */
export const DATA_GRACE_MS = 60_000;
/** DATA minimum rate default: 32 KiB/s (~256 kbit/s), a quarter of the 1 Mbit/s a slow large sender is allowed. */
export const DATA_MIN_BYTES_PER_SECOND = 32 * 1024;

/** The limits from the configuration (defaults above; README.md#configuration). */
export function smtpLimits(
  config: Pick<
    Config,
    | "smtpMaxConnectionsPerIp"
    | "smtpMaxRecipients"
    | "smtpSessionTimeoutS"
    | "smtpIdleTimeoutS"
    | "smtpDataTimeoutS"
    | "smtpDataMinBytesPerS"
  >,
): SmtpLimits {
  return {
    maxConnectionsPerIp: config.smtpMaxConnectionsPerIp,
    maxRecipients: config.smtpMaxRecipients,
    idleTimeoutMs: config.smtpIdleTimeoutS * 1000,
    sessionTimeoutMs: config.smtpSessionTimeoutS * 1000,
    dataGraceMs: config.smtpDataTimeoutS * 1000,
    dataMinBytesPerSecond: config.smtpDataMinBytesPerS,
  };
}

/**
 * The address a connection counts against: IPv4 as is, IPv6 in its canonical form (RFC 5952, zone
 * dropped), and an IPv4-mapped IPv6 address (`::ffff:a.b.c.d` in any spelling) as its IPv4 address.
 */
export function clientKey(address: string): string {
  const bare = address.trim().toLowerCase().replace(/%.*$/, "");
  if (!isIPv6(bare)) return bare;
  // The WHATWG URL parser canonicalises an IPv6 literal, embedded IPv4 included (as two hex groups).
  const host = new URL(`http://[${bare}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (!mapped?.[1] || !mapped[2]) return host;
  const hi = Number.parseInt(mapped[1], 16);
  const lo = Number.parseInt(mapped[2], 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
}

/** What the guard needs of smtp-server's connection: writing a reply line, and closing. */
export interface GuardedConnection {
  send(code: number, data: string, context: false): void;
  close(): void;
}

/** One admitted session. */
interface Client {
  key: string;
  conn: GuardedConnection;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** between the DATA stream's start and its reply */
  inData: boolean;
  /** the session deadline passed during DATA: close after its reply */
  expired: boolean;
  /** answered 421 and closed by a deadline */
  cut: boolean;
}

/** Cut a slow DATA transfer: the error the DATA stream is destroyed with. */
export class DataTimeoutError extends Error {
  override name = "DataTimeoutError";
}

/**
 * Enforces {@link SmtpLimits} for one listener: counts connections per client address, and runs each
 * session's deadline and each DATA transfer's deadline. Keyed by smtp-server's session object, which
 * stays the same for the whole connection.
 */
export class ConnectionGuard {
  readonly #perAddress = new Map<string, number>();
  readonly #clients = new Map<SMTPServerSession, Client>();

  constructor(
    readonly limits: SmtpLimits,
    private readonly name: string,
    private readonly logger: Logger,
  ) {}

  /** Connections currently counted for a client address (any spelling). */
  connectionsOf(address: string): number {
    return this.#perAddress.get(clientKey(address)) ?? 0;
  }

  /**
   * Counts a new session against its address and starts its deadline. `false`: the address already
   * has its maximum; the caller refuses the session (`refusal()`), which is then not counted.
   */
  admit(session: SMTPServerSession, conn: GuardedConnection): boolean {
    const key = clientKey(session.remoteAddress);
    const held = this.#perAddress.get(key) ?? 0;
    if (held >= this.limits.maxConnectionsPerIp) {
      metrics.ingestRejected.inc({ source: "smtp", code: "smtp.too_many_connections" });
      this.logger.info("smtp: too many connections from one address", { client: key, held });
      return false;
    }
    this.#perAddress.set(key, held + 1);
    const client: Client = { key, conn, timer: undefined, inData: false, expired: false, cut: false };
    client.timer = setTimeout(() => this.#sessionExpired(client), this.limits.sessionTimeoutMs);
    client.timer.unref();
    this.#clients.set(session, client);
    return true;
  }

  /** The reply text refusing a session over the per-address limit (to be sent with 421). */
  refusal(): string {
    return `4.7.0 ${this.name} Too many connections from your address, try again later`;
  }

  /** The connection closed: uncounts it (a session never admitted is ignored). */
  release(session: SMTPServerSession): void {
    const client = this.#clients.get(session);
    if (!client) return;
    this.#clients.delete(session);
    clearTimeout(client.timer);
    const held = (this.#perAddress.get(client.key) ?? 1) - 1;
    if (held > 0) this.#perAddress.set(client.key, held);
    else this.#perAddress.delete(client.key);
  }

  /**
   * The DATA stream as it arrives, under the DATA deadline. When the client falls behind it is answered
   * `421 4.4.2`, the connection is closed and the iteration throws {@link DataTimeoutError}. Once the
   * terminating dot has arrived (`writableEnded`: smtp-server has ended the stream) nothing is cut, even
   * if we are still reading what is buffered.
   */
  async *receive(
    session: SMTPServerSession,
    stream: AsyncIterable<Uint8Array> & { destroy(err?: Error): void; readonly writableEnded?: boolean },
  ): AsyncGenerator<Uint8Array> {
    const client = this.#clients.get(session);
    if (!client) return yield* stream;
    client.inData = true;
    const { dataGraceMs, dataMinBytesPerSecond } = this.limits;
    const started = Date.now();
    let received = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const check = (): void => {
      const deadline = started + dataGraceMs + (received / dataMinBytesPerSecond) * 1000;
      const left = deadline - Date.now();
      if (stream.writableEnded) return;
      if (left > 0) {
        timer = setTimeout(check, left);
        timer.unref();
        return;
      }
      this.#cut(client, "data");
      stream.destroy(new DataTimeoutError("DATA transfer too slow"));
    };
    check();
    try {
      for await (const chunk of stream) {
        received += chunk.byteLength;
        yield chunk;
      }
    } finally {
      clearTimeout(timer);
    }
  }

  /** The reply to a DATA has been given: a session whose deadline passed meanwhile is closed now. */
  replied(session: SMTPServerSession): void {
    const client = this.#clients.get(session);
    if (!client) return;
    client.inData = false;
    if (client.expired) this.#cut(client, "session");
  }

  #sessionExpired(client: Client): void {
    if (client.inData) client.expired = true;
    else this.#cut(client, "session");
  }

  #cut(client: Client, why: "session" | "data"): void {
    if (client.cut) return;
    client.cut = true;
    metrics.ingestRejected.inc({ source: "smtp", code: "smtp.timeout" });
    this.logger.info("smtp: deadline passed, closing the connection", { client: client.key, deadline: why });
    const text = why === "data" ? "DATA transfer too slow" : "Session time limit reached";
    client.conn.send(421, `4.4.2 ${this.name} Error: timeout exceeded (${text}), closing connection`, false);
    client.conn.close();
  }
}
