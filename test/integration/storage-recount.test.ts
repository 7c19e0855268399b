/**
 * The one-off recount of stored bytes (migration `storage-recount_sql`): rows stored before the parsed
 * form, the webhook bodies and the attempt captures were counted get them counted, rows that already
 * counted the parsed form and the bodies keep that count and get their captures added, and each
 * project's usage becomes the sum over its messages.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedRoute, waitForEvent } from "../support/seed-events.ts";

const MIGRATIONS = join(import.meta.dir, "../../services/db/migrations");
/** Found by its name, whatever number it is given among the migrations. */
const MIGRATION = join(
  MIGRATIONS,
  readdirSync(MIGRATIONS).find((f) => f.endsWith("_storage-recount_sql.sql")) ?? "storage-recount_sql.sql",
);

for (const kind of testDbKinds()) {
  describe(`storage recount migration (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker | null = null;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await rx?.close();
      await app?.close();
    });

    interface Parts {
      stored: number;
      base: number;
      parsed: number;
      bodies: number;
      captures: number;
    }
    /** A message's stored_bytes and what is stored for it, measured as the migration measures it. */
    const parts = async (messagePk: string): Promise<Parts> => {
      const [row] = await app.ctx.database.rows<Record<keyof Parts, number>>(sql`
        select m.stored_bytes::float8 as stored,
          (m.raw_size_bytes + (select coalesce(sum(size), 0) from attachments where message_pk = m.id))::float8 as base,
          octet_length(m.parsed::text)::float8 as parsed,
          (select coalesce(sum(octet_length(body)), 0) from events where message_pk = m.id)::float8 as bodies,
          (select coalesce(sum(octet_length(t.request_capture::text) + octet_length(t.response_capture::text)), 0)
            from attempts t join events e on e.id = t.event_id where e.message_pk = m.id)::float8 as captures
        from messages m where m.id = ${messagePk}`);
      if (!row) throw new Error(`message ${messagePk} not found`);
      return {
        stored: Number(row.stored),
        base: Number(row.base),
        parsed: Number(row.parsed),
        bodies: Number(row.bodies),
        captures: Number(row.captures),
      };
    };

    const runMigration = async () => {
      const text = readFileSync(MIGRATION, "utf8");
      for (const statement of text.split("--> statement-breakpoint")) {
        await app.ctx.database.rows(sql.raw(statement));
      }
    };

    test("counts the parsed form, bodies and captures of old rows, captures of newer rows, and sums each project", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/recount` });
      const attachment = new Uint8Array(2048).fill(3);
      const posts = [
        buildMail({ subject: "old row", text: "counted before the parsed form was" }),
        buildMail({
          subject: "newer row",
          text: "counted with its parsed form",
          attachments: [{ filename: "a.bin", contentType: "application/octet-stream", content: attachment }],
        }),
      ];
      const events: string[] = [];
      for (const raw of posts) {
        const posted = await postMessage(app, route.apiKey, raw);
        expect(posted.status, posted.text).toBe(202);
        events.push(posted.body.events[0].id);
      }
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
      for (const id of events) expect((await waitForEvent(app.ctx, id, isSettled)).status).toBe("delivered");
      await worker.stop();
      worker = null;
      const [oldPk, newPk] = await Promise.all(
        events.map(async (id) => {
          const [r] = await app.ctx.database.rows<{ message_pk: string }>(
            sql`select message_pk from events where id = ${id}::uuid`,
          );
          return r?.message_pk as string;
        }),
      );
      if (!oldPk || !newPk) throw new Error("messages not found");

      // As the earlier releases stored them: the old row counted its raw size and attachments only, the
      // newer one also its parsed form and body, neither the captures; the project's usage is stale.
      const before = await parts(newPk);
      await app.ctx.database.rows(sql`
        update messages set stored_bytes = case when id = ${oldPk}
          then raw_size_bytes else stored_bytes - ${before.captures} end
        where id in (${oldPk}, ${newPk}) returning id`);
      const newerCount = before.stored - before.captures;
      await app.ctx.database.rows(
        sql`update projects set storage_bytes = 12345 where id = ${route.projectId} returning id`,
      );

      await runMigration();

      const old = await parts(oldPk);
      expect(old.parsed).toBeGreaterThan(0);
      expect(old.bodies).toBeGreaterThan(0);
      expect(old.captures).toBeGreaterThan(0);
      expect(old.stored).toBe(old.base + old.parsed + old.bodies + old.captures);
      const newer = await parts(newPk);
      expect(newer.base).toBe((posts[1]?.byteLength ?? 0) + attachment.byteLength);
      expect(newer.stored).toBe(newerCount + newer.captures);
      const [project] = await app.ctx.database.rows<{ used: number }>(
        sql`select storage_bytes::float8 as used from projects where id = ${route.projectId}`,
      );
      expect(Number(project?.used)).toBe(old.stored + newer.stored);
    });
  });
}
