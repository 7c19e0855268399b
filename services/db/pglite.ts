/**
 * The embedded database: PGlite in a directory (by default `DATA_DIR/pg`), or in memory for tests.
 * drizzle drives it with the same schema and queries as Postgres; what differs is wrapped behind
 * {@link Database}: result shapes (`rows`) and notifications. PGlite has no other processes to notify
 * (its directory is open in one process only), so `listen`/`notify` are an in-process EventEmitter,
 * emitting on a microtask so that a listener never runs inside the `notify` call.
 *
 * Invariants: a directory is opened only under its lock (datadir-lock.ts), held until `close` and
 * released if opening fails; "memory" takes no lock and creates no directory; a directory's files are
 * private to the service's user (pglite-fs.ts).
 */
import { EventEmitter } from "node:events";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import type { SQL } from "drizzle-orm";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { PRIVATE_DIR_MODE } from "../lib/private-files.ts";
import type { Database, Db, OpenOptions } from "./database.ts";
import { lockDataDir } from "./datadir-lock.ts";
import { PrivateNodeFS } from "./pglite-fs.ts";
import * as schema from "./schema/index.ts";

export async function openPglite(opts: OpenOptions): Promise<Database> {
  const dir = opts.pgliteDir ?? join(opts.dataDir, "pg");
  if (dir !== "memory") mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const release = dir === "memory" ? () => {} : await lockDataDir(dir, opts.lockHeartbeatMs);
  let client: PGlite;
  try {
    client = await PGlite.create({
      ...(dir === "memory" ? {} : { fs: new PrivateNodeFS(dir) }),
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
