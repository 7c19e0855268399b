/**
 * SIGTERM path of the worker: `stop()` stops claiming, lets in-flight attempts finish and be recorded,
 * and leaves no lease behind, so another worker takes the rest at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`worker shutdown (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver({ behaviour: { delayMs: 300 } });
    }, 60_000);
    afterAll(async () => {
      await rx.close();
      await app.close();
    });

    test("stop() waits for in-flight attempts, claims nothing more and leaves no lease", async () => {
      const route = await seedRoute(app, { url: rx.url });
      const ids = await seedEvents(app.ctx, route, { count: 5, quiet: true });
      const worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
      await rx.waitForRequests(2);
      await worker.stop();
      const rows = await app.ctx.database.rows<{
        status: string;
        attempts: number;
        lease_owner: string | null;
      }>(sql`select status, attempts, lease_owner from events order by created_at, id`);
      expect(rows.filter((r) => r.status === "delivered" && r.attempts === 1)).toHaveLength(2);
      expect(rows.filter((r) => r.status === "pending" && r.attempts === 0)).toHaveLength(3);
      expect(rows.every((r) => r.lease_owner === null)).toBe(true);
      expect(rx.requests).toHaveLength(2);

      const next = await startWorker(app.ctx, { concurrency: 4, pollMs: 50 });
      try {
        for (const id of ids) expect((await waitForEvent(app.ctx, id, isSettled)).status).toBe("delivered");
        expect(rx.requests).toHaveLength(5);
      } finally {
        await next.stop();
      }
    });
  });
}
