/**
 * Webhook bodies kept in the blob store (over 1 MiB, delivery/body-store.ts) when the store and the
 * rows disagree:
 * - the blob disappears between two attempts (deleted by hand, a store restored from an older backup):
 *   the next attempt builds the body again from the message, as a replay would, sends it, records the
 *   new blob, and the usage counts the body once. It used to fail before anything was recorded, on
 *   every attempt, forever;
 * - the message is erased while the attempt that stored the body is out: the record keeps no body for
 *   an erased message, and the blob the attempt put is deleted with nothing left referencing it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { blobKeyFor } from "../../services/attachments/blob-store.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { postLargeMessage } from "../support/ingest.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { eventStorage, isSettled, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`a stored webhook body missing from the blob store (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker | null = null;

    beforeAll(async () => {
      // the second attempt comes 2 s after the first: time to take the blob away in between
      app = await createTestApp(kind, { env: { RETRY_SCHEDULE: "0,2s,2s,2s,2s" } });
      rx = await startReceiver();
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await rx?.close();
      await app?.close();
    });

    test("the next attempt builds the body again, sends the same bytes and counts them once", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/large` });
      const { eventId } = await postLargeMessage(app, route.apiKey, "large");
      const state = () => eventStorage(app.ctx, eventId);

      rx.enqueue({ status: 500 });
      worker = await startWorker(app.ctx, { concurrency: 1, pollMs: 50 });
      const [first] = await rx.waitForRequests(1);
      if (!first) throw new Error("no first attempt");
      const afterFirst = await eventually("the first attempt to be recorded", state, 10_000, {
        until: (s) => s.attempts === 1,
      });
      await worker.stop();
      worker = null;
      if (!afterFirst.key) throw new Error("the webhook body was not kept in the blob store");
      expect(Number(afterFirst.size)).toBe(first.body.byteLength);
      await app.ctx.blobs.delete(afterFirst.key);
      expect(await app.ctx.blobs.stat(afterFirst.key)).toBeNull();

      worker = await startWorker(app.ctx, { concurrency: 1, pollMs: 50 });
      const event = await waitForEvent(app.ctx, eventId, isSettled, 30_000);
      expect(event.status, JSON.stringify(event)).toBe("delivered");
      const [, second] = await rx.waitForRequests(2);
      if (!second) throw new Error("no second attempt");
      // built again from the same message and route: the same bytes
      expect(Buffer.compare(Buffer.from(first.body), Buffer.from(second.body))).toBe(0);
      const after = await state();
      expect(after.attempts).toBe(2);
      if (!after.key) throw new Error("the rebuilt body was not kept in the blob store");
      expect(await new Response(await app.ctx.blobs.read(after.key)).text()).toBe(second.text);
      // forgotten, then recorded again: the body is counted once, as after the first attempt, plus the
      // second attempt's captures
      expect(Number(after.size)).toBe(Number(afterFirst.size));
      expect(Number(after.stored)).toBeGreaterThan(Number(afterFirst.stored));
      expect(Number(after.stored) - Number(afterFirst.stored)).toBeLessThan(Number(afterFirst.size));
      expect(Number(after.used)).toBe(Number(after.stored));
    }, 60_000);

    test("a message erased while the attempt that stored its body is out leaves no blob behind", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/erased` });
      rx.clear();
      const { eventId, messageId } = await postLargeMessage(app, route.apiKey, "erased");
      // The receiver holds the request while the message is erased.
      rx.enqueue({ status: 200, delayMs: 1500 });
      worker = await startWorker(app.ctx, { concurrency: 1, pollMs: 50 });
      const [req] = await rx.waitForRequests(1);
      if (!req) throw new Error("no attempt");
      const key = blobKeyFor(new Bun.CryptoHasher("sha256").update(req.body).digest("hex"));
      // the attempt stored the body before sending it
      expect(await app.ctx.blobs.stat(key)).not.toBeNull();
      const erased = await app.request("DELETE", `/v1/messages/${encodeURIComponent(messageId)}`, {
        apiKey: route.apiKey,
      });
      expect(erased.status, JSON.stringify(erased.body)).toBe(204);
      await eventually(
        "the attempt to be recorded",
        async () => {
          const [row] = await app.ctx.database.rows<{ attempts: number; key: string | null }>(
            sql`select attempts, body_blob_key as key from events where id = ${eventId}::uuid`,
          );
          return row;
        },
        10_000,
        { until: (row) => row?.attempts === 1 },
      );
      await eventually(
        "the blob to be deleted",
        async () => (await app.ctx.blobs.stat(key)) === null,
        10_000,
      );
      await worker.stop();
      worker = null;
    }, 60_000);
  });
}
