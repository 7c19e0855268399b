/**
 * Opens the database: PGlite in `DATA_DIR/pg` when no `DATABASE_URL` is set (the embedded default), else
 * Postgres through postgres.js. Both are driven by the same drizzle schema and queries. Migrations are the
 * committed SQL files in `migrations/`, applied at start under an advisory lock so several processes
 * starting at once do not race.
 *
 * This is the db layer's public entry point: the rest of the service imports from here only. The work
 * lives next to it, one concern a file: datadir-lock.ts (the embedded database's directory lock),
 * pglite.ts and postgres.ts (the two openers), wait.ts (the start-up check against Postgres) and
 * migrate.ts (migrations).
 */
import { type SQL, sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { openPglite } from "./pglite.ts";
import { openPostgres } from "./postgres.ts";
import type * as schema from "./schema/index.ts";

export { DatabaseLockedError, LOCK_STALE_MS } from "./datadir-lock.ts";
export { runMigrations } from "./migrate.ts";
export { DatabaseUnavailableError, waitForPostgres } from "./wait.ts";

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

export interface Database {
  kind: "pglite" | "postgres";
  db: Db;
  /** Runs raw SQL and returns its rows (the two drivers shape results differently). */
  rows<T = Record<string, unknown>>(query: SQL): Promise<T[]>;
  /** Subscribes to a notification channel (LISTEN on Postgres, in-process on PGlite). */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  /** Sends a notification; on Postgres it reaches every process listening. */
  notify(channel: string, payload?: string): Promise<void>;
  close(): Promise<void>;
}

export interface OpenOptions {
  databaseUrl: string | null;
  dataDir: string;
  /** connections in the postgres.js pool */
  poolSize?: number;
  /** PGlite: start from a data-dir dump instead of an empty dir (tests clone a migrated template) */
  pgliteLoadDataDir?: Blob;
  /** PGlite: data directory override (tests use a temp dir); "memory" for in-memory */
  pgliteDir?: string;
  /** PGlite: how often the directory lock is refreshed (tests); default `LOCK_HEARTBEAT_MS` (datadir-lock.ts) */
  lockHeartbeatMs?: number;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.poolSize ?? 10) : openPglite(opts);
}

export { sql };
