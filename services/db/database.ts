/**
 * What an open database offers the rest of the service, whichever engine is behind it: the drizzle
 * handle over the schema, raw rows, notifications and closing. The two openers (pglite.ts,
 * postgres.ts) build it; client.ts is where callers get it from.
 */
import type { SQL } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import type * as schema from "./schema/index.ts";

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
