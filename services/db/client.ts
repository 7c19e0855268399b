/**
 * Opens the database: PGlite in `DATA_DIR/pg` when no `DATABASE_URL` is set (the embedded default), else
 * Postgres through postgres.js. Both are driven by the same drizzle schema and queries. Migrations are the
 * committed SQL files in `migrations/`, applied at start under an advisory lock so several processes
 * starting at once do not race.
 */
import { EventEmitter } from "node:events";
import { linkSync, mkdirSync, readFileSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { type SQL, sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite, type PgliteDatabase } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { UNPARSABLE_URL } from "../config.ts";
import * as schema from "./schema/index.ts";

export const MIGRATIONS_DIR = join(import.meta.dir, "migrations");
const MIGRATION_LOCK = 7_428_511;

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
  /** PGlite: how often the directory lock is refreshed (tests); default {@link LOCK_HEARTBEAT_MS} */
  lockHeartbeatMs?: number;
}

export async function openDatabase(opts: OpenOptions): Promise<Database> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.poolSize ?? 10) : openPglite(opts);
}

/** The embedded database's directory is open in another live process (see {@link lockDataDir}). */
export class DatabaseLockedError extends Error {
  readonly code = "database.locked";
  constructor(
    readonly dir: string,
    readonly holder: string,
    readonly lockPath: string,
  ) {
    super(
      `the embedded database in ${dir} is in use by ${holder}: stop that process first ` +
        `(or set DATABASE_URL to share a Postgres database); if no mailhook runs there, remove ${lockPath}`,
    );
    this.name = "DatabaseLockedError";
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** How often the holder refreshes its lock file's mtime, and after how long without it the lock is dead. */
export const LOCK_HEARTBEAT_MS = 5_000;
export const LOCK_STALE_MS = 30_000;

interface LockHolder {
  pid: number;
  /** `os.hostname()` of the holder: in a container, the container's own name */
  host: string | null;
  ageMs: number;
}

function readHolder(lockPath: string): LockHolder | null {
  try {
    const [pid = "", host] = readFileSync(lockPath, "utf8").trim().split(" ");
    return {
      pid: Number.parseInt(pid, 10),
      host: host ?? null,
      ageMs: Date.now() - statSync(lockPath).mtimeMs,
    };
  } catch {
    return null; // released in between
  }
}

/** "process 12" on this host, "process 12 on web-2" on another. */
function describeHolder(holder: LockHolder, me: string): string {
  return `process ${holder.pid}${holder.host && holder.host !== me ? ` on ${holder.host}` : ""}`;
}

/**
 * Whether a lock file still belongs to a running process. On this host (same hostname), by its PID: a
 * dead PID is stale, and so is this process's own PID (a restarted container often gets the old one's
 * PID, and one process does not open a directory twice). Written by another host (another container
 * sharing the volume), the PID says nothing here, so by the heartbeat: a holder refreshes the file every
 * {@link LOCK_HEARTBEAT_MS}, and one silent for {@link LOCK_STALE_MS} is gone. An old lock with no host
 * (written before the host was recorded) counts as this host's.
 */
function isLive(holder: LockHolder, me: string): boolean {
  if (holder.host !== null && holder.host !== me) return holder.ageMs < LOCK_STALE_MS;
  if (!(holder.pid > 0) || holder.pid === process.pid) return false;
  return isAlive(holder.pid);
}

/**
 * PGlite takes no lock of its own: a second process opening the same directory reads a stale copy and
 * its writes and checkpoints corrupt the first one's (measured: the second saw none of the first's
 * rows). `DIR.lock` holds `<pid> <hostname>` of the process that has it open. It appears complete and
 * exclusively (a temp file hard-linked into place), is refreshed every {@link LOCK_HEARTBEAT_MS}, and is
 * taken over only when {@link isLive} says its holder is gone. Taking over a stale lock races with
 * another process doing the same, so the winner re-reads the file after a pause before going on.
 * Returns the release function.
 */
async function lockDataDir(dir: string, heartbeatMs = LOCK_HEARTBEAT_MS): Promise<() => void> {
  const lockPath = `${dir}.lock`;
  const me = hostname();
  const mine = `${process.pid} ${me}`;
  const temp = `${lockPath}.${process.pid}.${Date.now()}`;
  writeFileSync(temp, mine, { mode: 0o600 });
  try {
    let tookOver = false;
    for (let attempt = 1; attempt <= 3; attempt++) {
      try {
        linkSync(temp, lockPath);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        const holder = readHolder(lockPath);
        if (holder === null) continue; // released in between: try again
        if (isLive(holder, me)) throw new DatabaseLockedError(dir, describeHolder(holder, me), lockPath);
        try {
          unlinkSync(lockPath); // stale: its holder is gone
          tookOver = true;
        } catch {
          // another process took it over first; the next round decides
        }
        continue;
      }
      if (tookOver) {
        // Two processes taking over the same stale lock can both get here: the later link wins. Both
        // wait long enough for the other's unlink-and-link to have happened, then check.
        await Bun.sleep(100);
        if (readFileSync(lockPath, "utf8") !== mine) {
          const holder = readHolder(lockPath);
          throw new DatabaseLockedError(
            dir,
            holder ? describeHolder(holder, me) : "another process",
            lockPath,
          );
        }
      }
      const beat = setInterval(() => {
        try {
          const now = new Date();
          utimesSync(lockPath, now, now);
        } catch {
          // removed by hand: nothing to refresh
        }
      }, heartbeatMs);
      beat.unref();
      return () => {
        clearInterval(beat);
        try {
          if (readFileSync(lockPath, "utf8") === mine) unlinkSync(lockPath);
        } catch {
          // already gone
        }
      };
    }
    throw new DatabaseLockedError(
      dir,
      "another process (the lock could not be taken in three tries)",
      lockPath,
    );
  } finally {
    try {
      unlinkSync(temp);
    } catch {
      // not created
    }
  }
}

async function openPglite(opts: OpenOptions): Promise<Database> {
  const dir = opts.pgliteDir ?? join(opts.dataDir, "pg");
  if (dir !== "memory") mkdirSync(dir, { recursive: true });
  const release = dir === "memory" ? () => {} : await lockDataDir(dir, opts.lockHeartbeatMs);
  let client: PGlite;
  try {
    client = await PGlite.create({
      ...(dir === "memory" ? {} : { dataDir: dir }),
      ...(opts.pgliteLoadDataDir ? { loadDataDir: opts.pgliteLoadDataDir } : {}),
    });
  } catch (err) {
    release();
    throw err;
  }
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  const bus = new EventEmitter();
  bus.setMaxListeners(0);
  return {
    kind: "pglite",
    db,
    async rows<T>(query: SQL) {
      const r = (await db.execute(query)) as unknown as { rows: T[] };
      return r.rows;
    },
    async listen(channel, onNotify) {
      bus.on(channel, onNotify);
      return async () => {
        bus.off(channel, onNotify);
      };
    },
    async notify(channel, payload = "") {
      queueMicrotask(() => bus.emit(channel, payload));
    },
    async close() {
      bus.removeAllListeners();
      try {
        await client.close();
      } finally {
        release();
      }
    },
  };
}

/**
 * postgres.js, as drizzle drives it, with parameterised statements prepared.
 *
 * drizzle sends every query through `unsafe(text, params, {prepare: false})` unless the query was given a
 * name. postgres.js then describes an unprepared query with parameters before running it
 * (Parse/Describe/Flush, wait for the ParameterDescription, then Bind/Execute): two round trips, no
 * pipelining on that connection in between, and a fresh parse and plan in Postgres each time. Prepared,
 * a repeated statement is one round trip, planned once per connection. This wrapper prepares every
 * `unsafe` call that has parameters (transactions and savepoints included); statements without
 * parameters keep the simple protocol. Each connection caches its prepared statements; connections are
 * recycled after {@link CONNECTION_LIFETIME_S}, which bounds the caches of statements with
 * variable text (IN lists of varying length).
 */
function preparing<T extends object>(client: T): T {
  return new Proxy(client, {
    get(target, prop) {
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== "function") return value;
      if (prop === "unsafe") {
        return (query: string, params?: unknown[], opts?: { prepare?: boolean }) =>
          value.call(target, query, params ?? [], {
            ...opts,
            prepare: opts?.prepare === true || (Array.isArray(params) && params.length > 0),
          });
      }
      if (prop === "begin" || prop === "savepoint") {
        return (...args: unknown[]) => {
          const last = args.length - 1;
          const fn = args[last] as (tx: object) => unknown;
          args[last] = (tx: object) => fn(preparing(tx));
          return value.apply(target, args);
        };
      }
      return value;
    },
  });
}

/** Postgres connections are replaced after this long (seconds): see {@link preparing}. */
export const CONNECTION_LIFETIME_S = 30 * 60;

async function openPostgres(url: string, poolSize: number): Promise<Database> {
  const client = postgres(url, {
    max: poolSize,
    onnotice: () => {},
    prepare: true,
    max_lifetime: CONNECTION_LIFETIME_S,
  });
  const db = drizzlePostgres(preparing(client), { schema }) as unknown as Db;
  return {
    kind: "postgres",
    db,
    async rows<T>(query: SQL) {
      return (await db.execute(query)) as unknown as T[];
    },
    async listen(channel, onNotify) {
      const sub = await client.listen(channel, onNotify);
      return async () => {
        await sub.unlisten();
      };
    },
    async notify(channel, payload = "") {
      await client.notify(channel, payload);
    },
    async close() {
      await client.end({ timeout: 5 });
    },
  };
}

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

/** Errors of a server that is not up yet (or not reachable yet): worth waiting for. */
const TRANSIENT = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ETIMEDOUT",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "57P03", // cannot_connect_now: the server is starting up or shutting down
  "53300", // too_many_connections: others may disconnect
]);

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
      if (!TRANSIENT.has(e.code ?? "")) {
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

/** Applies the committed migrations (idempotent). */
export async function runMigrations(database: Database, databaseUrl: string | null): Promise<void> {
  if (database.kind === "pglite") {
    await migratePglite(database.db as unknown as PgliteDatabase<typeof schema>, {
      migrationsFolder: MIGRATIONS_DIR,
    });
    return;
  }
  // One dedicated connection holds the session-level advisory lock for the whole migration.
  const client = postgres(databaseUrl as string, { max: 1, onnotice: () => {} });
  try {
    await client`select pg_advisory_lock(${MIGRATION_LOCK})`;
    await migratePostgres(drizzlePostgres(client), { migrationsFolder: MIGRATIONS_DIR });
    await client`select pg_advisory_unlock(${MIGRATION_LOCK})`;
  } finally {
    await client.end({ timeout: 5 });
  }
}

export { sql };
