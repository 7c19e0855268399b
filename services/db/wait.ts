/**
 * The start-up check against Postgres: one connection and `select 1` before anything else runs, so a
 * process started together with its database waits for it, and a wrong DATABASE_URL ends in one clear
 * line (exit 69, docs/operations.md) instead of a stack trace from the first query.
 *
 * Invariants: no message from here contains the password (URLs go through {@link redactedUrl}, and an
 * unparsable URL is never quoted); every probe connection is closed before the next try or the return;
 * only the codes in `STARTUP_TRANSIENT_CODES` (lib/db-errors.ts) are waited on, anything else fails at
 * once.
 */
import postgres from "postgres";
import { UNPARSABLE_URL } from "../config.ts";
import { STARTUP_TRANSIENT_CODES } from "../lib/db-errors.ts";

/** Postgres could not be used at start-up: unreachable for too long, or it refused us for good. */
export class DatabaseUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DatabaseUnavailableError";
  }
}

/** `postgres://user@host:port/db` without the password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = "";
    return u.toString();
  } catch {
    return "(an unparsable DATABASE_URL)";
  }
}

/**
 * Connects once before anything else, so a process started together with its Postgres (a compose file,
 * a reboot) waits for it instead of crashing, and a wrong DATABASE_URL is one clear line instead of a
 * stack trace. Waits up to `waitMs` while the server is unreachable or starting (`onWait` hears each
 * retry); a refusal that waiting cannot fix (a missing database, bad credentials) fails at once.
 */
export async function waitForPostgres(
  url: string,
  waitMs: number,
  onWait: (attempt: number, reason: string) => void = () => {},
): Promise<void> {
  const started = Date.now();
  const where = redactedUrl(url);
  for (let attempt = 1; ; attempt++) {
    let client: ReturnType<typeof postgres>;
    try {
      client = postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} });
    } catch {
      // postgres.js cannot parse it; its error quotes the whole URL, password included.
      throw new DatabaseUnavailableError(UNPARSABLE_URL);
    }
    try {
      await client`select 1`;
      return;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      const reason = e.message ?? String(err);
      if (e.code === "3D000") {
        throw new DatabaseUnavailableError(
          `the database in DATABASE_URL (${where}) does not exist: create it (createdb) or fix DATABASE_URL`,
        );
      }
      if (!STARTUP_TRANSIENT_CODES.has(e.code ?? "")) {
        throw new DatabaseUnavailableError(`Postgres at ${where} refused the connection: ${reason}`);
      }
      if (Date.now() - started >= waitMs) {
        const waited = waitMs > 0 ? ` (waited ${Math.round(waitMs / 1000)} s, DATABASE_WAIT_S)` : "";
        throw new DatabaseUnavailableError(`cannot reach Postgres at ${where}${waited}: ${reason}`);
      }
      onWait(attempt, reason);
      await Bun.sleep(Math.min(2000, 250 * attempt, Math.max(0, waitMs - (Date.now() - started))));
    } finally {
      await client.end({ timeout: 1 }).catch(() => {});
    }
  }
}
