/**
 * Four worker PROCESSES (`bun services/main.ts worker`) share one Postgres database and 2,000 due
 * events. The receiver decides each event's fate from its idempotency key, so the exact number of
 * attempts every event needs is known: each must be attempted exactly that often, and never twice at
 * the same time (receiver timestamps per key), with the attempt log matching.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { createTestApp, TEST_SETUP_TOKEN, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts";
import { type SeededRoute, seedEvents, seedRoute } from "../support/seed-events.ts";

const EVENTS = 2000;
const PROCESSES = 4;
const ROOT = join(import.meta.dir, "..", "..");

/** Plan by index: 70% succeed at once, 15% fail once (503), 10% are refused (400), 5% always fail (500). */
function plan(i: number): { statuses: number[]; final: "delivered" | "dead" } {
  const slot = i % 20;
  if (slot < 14) return { statuses: [200], final: "delivered" };
  if (slot < 17) return { statuses: [503, 200], final: "delivered" };
  if (slot < 19) return { statuses: [400], final: "dead" };
  return { statuses: [500, 500, 500, 500, 500, 500], final: "dead" };
}

const run = testDbKinds().includes("postgres") ? describe : describe.skip;

run("4 worker processes on Postgres", () => {
  let app: TestApp;
  let rx: Receiver;
  let route: SeededRoute;
  const procs: ReturnType<typeof Bun.spawn>[] = [];
  const planByKey = new Map<string, ReturnType<typeof plan>>();
  const seenByKey = new Map<string, ReceivedRequest[]>();

  beforeAll(async () => {
    app = await createTestApp("postgres", { env: { RETRY_SCHEDULE: "0,10ms,10ms,10ms,10ms" } });
    rx = await startReceiver({
      behaviour: (req) => {
        const key = req.headers["x-idempotency-key"] ?? "";
        const seen = seenByKey.get(key) ?? [];
        seen.push(req);
        seenByKey.set(key, seen);
        const p = planByKey.get(key);
        // Past the plan (an extra attempt) answer 200 so the test sees the surplus instead of a loop.
        return { status: p?.statuses[seen.length - 1] ?? 200, delayMs: 2 };
      },
    });
    route = await seedRoute(app, { url: `${rx.url}/hook` });
  }, 60_000);

  /** Started only once every event's plan is known, so no request can arrive before its plan. */
  function startWorkers(): void {
    for (let i = 0; i < PROCESSES; i++) {
      procs.push(
        Bun.spawn(["bun", "services/main.ts", "worker"], {
          cwd: ROOT,
          env: {
            ...process.env,
            DATABASE_URL: app.testDb.url as string,
            DATA_DIR: app.testDb.dataDir, // shares the secrets key that sealed the route's secret
            SETUP_TOKEN: TEST_SETUP_TOKEN,
            ALLOW_PRIVATE_ENDPOINTS: "true",
            RETRY_SCHEDULE: "0,10ms,10ms,10ms,10ms",
            WORKER_CONCURRENCY: "16",
            // The plan ends with only always-failing events left, which would rightly open the
            // endpoint's circuit for a minute; this test counts attempts, the circuit has its own.
            ENDPOINT_FAILURE_THRESHOLD: "100000",
            LOG_LEVEL: "warn",
          },
          stdout: "inherit",
          stderr: "inherit",
        }),
      );
    }
  }

  afterAll(async () => {
    for (const p of procs) p.kill("SIGKILL");
    await rx?.close();
    await app?.close();
  });

  test("every event is attempted exactly as often as its outcome requires, never concurrently", async () => {
    const started = Date.now();
    const ids = await seedEvents(app.ctx, route, { count: EVENTS, quiet: true });
    const keys = await app.ctx.database.rows<{ id: string; idempotency_key: string }>(
      sql`select id, idempotency_key from events`,
    );
    const indexOf = new Map(ids.map((id, i) => [id, i]));
    for (const k of keys) planByKey.set(k.idempotency_key, plan(indexOf.get(k.id) as number));
    startWorkers(); // each claims the due events as it starts

    await eventually(
      `all ${EVENTS} events to settle (the answer is how many have)`,
      async () => {
        const [c] = await app.ctx.database.rows<{ n: number }>(
          sql`select count(*)::int as n from events where status in ('delivered', 'dead')`,
        );
        return c?.n;
      },
      50_000,
      { until: (n) => n === EVENTS, everyMs: 50 },
    );
    const elapsed = Date.now() - started;

    // SIGTERM: each worker finishes in-flight work and exits cleanly.
    for (const p of procs) p.kill("SIGTERM");
    const codes = await Promise.all(procs.map((p) => p.exited));
    expect(codes).toEqual(Array(PROCESSES).fill(0));

    const expectedRequests = [...planByKey.values()].reduce((n, p) => n + p.statuses.length, 0);

    const problems: string[] = [];
    for (const [key, p] of planByKey) {
      const seen = (seenByKey.get(key) ?? []).sort((a, b) => a.receivedAt - b.receivedAt);
      if (seen.length !== p.statuses.length)
        problems.push(`${key}: ${seen.length} requests, expected ${p.statuses.length}`);
      for (let i = 1; i < seen.length; i++) {
        const prev = seen[i - 1] as ReceivedRequest;
        const cur = seen[i] as ReceivedRequest;
        if (prev.closedAt === undefined || cur.receivedAt < prev.closedAt)
          problems.push(`${key}: attempt ${i + 1} arrived while attempt ${i} was still open`);
      }
    }
    expect(problems.slice(0, 10)).toEqual([]);

    const rows = await app.ctx.database.rows<{
      idempotency_key: string;
      status: string;
      attempts: number;
      n: number;
      max: number;
      lease_owner: string | null;
    }>(sql`
      select e.idempotency_key, e.status, e.attempts, e.lease_owner,
        count(a.id)::int as n, coalesce(max(a.number), 0)::int as max
      from events e left join attempts a on a.event_id = e.id
      group by e.id`);
    const mismatched = rows.filter((r) => {
      const p = planByKey.get(r.idempotency_key);
      const want = p?.statuses.length;
      return (
        r.status !== p?.final ||
        r.attempts !== want ||
        r.n !== want ||
        r.max !== want ||
        r.lease_owner !== null
      );
    });
    expect(mismatched.slice(0, 5)).toEqual([]);
    expect(rx.requests.length).toBe(expectedRequests);
    console.log(`4 processes settled ${EVENTS} events (${expectedRequests} attempts) in ${elapsed} ms`);
  }, 90_000);
});
