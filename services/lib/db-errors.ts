/**
 * Which database errors mean "not now" rather than "wrong". Two callers ask, with different needs, so
 * there are two named sets built from one shared base:
 * - at start-up, `waitForPostgres` (db/wait.ts) retries on {@link STARTUP_TRANSIENT_CODES} until
 *   `DATABASE_WAIT_S` runs out, and fails at once on anything else (docs/operations.md);
 * - while running, the API's error handler (api/errors.ts) asks {@link isDatabaseUnavailable} whether a
 *   query error is a 503 `service.unavailable` with `Retry-After` rather than a 500.
 *
 * Invariant: adding a code to {@link UNAVAILABLE_BASE} changes both callers; a code that only one of
 * them should hear goes into that caller's set.
 */

/**
 * The server is not taking connections right now, wherever we are: refused or reset at the TCP level,
 * the connect timed out or the connection dropped (postgres.js's own codes), the server is starting up
 * or shutting down (57P03 cannot_connect_now), or it has no connection slot left (53300
 * too_many_connections: others may disconnect). SQLSTATEs: PostgreSQL docs, "Appendix A. PostgreSQL
 * Error Codes".
 */
const UNAVAILABLE_BASE = [
  "53300", // too_many_connections
  "57P03", // cannot_connect_now
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECT_TIMEOUT",
  "ECONNREFUSED",
  "ECONNRESET",
] as const;

/**
 * Worth waiting for at start-up: the base, plus a host that does not resolve or cannot be routed to
 * yet (ENOTFOUND, EAI_AGAIN, EHOSTUNREACH, ETIMEDOUT). A process started together with its database (a
 * compose file, a reboot) sees those while the database's container or network is still coming up.
 * Only the probe's own error code is looked at (no `cause` chain, no SQLSTATE class). Not here, so
 * failing at once: the codes of a session cut while in use (57P01/57P02, CONNECTION_DESTROYED), which
 * the probe's fresh connection is not, and SQLSTATE class 08 (a connection exception the
 * server itself reports, such as a protocol violation), which retrying the same URL does not fix.
 */
export const STARTUP_TRANSIENT_CODES: ReadonlySet<string> = new Set<string>([
  ...UNAVAILABLE_BASE,
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ETIMEDOUT",
]);

/**
 * Retryable while running: the base, plus a session the server or the pool ends while it is in use
 * (57P01 admin_shutdown, 57P02 crash_shutdown, postgres.js CONNECTION_DESTROYED); {@link
 * isDatabaseUnavailable} also counts the whole SQLSTATE class 08 (connection exception). Name
 * resolution and routing errors are not here: the host resolved at start-up, and one that stops
 * resolving later is answered as an internal error (500), not a retry.
 */
const RUNTIME_TRANSIENT_CODES: ReadonlySet<string> = new Set<string>([
  ...UNAVAILABLE_BASE,
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "CONNECTION_DESTROYED",
]);

/**
 * Recognises "the database is unreachable or refusing connections right now" — a transient condition
 * that callers should retry (503 / SMTP 451), not an internal error (500). postgres.js reports it as a
 * SQLSTATE of class 08 (connection exception), 53300 (too many connections) or 57P0x (shutdown), or
 * with its own CONNECTION_* / network errno codes; drizzle wraps the driver's error as `cause`.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && typeof e === "object" && depth < 5; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (RUNTIME_TRANSIENT_CODES.has(code) || code.startsWith("08"))) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
