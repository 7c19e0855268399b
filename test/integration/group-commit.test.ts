/**
 * Group commit of the intake's store statements (services/ingest/group-commit.ts), on both databases:
 * concurrent messages share transactions, each still gets its own outcome, and one failing statement
 * never fails the others of its batch.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import {
  GroupCommitter,
  type PgliteClient,
  type PostgresJsClient,
  pgliteRunner,
  postgresRunner,
} from "../../services/ingest/group-commit.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { addRoute, countRows, postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";

for (const kind of testDbKinds())
  describe(`group commit (${kind})`, () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await createTestApp(kind);
    }, 60_000);
    afterAll(() => app?.close());
    /** A committer of its own on the app's database, as the intake's is built. */
    const ownCommitter = () => {
      const client = (app.ctx.database.db as unknown as { $client: unknown }).$client;
      return new GroupCommitter(
        kind === "postgres"
          ? postgresRunner(client as PostgresJsClient, 7)
          : pgliteRunner(client as PgliteClient, 7),
      );
    };

    test("concurrent messages are committed in shared transactions, each with its own events", async () => {
      const p = await app.newProject();
      const route = await addRoute(app, p.apiKey);
      const committer = app.ctx.ingest.commits;
      const before = { ...committer.stats };
      const mails = Array.from({ length: 40 }, (_, i) => buildMail({ subject: `batch ${i}` }));
      const results = await Promise.all(mails.map((m) => postMessage(app, p.apiKey, m)));
      for (const r of results) {
        expect(r.status, r.text).toBe(202);
        expect(r.body.duplicate).toBe(false);
        expect(r.body.events.map((e: { route_id: string }) => e.route_id)).toEqual([route]);
      }
      expect(new Set(results.map((r) => r.body.events[0].id)).size).toBe(40);
      expect(await countRows(app, "messages", p.id)).toBe(40);
      expect(await countRows(app, "events", p.id)).toBe(40);
      const statements = committer.stats.statements - before.statements;
      const batches = committer.stats.batches - before.batches;
      expect(statements).toBe(40);
      // Forty at once over at most two batches in flight (one on PGlite): some held several messages.
      expect(batches).toBeLessThan(statements);
      // The quota counter saw every message once.
      const [q] = await app.ctx.database.rows<{ used: number; stored: number }>(
        sql`select p.storage_bytes::float8 as used,
            (select sum(stored_bytes)::float8 from messages where project_id = p.id) as stored
          from projects p where p.id = ${p.id}`,
      );
      expect(Number(q?.used)).toBe(Number(q?.stored));
    });

    test("a statement that fails does not fail the others of its batch; nothing of it is stored", async () => {
      const committer = ownCommitter();
      const table = `gc_probe_${Date.now()}`;
      await app.ctx.database.rows(sql.raw(`create table ${table} (n int primary key)`));
      const insert = (n: number) =>
        committer.run<{ n: number }>({
          text: `insert into ${table} (n) values ($1::int) returning n`,
          params: [n],
          projectId: `p${n % 3}`,
          blobLocks: [n],
        });
      // The first goes out alone; the rest queue behind it and form batches, one of them with a
      // duplicate key that fails.
      const outcomes = await Promise.allSettled([1, 2, 3, 4, 5, 6, 4, 7, 8].map(insert));
      const ok = outcomes.filter((o) => o.status === "fulfilled").map((o) => (o as any).value[0].n);
      expect(ok.sort()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(outcomes.filter((o) => o.status === "rejected")).toHaveLength(1);
      const rows = await app.ctx.database.rows<{ n: number }>(sql.raw(`select n from ${table} order by n`));
      expect(rows.map((r) => Number(r.n))).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(committer.stats.retried).toBeGreaterThan(0);
      await app.ctx.database.rows(sql.raw(`drop table ${table}`));
    });

    test.skipIf(kind !== "postgres")(
      "no transaction is left open on a connection after a failed batch",
      async () => {
        const client = postgres(app.testDb.url as string, { max: 1, onnotice: () => {} });
        try {
          const committer = new GroupCommitter(postgresRunner(client as unknown as PostgresJsClient, 7));
          const outcomes = await Promise.allSettled(
            ["select 1 as n", "select 1/0 as n", "select 3 as n"].map((text) =>
              committer.run({ text, params: [], projectId: "p", blobLocks: [] }),
            ),
          );
          expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
          // Were a transaction still open on the connection, this table would not be visible elsewhere.
          const table = `gc_open_${Date.now()}`;
          await client.unsafe(`create table ${table} (n int)`);
          const [seen] = await app.ctx.database.rows<{ t: string | null }>(
            sql`select to_regclass(${table})::text as t`,
          );
          expect(seen?.t).toBe(table);
          await client.unsafe(`drop table ${table}`);
        } finally {
          await client.end();
        }
      },
    );
  });
