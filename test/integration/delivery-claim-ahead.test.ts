/**
 * Events a worker claims ahead of its free slots wait for one with their lease running. One that has
 * waited past half its lease gives it back unsent instead of starting a request that could outlast the
 * lease, after which another worker could claim the event and send it a second time: every event is
 * sent once, here with a lease of 2 s, one slot, a first request that takes 1.5 s and a second worker
 * polling for expired leases.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`events claimed ahead of a free slot (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    const workers: RunningWorker[] = [];

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
    }, 60_000);
    afterAll(async () => {
      for (const w of workers) await w.stop();
      await rx?.close();
      await app?.close();
    });

    test("an event that waited past half its lease is given back and sent once, by whichever worker claims it again", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/ahead` });
      const ids = await seedEvents(app.ctx, route, { count: 2, quiet: true });
      // the first request takes 1.5 s; the second 1 s: sent under the first claim's lease, it would
      // end after that lease (2 s) and the other worker would have sent it again meanwhile
      rx.enqueue({ status: 200, delayMs: 1500 }, { status: 200, delayMs: 1000 });
      // one slot and room for one event more: the first claim takes both events
      workers.push(await startWorker(app.ctx, { concurrency: 1, pollMs: 50, leaseMs: 2000 }));
      await rx.waitForRequests(1);
      workers.push(await startWorker(app.ctx, { concurrency: 1, pollMs: 50, leaseMs: 2000 }));
      for (const id of ids)
        expect((await waitForEvent(app.ctx, id, isSettled, 20_000)).status).toBe("delivered");
      // settled: any second request would have come by now (each takes at most 1.5 s)
      await Bun.sleep(2000);
      const keys = rx.requests.map((r) => r.headers["x-idempotency-key"]);
      expect(keys.length).toBe(2);
      expect(new Set(keys).size).toBe(2);
    }, 60_000);
  });
}
