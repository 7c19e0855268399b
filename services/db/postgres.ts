/**
 * Postgres through postgres.js: a pool of `poolSize` connections handed to drizzle through
 * {@link preparing}, which makes every parameterised statement a prepared one. LISTEN/NOTIFY are
 * Postgres's own, so a notification reaches every process connected to the same database.
 *
 * Invariants: connections are replaced after {@link CONNECTION_LIFETIME_S}, which bounds each
 * connection's cache of prepared statements; server notices are dropped.
 */
import type { SQL } from "drizzle-orm";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import postgres from "postgres";
import type { Database, Db } from "./database.ts";
import * as schema from "./schema/index.ts";

/**
 * postgres.js, as drizzle drives it, with parameterised statements prepared.
 *
 * Why: drizzle sends every query through `unsafe(text, params, {prepare: false})` unless the query was
 * given a name, which overrides the pool's `prepare: true`. postgres.js then describes an unprepared
 * query with parameters before running it (Parse/Describe/Flush, wait for the ParameterDescription, then
 * Bind/Execute): two round trips, no pipelining on that connection in between, and a fresh parse and
 * plan in Postgres each time. Prepared, a repeated statement is one round trip, planned once per
 * connection.
 *
 * What it measured: in a CPU profile of the delivery bench, handling ParameterDescription messages took
 * ~8%, and every delivery attempt's writes paid the extra round trip. With this wrapper the delivery
 * bench (3,000 events, Postgres, two shared cores) went from 873–1,021 to 1,215–1,343 events/s; on the
 * intake side it is part of the "prepared statements everywhere" row in docs/ingest.md.
 *
 * Why a Proxy: drizzle's postgres.js driver has no setting for this, and it calls `unsafe` on the
 * client it was given and on the transaction and savepoint clients that `begin`/`savepoint` pass to
 * their callbacks, which are other objects. So the wrapper rewrites `unsafe` (prepared when it has
 * parameters or a caller asked for it; statements without parameters keep the simple protocol) and
 * wraps the client handed to `begin`/`savepoint` callbacks the same way, recursively; everything else
 * (`listen`, `notify`, `end`, the tagged template) passes through untouched.
 *
 * Cost: each connection caches its prepared statements, one per distinct text; statements with variable
 * text (IN lists of varying length) would grow that cache without bound, so connections are recycled
 * after {@link CONNECTION_LIFETIME_S}.
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

export async function openPostgres(url: string, poolSize: number): Promise<Database> {
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
