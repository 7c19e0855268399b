/**
 * Recognises "the database is unreachable or refusing connections right now" — a transient condition
 * that callers should retry (503 / SMTP 451), not an internal error (500). postgres.js reports it as a
 * SQLSTATE of class 08 (connection exception), 53300 (too many connections) or 57P0x (shutdown), or
 * with its own CONNECTION_* / network errno codes; drizzle wraps the driver's error as `cause`.
 */
const TRANSIENT_CODES = new Set([
  "53300", // too_many_connections
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
]);

export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (TRANSIENT_CODES.has(code) || code.startsWith("08"))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
