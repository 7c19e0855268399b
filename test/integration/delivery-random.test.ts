/**
 * The retry delay's jitter comes from the context's injected random source (`ctx.random`), so a test
 * that fixes it gets an exact next attempt time.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`retry jitter (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;

    beforeAll(async () => {
      // random() = 0 is the lowest jitter: the scheduled delay less 10%.
      app = await createTestApp(kind, { random: () => 0, env: { RETRY_SCHEDULE: "0,1m" } });
      rx = await startReceiver();
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    test("a fixed ctx.random fixes the delay before the next attempt", async () => {
      rx.setBehaviour({ status: 503 });
      const route = await seedRoute(app, { url: rx.url });
      const [id] = await seedEvents(app.ctx, route);
      const waiting = await waitForEvent(
        app.ctx,
        id as string,
        (e) => e.attempts === 2 && e.status === "retry",
      );
      expect(waiting.nextAttemptAt!.getTime() - waiting.updatedAt.getTime()).toBe(54_000);
    });
  });
}
