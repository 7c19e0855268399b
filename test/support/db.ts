/**
 * A fresh database per test file (graphile-worker's habit): on Postgres a database cloned from a
 * template migrated once per test process; on PGlite a temp data dir loaded from a dump of a migrated
 * instance. Names carry the run's start time and process id, so concurrent runs sharing one Postgres
 * never touch each other's databases. At the end of the run (run-end.ts) the run drops its template and
 * any of its per-file databases a test left behind; databases of crashed runs older than 6 hours are
 * dropped when the next run makes its template.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import postgres from "postgres";
import { type Database, openDatabase, runMigrations } from "../../services/db/client.ts";
import { atEndOfRun } from "./run-end.ts";

export type DbKind = "pglite" | "postgres";

export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
const RUN = `${Math.floor(Date.now() / 1000)}_${process.pid}`;
const TEMPLATE = `mh_tpl_${RUN}`;
let counter = 0;

/** Which databases the suite runs against (`MAILHOOK_TEST_DBS=pglite,postgres` by default). */
export function testDbKinds(): DbKind[] {
  const raw = process.env.MAILHOOK_TEST_DBS ?? "pglite,postgres";
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s): s is DbKind => s === "pglite" || s === "postgres");
}

function withDb(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

let templateReady: Promise<void> | null = null;
function ensurePgTemplate(): Promise<void> {
  templateReady ??= (async () => {
    const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
    try {
      const old = await admin<
        { datname: string }[]
      >`select datname from pg_database where datname ~ '^mh_(tpl|t)_[0-9]+_'`;
      const cutoff = Date.now() / 1000 - 6 * 3600;
      for (const { datname } of old) {
        const started = Number(datname.split("_")[2]);
        if (started < cutoff)
          await admin.unsafe(`drop database if exists "${datname}" with (force)`).catch(() => {});
      }
      await admin.unsafe(`create database "${TEMPLATE}"`);
    } finally {
      await admin.end();
    }
    atEndOfRun("dropping this run's Postgres databases", dropRunDatabases);
    const url = withDb(PG_ADMIN_URL, TEMPLATE);
    const d = await openDatabase({ databaseUrl: url, dataDir: tmpdir(), poolSize: 1 });
    await runMigrations(d, url);
    await d.close();
  })();
  return templateReady;
}

/**
 * Drops this run's template and per-file databases. Only names with this run's prefix are touched: the
 * template is never cloned by another run, and by the end of the run no file of this one is cloning it.
 */
async function dropRunDatabases(): Promise<void> {
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  try {
    const ours = await admin<{ datname: string }[]>`select datname from pg_database`;
    const names = ours.map((r) => r.datname).filter((n) => n.startsWith(`mh_t_${RUN}_`));
    for (const name of [...names, TEMPLATE])
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
  } finally {
    await admin.end();
  }
}

let pgliteDump: Promise<Blob> | null = null;
function ensurePgliteDump(): Promise<Blob> {
  pgliteDump ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "mh-pglite-tpl-"));
    const d = await openDatabase({ databaseUrl: null, dataDir: dir, pgliteDir: dir });
    await runMigrations(d, null);
    await d.close();
    const reopened = await PGlite.create({ dataDir: dir });
    const dump = await reopened.dumpDataDir("none");
    await reopened.close();
    rmSync(dir, { recursive: true, force: true });
    return dump;
  })();
  return pgliteDump;
}

export interface TestDatabase {
  kind: DbKind;
  database: Database;
  /** set for Postgres: the URL of this test's own database */
  url: string | null;
  dataDir: string;
  drop(): Promise<void>;
}

/** A migrated, empty database of the given kind, owned by the caller. */
export async function createTestDatabase(
  kind: DbKind,
  opts: { poolSize?: number } = {},
): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), "mh-test-"));
  if (kind === "postgres") {
    await ensurePgTemplate();
    const name = `mh_t_${RUN}_${++counter}`;
    const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database "${name}" template "${TEMPLATE}"`);
    await admin.end();
    const url = withDb(PG_ADMIN_URL, name);
    const database = await openDatabase({ databaseUrl: url, dataDir, poolSize: opts.poolSize ?? 10 });
    return {
      kind,
      database,
      url,
      dataDir,
      async drop() {
        await database.close().catch(() => {});
        const a = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
        await a.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
        await a.end();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  }
  const dump = await ensurePgliteDump();
  const pgDir = join(dataDir, "pg");
  const database = await openDatabase({
    databaseUrl: null,
    dataDir,
    pgliteDir: pgDir,
    pgliteLoadDataDir: dump,
  });
  return {
    kind,
    database,
    url: null,
    dataDir,
    async drop() {
      await database.close().catch(() => {});
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
