/**
 * Opens the database: PGlite in `DATA_DIR/pg` when no `DATABASE_URL` is set (the embedded default), else
 * Postgres through postgres.js. Both are driven by the same drizzle schema and queries. Migrations are the
 * committed SQL files in `migrations/`, applied at start under an advisory lock so several processes
 * starting at once do not race.
 *
 * This is the db layer's public entry point: the rest of the service imports from here only. The work
 * lives next to it, one concern a file: datadir-lock.ts (the embedded database's directory lock),
 * pglite.ts and postgres.ts (the two openers), wait.ts (the start-up check against Postgres) and
 * migrate.ts (migrations); database.ts declares what an open database offers.
 */
import { sql } from "drizzle-orm";
import type { Database, OpenOptions } from "./database.ts";
import { openPglite } from "./pglite.ts";
import { openPostgres } from "./postgres.ts";

export type { Database, Db, OpenOptions } from "./database.ts";
export { DatabaseLockedError, LOCK_STALE_MS } from "./datadir-lock.ts";
export { runMigrations } from "./migrate.ts";
export { DatabaseUnavailableError, waitForPostgres } from "./wait.ts";

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.poolSize ?? 10) : openPglite(opts);
}

export { sql };
