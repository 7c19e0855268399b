/**
 * The delivery lease length comes from `WORKER_LEASE_MS` (services/config.ts): a worker leases what it
 * claims for that long, so the events of a worker killed outright are taken over after that time rather
 * than after the 2-minute default (the crash suite, tools/chaos/crash.ts, runs workers with short leases).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

describe("delivery lease length (postgres)", () => {
  let app: TestApp;
  let rx: Receiver;
  let worker: RunningWorker | undefined;

  beforeAll(async () => {
    app = await createTestApp("postgres", { env: { WORKER_LEASE_MS: "3000" } });
    rx = await startReceiver({ behaviour: { delayMs: 600 } });
  });
  afterAll(async () => {
    await worker?.stop();
    await rx.close();
    await app.close();
  });

  test("a worker leases claimed events for WORKER_LEASE_MS, and a dead owner's lease is taken over after it", async () => {
    const route = await seedRoute(app, { url: `${rx.url}/hook` });
    // An event claimed by a worker that died: its lease runs out in 1 s.
    const [orphan] = await seedEvents(app.ctx, route, { quiet: true });
    await app.ctx.database.rows(sql`update events set lease_owner = 'dead-worker',
      lease_expires_at = now() + interval '1 second' where id = ${orphan}::uuid`);
    const [fresh] = await seedEvents(app.ctx, route, { quiet: true });
    worker = await startWorker(app.ctx, { pollMs: 100 });

    // While the slow receiver holds the fresh event's attempt, its lease ends ~3 s after the claim.
    await rx.waitForRequests(1, 5000);
    const [lease] = await app.ctx.database.rows<{ owner: string | null; left_ms: number }>(sql`
      select lease_owner as owner,
        extract(epoch from (lease_expires_at - now())) * 1000 as left_ms
      from events where id = ${fresh}::uuid`);
    expect(lease?.owner).toBe(worker.owner);
    expect(Number(lease?.left_ms)).toBeGreaterThan(1000);
    expect(Number(lease?.left_ms)).toBeLessThanOrEqual(3000);

    expect((await waitForEvent(app.ctx, fresh as string, isSettled)).status).toBe("delivered");
    const taken = await waitForEvent(app.ctx, orphan as string, isSettled, 10_000);
    expect(taken.status).toBe("delivered");
    expect(taken.leaseOwner).toBeNull();
  });
});
