/**
 * Storage accounting (docs/ingest.md, "Storage quota"): a project's `storage_bytes` and each
 * message's `stored_bytes` count every byte stored for it — the raw message, its attachments, its parsed
 * form (`messages.parsed`), each event's webhook body once delivery stores it and each attempt's captures. A replay clears and
 * rebuilds the body (usage unchanged overall), retention gives everything back, and a body never fails
 * delivery for lack of quota: it may take usage over the quota, and the next message is refused.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { sweepRetention } from "../../services/attachments/retention.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedRoute, waitForEvent } from "../support/seed-events.ts";

const DAY = 24 * 3600 * 1000;
const QUOTA = 1_000_000;

for (const kind of testDbKinds()) {
  describe(`storage accounting (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker | null = null;

    beforeAll(async () => {
      app = await createTestApp(kind, { env: { PROJECT_QUOTA_BYTES: String(QUOTA), RETENTION_DAYS: "30" } });
      rx = await startReceiver();
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await rx?.close();
      await app?.close();
    });

    /** The project's usage, and what its messages' rows say they hold, byte by byte. */
    const usage = async (projectId: string) => {
      const [row] = await app.ctx.database.rows<{
        used: number;
        counted: number;
        actual: number;
        bodies: number;
        captures: number;
      }>(sql`
        select p.storage_bytes::float8 as used,
          (select coalesce(sum(stored_bytes), 0) from messages where project_id = p.id)::float8 as counted,
          (select coalesce(sum(m.raw_size_bytes
            + (select coalesce(sum(a.size), 0) from attachments a where a.message_pk = m.id)), 0)
            from messages m where m.project_id = p.id)::float8 as actual,
          (select coalesce(sum(octet_length(body)), 0) from events where project_id = p.id)::float8 as bodies,
          (select coalesce(sum(octet_length(a.request_capture::text) + octet_length(a.response_capture::text)), 0)
            from attempts a join events e on e.id = a.event_id where e.project_id = p.id)::float8 as captures
        from projects p where p.id = ${projectId}`);
      const parsed = await app.ctx.database.rows<{ parsed: unknown }>(
        sql`select parsed from messages where project_id = ${projectId}`,
      );
      // The parsed form counts as the UTF-8 length of its JSON text (key order does not change it).
      const parsedBytes = parsed.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r.parsed)), 0);
      return {
        used: Number(row?.used),
        counted: Number(row?.counted),
        stored: Number(row?.actual) + parsedBytes + Number(row?.bodies) + Number(row?.captures),
        bodies: Number(row?.bodies),
        captures: Number(row?.captures),
        parsedBytes,
      };
    };

    test("usage counts raw + attachments + parsed at ingest, grows by each body and each attempt's captures on delivery, by only the new captures on a replay, and returns to zero after retention", async () => {
      const first = await seedRoute(app, { url: `${rx.url}/generic` });
      const project = { id: first.projectId, apiKey: first.apiKey };
      const mapped = await seedRoute(app, {
        url: `${rx.url}/mapped`,
        project,
        pipeline: {
          steps: [
            { name: "map.custom_json", args: { version: "v1", output: { s: { var: "message.subject" } } } },
          ],
        },
      });
      const attachment = new Uint8Array(4096).fill(7);
      const raw = buildMail({
        subject: "accounting",
        text: "é".repeat(300),
        attachments: [{ filename: "a.bin", contentType: "application/octet-stream", content: attachment }],
      });
      const posted = await postMessage(app, project.apiKey, raw);
      expect(posted.status, posted.text).toBe(202);

      const ingested = await usage(project.id);
      expect(ingested.bodies).toBe(0);
      expect(ingested.captures).toBe(0);
      expect(ingested.parsedBytes).toBeGreaterThan(600);
      expect(ingested.used).toBe(raw.byteLength + attachment.byteLength + ingested.parsedBytes);
      expect(ingested.counted).toBe(ingested.used);

      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
      const ids: string[] = posted.body.events.map((e: { id: string }) => e.id);
      expect(ids).toHaveLength(2);
      for (const id of ids) expect((await waitForEvent(app.ctx, id, isSettled)).status).toBe("delivered");
      const sent = await rx.waitForRequests(2);
      const sentBytes = sent.reduce((n, r) => n + Buffer.byteLength(r.text), 0);

      const delivered = await usage(project.id);
      expect(delivered.bodies).toBe(sentBytes);
      // two attempts' captures: each carries the request's headers and the body's preview
      expect(delivered.captures).toBeGreaterThan(sentBytes);
      expect(delivered.used).toBe(ingested.used + sentBytes + delivered.captures);
      expect(delivered.used).toBe(delivered.stored);
      expect(delivered.counted).toBe(delivered.used);

      const mappedEvent = posted.body.events.find((e: { route_id: string }) => e.route_id === mapped.routeId);
      const replay = await app.request("POST", `/v1/events/${mappedEvent.id}/replay`, {
        apiKey: project.apiKey,
      });
      expect(replay.status, replay.text).toBe(202);
      await waitForEvent(app.ctx, mappedEvent.id, (e) => isSettled(e) && e.attempts === 2 && e.body !== null);
      const replayed = await usage(project.id);
      // the body was cleared and rebuilt; the replay's attempt adds its captures
      expect(replayed.bodies).toBe(delivered.bodies);
      expect(replayed.captures).toBeGreaterThan(delivered.captures);
      expect(replayed.used).toBe(delivered.used + replayed.captures - delivered.captures);
      expect(replayed.used).toBe(replayed.stored);
      expect(replayed.counted).toBe(replayed.used);

      const swept = await sweepRetention(app.ctx, { now: new Date(Date.now() + 31 * DAY) });
      expect(swept.messagesDeleted).toBeGreaterThanOrEqual(1);
      expect((await usage(project.id)).used).toBe(0);
    });

    test("a body that takes usage over the quota is still delivered, and the next message is refused 507", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/full` });
      await worker?.stop();
      worker = null;
      const posted = await postMessage(app, route.apiKey, buildMail({ text: "near the quota" }));
      expect(posted.status, posted.text).toBe(202);
      // The project is a few bytes short of its quota when the body is stored.
      await app.ctx.database.rows(
        sql`update projects set storage_bytes = ${QUOTA - 10} where id = ${route.projectId} returning id`,
      );
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
      const event = await waitForEvent(app.ctx, posted.body.events[0].id, isSettled);
      expect(event.status).toBe("delivered");
      const over = await eventually(
        "usage to include the body",
        async () => (await usage(route.projectId)).used,
        10_000,
        { until: (n) => n > QUOTA },
      );
      const captures = (await usage(route.projectId)).captures;
      expect(captures).toBeGreaterThan(0);
      expect(over).toBe(QUOTA - 10 + Buffer.byteLength(event.body ?? "") + captures);
      const refused = await postMessage(app, route.apiKey, buildMail({ text: "one more" }));
      expect(refused.status, refused.text).toBe(507);
      expect(refused.body.error.code).toBe("ingest.quota_exceeded");
    });
  });
}
