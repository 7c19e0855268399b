/**
 * Delivery operations end to end on PGlite and Postgres, through the API and a real worker against a
 * local receiver: the endpoint circuit (opens after the threshold, parks the backlog without spending
 * attempts, probes on an injected clock, closes on a 2xx and drains), manual pause and resume,
 * `max_in_flight` and `rate_limit_per_s` shared by two workers, the health summary, per-route retry
 * policies, private URLs refused at save, and secrets that cannot be opened at delivery.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { eq, sql } from "drizzle-orm";
import { attempts, endpoints, events } from "../../services/db/schema/index.ts";
import { recordCircuitOutcome } from "../../services/delivery/circuit.ts";
import { claimEndpointEvents } from "../../services/delivery/gate.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { manualClock } from "../../services/lib/clock.ts";
import { createSecretBox } from "../../services/lib/crypto.ts";
import { secretsKeyProblem } from "../../services/resources/secrets-key-check.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

async function eventRows(app: TestApp, route: SeededRoute) {
  return app.ctx.database.db.select().from(events).where(eq(events.routeId, route.routeId));
}

async function endpointView(app: TestApp, route: SeededRoute) {
  const r = await app.request("GET", `/v1/endpoints/${route.endpointId}`, { apiKey: route.apiKey });
  expect(r.status).toBe(200);
  return r.body;
}

for (const kind of testDbKinds()) {
  describe(`endpoint circuit (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    const clock = manualClock(new Date("2026-03-01T00:00:00Z"));

    beforeAll(async () => {
      app = await createTestApp(kind, {
        clock,
        env: { ENDPOINT_FAILURE_THRESHOLD: "3", RETRY_SCHEDULE: "0,1m,1m,1m,1m" },
      });
      rx = await startReceiver({ behaviour: { status: 503 } });
      worker = await startWorker(app.ctx, { concurrency: 8, pollMs: 20 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    test("opens at the threshold, parks the backlog without attempts, probes after 1 min then 2 min, closes on a 2xx and drains", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/hook` });
      const fresh = await endpointView(app, route);
      expect(fresh.paused).toBe(false);
      expect(fresh.circuit).toEqual({ state: "closed", since: null, consecutive_failures: 0 });

      // One event fails twice (attempt 2 is immediate), then waits a minute on the schedule.
      const [first] = await seedEvents(app.ctx, route);
      await waitForEvent(app.ctx, first!, (e) => e.attempts === 2);
      // Nine more: only one more attempt fits under the threshold; it opens the circuit.
      await seedEvents(app.ctx, route, { count: 9 });
      await eventually("the circuit to open", async () => (await endpointView(app, route)).circuit, 10_000, {
        until: (c) => c.state === "open",
      });
      await eventually(
        "the backlog to be parked",
        async () => (await eventRows(app, route)).filter((e) => e.lastError === "endpoint_paused").length,
        10_000,
        { until: (n) => n === 9 },
      );
      const open = await endpointView(app, route);
      expect(open.circuit.consecutive_failures).toBe(3);
      expect(open.circuit.since).toBe(clock.now().toISOString());
      let rows = await eventRows(app, route);
      expect(rows.every((e) => e.status === "retry")).toBe(true);
      expect(rows.reduce((n, e) => n + e.attempts, 0)).toBe(3);
      expect(rx.requests).toHaveLength(3);

      // A minute later one probe goes; it fails, and the next waits two minutes.
      clock.advance(61_000);
      await rx.waitForRequests(4, 10_000);
      await eventually(
        "the probe to be recorded",
        async () => (await endpointView(app, route)).circuit,
        10_000,
        {
          until: (c) => c.state === "open" && c.consecutive_failures === 4,
        },
      );
      clock.advance(61_000);
      await Bun.sleep(300);
      expect(rx.requests).toHaveLength(4);

      // The receiver recovers; the probe after two minutes succeeds, the circuit closes, all drain.
      rx.setBehaviour({ status: 200 });
      clock.advance(60_000);
      await eventually(
        "every event to be delivered",
        async () => (await eventRows(app, route)).filter((e) => e.status === "delivered").length,
        15_000,
        { until: (n) => n === 10 },
      );
      const closed = await endpointView(app, route);
      expect(closed.circuit.state).toBe("closed");
      expect(closed.circuit.consecutive_failures).toBe(0);
      expect(rx.requests).toHaveLength(14); // 3 before opening, 2 probes, 9 after closing
      rows = await eventRows(app, route);
      expect(rows.reduce((n, e) => n + e.attempts, 0)).toBe(14);

      const health = await app.request("GET", `/v1/endpoints/${route.endpointId}/health`, {
        apiKey: route.apiKey,
      });
      expect(health.status).toBe(200);
      expect(health.body).toMatchObject({
        window_s: 3600,
        attempts: 14,
        successes: 10,
        last_error: expect.stringMatching(/^http 503/),
        circuit: { state: "closed", consecutive_failures: 0 },
      });
      expect(health.body.success_rate).toBeCloseTo(10 / 14, 5);
      expect(health.body.latency_ms.p50).toBeGreaterThanOrEqual(0);
      expect(health.body.latency_ms.p99).toBeGreaterThanOrEqual(health.body.latency_ms.p50);
      expect(Date.parse(health.body.last_success_at)).toBeGreaterThan(
        Date.parse(health.body.last_failure_at),
      );
    }, 60_000);

    test("a success resets the count even when its attempt's endpoint was loaded before the failures", async () => {
      // Under load an attempt's batch is loaded before other attempts to the endpoint fail: its view
      // still reads 0 failures. Its success must reset the count all the same, or failures that were
      // never consecutive add up until the circuit opens.
      const route = await seedRoute(app, { url: `${rx.url}/flaky` });
      const loaded = {
        id: route.endpointId,
        url: `${rx.url}/flaky`,
        circuitState: "closed",
        consecutiveFailures: 0,
      };
      const count = async () => (await endpointView(app, route)).circuit.consecutive_failures;
      for (let i = 0; i < 2; i++) await recordCircuitOutcome(app.ctx, loaded, "retryable");
      expect(await count()).toBe(2);
      await recordCircuitOutcome(app.ctx, loaded, "success");
      expect(await count()).toBe(0);
      // Two failures, a success, two failures: never three in a row, so it stays closed.
      for (const signal of ["retryable", "retryable", "success", "retryable", "retryable"] as const)
        await recordCircuitOutcome(app.ctx, loaded, signal);
      expect((await endpointView(app, route)).circuit).toMatchObject({
        state: "closed",
        consecutive_failures: 2,
      });
      // Nothing to reset: a success writes nothing and changes nothing.
      await recordCircuitOutcome(app.ctx, loaded, "success");
      expect(await recordCircuitOutcome(app.ctx, loaded, "success")).toBeNull();
      expect(await count()).toBe(0);
    });

    test("a manual pause parks due events without attempts; resuming delivers them at once", async () => {
      rx.setBehaviour({ status: 200 });
      const route = await seedRoute(app, { url: `${rx.url}/paused` });
      const patched = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
        apiKey: route.apiKey,
        body: { paused: true },
      });
      expect(patched.status).toBe(200);
      expect(patched.body.paused).toBe(true);
      const before = rx.requests.length;
      await seedEvents(app.ctx, route, { count: 3 });
      await eventually(
        "the events to wait behind the pause",
        async () => await eventRows(app, route),
        10_000,
        { until: (rows) => rows.every((e) => e.status === "retry" && e.lastError === "endpoint_paused") },
      );
      expect(rx.requests.length).toBe(before);
      expect((await eventRows(app, route)).every((e) => e.attempts === 0)).toBe(true);

      const resumed = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
        apiKey: route.apiKey,
        body: { paused: false },
      });
      expect(resumed.body.paused).toBe(false);
      await eventually("the events to be delivered", async () => await eventRows(app, route), 10_000, {
        until: (rows) => rows.every((e) => e.status === "delivered" && e.attempts === 1),
      });
    });

    test("a route's retry_policy replaces the global schedule; a bad one is refused naming each problem", async () => {
      rx.setBehaviour({ status: 500 });
      const route = await seedRoute(app, { url: `${rx.url}/policy` });
      const bad = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: route.apiKey,
        body: { retry_policy: { schedule: ["0", "soon"], max_attempts: 4 } },
      });
      expect(bad.status).toBe(422);
      expect(bad.body.error.code).toBe("request.invalid");
      const paths = bad.body.error.details.map((d: { path: string }) => d.path);
      expect(paths).toContain("/retry_policy/schedule/1");
      expect(paths).toContain("/retry_policy/schedule");
      const tooMany = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: route.apiKey,
        body: { retry_policy: { schedule: [], max_attempts: 51 } },
      });
      expect(tooMany.status).toBe(422);

      const ok = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: route.apiKey,
        body: { retry_policy: { schedule: ["0", "0ms"], max_attempts: 3 } },
      });
      expect(ok.status).toBe(200);
      expect(ok.body.retry_policy).toEqual({ schedule: ["0", "0ms"], max_attempts: 3 });
      const [id] = await seedEvents(app.ctx, route);
      const event = await waitForEvent(app.ctx, id!, isSettled);
      expect(event.status).toBe("dead");
      expect(event.attempts).toBe(3);
      expect(event.lastError).toBe("http 500: ok (gave up after 3 attempts)");

      const cleared = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: route.apiKey,
        body: { retry_policy: null },
      });
      expect(cleared.body.retry_policy).toBeNull();
    });

    test("a secret the key cannot open is recorded on the event and its attempt, not left to the lease", async () => {
      rx.setBehaviour({ status: 200 });
      const route = await seedRoute(app, { url: `${rx.url}/sealed` });
      expect(await secretsKeyProblem(app.ctx)).toBeNull();
      const box = app.ctx.box;
      (app.ctx as { box: typeof box }).box = createSecretBox(randomBytes(32));
      try {
        expect(await secretsKeyProblem(app.ctx)).toMatch(
          /^SECRETS_KEY cannot open the secrets already sealed/,
        );
        const before = rx.requests.length;
        const [id] = await seedEvents(app.ctx, route);
        // attempt 2 is immediate, then the schedule waits a minute (the clock stands still)
        const event = await waitForEvent(app.ctx, id!, (e) => e.attempts === 2);
        expect(event.status).toBe("retry");
        expect(event.lastError).toBe(
          `secret_unreadable: signing secret ${route.kid} cannot be opened with this SECRETS_KEY`,
        );
        expect(event.leaseOwner).toBeNull();
        const rows = await app.ctx.database.db.select().from(attempts).where(eq(attempts.eventId, id!));
        expect(rows).toHaveLength(2);
        const row = rows[0];
        expect(row!.status).toBe("failed");
        expect(row!.responseCapture.network_error).toBe(event.lastError);
        expect(rx.requests.length).toBe(before);
        // Not the endpoint's fault: its circuit did not count it.
        const [ep] = await app.ctx.database.db
          .select()
          .from(endpoints)
          .where(eq(endpoints.id, route.endpointId));
        expect(ep!.consecutiveFailures).toBe(0);
      } finally {
        (app.ctx as { box: typeof box }).box = box;
      }
    });
  });

  describe(`endpoint limits across workers (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    const workers: RunningWorker[] = [];

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver({ behaviour: { status: 200, delayMs: 60 } });
      for (const owner of ["w1", "w2"])
        workers.push(await startWorker(app.ctx, { concurrency: 8, pollMs: 20, owner }));
    }, 60_000);
    afterAll(async () => {
      for (const w of workers) await w.stop();
      await rx.close();
      await app.close();
    });

    function maxConcurrent(reqs: { receivedAt: number; closedAt?: number }[]): number {
      const marks = reqs.flatMap((r) => [
        [r.receivedAt, 1],
        [r.closedAt ?? Number.POSITIVE_INFINITY, -1],
      ]) as [number, number][];
      marks.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      let now = 0;
      let max = 0;
      for (const [, d] of marks) {
        now += d;
        max = Math.max(max, now);
      }
      return max;
    }

    test("max_in_flight bounds the attempts open at once over both workers", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/mif` });
      const r = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
        apiKey: route.apiKey,
        body: { max_in_flight: 2 },
      });
      expect(r.body.max_in_flight).toBe(2);
      rx.clear();
      await seedEvents(app.ctx, route, { count: 16 });
      await eventually("all to be delivered", async () => await eventRows(app, route), 20_000, {
        until: (rows) => rows.every((e) => e.status === "delivered"),
      });
      expect(rx.requests).toHaveLength(16);
      expect(maxConcurrent(rx.requests)).toBeLessThanOrEqual(2);
      expect(maxConcurrent(rx.requests)).toBe(2);
    }, 30_000);

    test("rate_limit_per_s spaces the attempts of both workers: one at once, then the rate", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/rate` });
      rx.setBehaviour({ status: 200 });
      const r = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
        apiKey: route.apiKey,
        body: { rate_limit_per_s: 5 },
      });
      expect(r.body.rate_limit_per_s).toBe(5);
      rx.clear();
      await seedEvents(app.ctx, route, { count: 20 });
      await eventually("all to be delivered", async () => await eventRows(app, route), 20_000, {
        until: (rows) => rows.every((e) => e.status === "delivered"),
      });
      const times = rx.requests.map((q) => q.receivedAt).sort((a, b) => a - b);
      expect(times).toHaveLength(20);
      // One at once, then each 200 ms after the one before (5/s): the last of 20 starts no sooner than
      // 3.8 s after the first is claimed.
      // Arrival times also carry each attempt's own delay (body building, a busy machine), so the bound
      // checked leaves a second of it: unlimited, the 20 arrive within a fraction of a second.
      expect((times[19] as number) - (times[0] as number)).toBeGreaterThanOrEqual(2000);
    }, 30_000);

    test("limits are validated; null lifts them", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/v` });
      const bad = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
        apiKey: route.apiKey,
        body: { rate_limit_per_s: 0, max_in_flight: 0 },
      });
      expect(bad.status).toBe(422);
      const lifted = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
        apiKey: route.apiKey,
        body: { rate_limit_per_s: null, max_in_flight: null },
      });
      expect(lifted.status).toBe(200);
      expect(lifted.body).toMatchObject({ rate_limit_per_s: null, max_in_flight: null });
    });
  });

  describe(`endpoint rate bucket (${kind})`, () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await createTestApp(kind);
    }, 60_000);
    afterAll(async () => {
      await app.close();
    });

    test("a rate limit gives each claimed event its send time, 1/rate apart, with no catch-up after a pause", async () => {
      const route = await seedRoute(app, { url: "http://127.0.0.1:9/bucket" });
      await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
        apiKey: route.apiKey,
        body: { rate_limit_per_s: 50 },
      });
      // No worker runs here: the claims below are the gate's, made at the times given.
      const t = new Date("3000-01-01T00:00:00Z").getTime();
      await seedEvents(app.ctx, route, { count: 300, quiet: true, nextAttemptAt: new Date(t) });
      const claim = async (atMs: number) =>
        (
          await claimEndpointEvents(app.ctx, route.endpointId, {
            owner: "bucket-test",
            limit: 300,
            leaseMs: 600_000,
            now: new Date(atMs),
          })
        ).events.map((e) => (e.notBeforeMs as number) - t);
      // A second's worth ahead (and the one whole token): sent at 0, 20, …, 1000 ms.
      const first = await claim(t);
      expect(first).toEqual(Array.from({ length: 51 }, (_, i) => i * 20));
      expect(await claim(t)).toEqual([]);
      // Half a second later: the schedule goes on where it stopped, never two at once.
      const more = await claim(t + 500);
      expect(more).toEqual(Array.from({ length: 25 }, (_, i) => 1020 + i * 20));
      // After 5 s without claims the first goes at once and the rest 20 ms apart: no catch-up burst.
      const later = await claim(t + 5000);
      expect(later).toEqual(Array.from({ length: 51 }, (_, i) => 5000 + i * 20));
      const all = [...first, ...more, ...later];
      const busiest = Math.max(...all.map((s) => all.filter((x) => x >= s && x < s + 1000).length));
      expect(busiest).toBe(50);
    });
  });

  describe(`private endpoint URLs (${kind})`, () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await createTestApp(kind, { env: { ALLOW_PRIVATE_ENDPOINTS: "false" } });
    }, 60_000);
    afterAll(async () => {
      await app.close();
    });

    test("loopback, private and metadata addresses and localhost names are refused at creation and update", async () => {
      const project = await app.newProject();
      for (const url of [
        "http://127.0.0.1:8080/hook",
        "http://[::1]/hook",
        "https://10.1.2.3/hook",
        "http://169.254.169.254/latest",
        "http://localhost:3000/hook",
        "http://api.localhost/hook",
        "http://[::ffff:0:7f00:1]/",
      ]) {
        const r = await app.request("POST", "/v1/endpoints", { apiKey: project.apiKey, body: { url } });
        expect(r.status).toBe(422);
        expect(r.body.error.code).toBe("endpoints.private_address");
        expect(r.body.error.message).toContain("ALLOW_PRIVATE_ENDPOINTS");
      }
      const ok = await app.request("POST", "/v1/endpoints", {
        apiKey: project.apiKey,
        body: { url: "https://hooks.example.com/mail" },
      });
      expect(ok.status).toBe(201);
      const upd = await app.request("PATCH", `/v1/endpoints/${ok.body.id}`, {
        apiKey: project.apiKey,
        body: { url: "http://192.168.1.10/hook" },
      });
      expect(upd.status).toBe(422);
      expect(upd.body.error.code).toBe("endpoints.private_address");
    });
  });
}

const ROOT = join(import.meta.dir, "..", "..");
const onPostgres = testDbKinds().includes("postgres") ? describe : describe.skip;

onPostgres("a worker process with another SECRETS_KEY", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp("postgres");
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  test("refuses to start: exit 78 and one line naming SECRETS_KEY", async () => {
    await seedRoute(app, { url: "http://127.0.0.1:9/hook" }); // seals a signing secret
    const run = (key: string | null, logLevel = "warn") =>
      Bun.spawn(["bun", "services/main.ts", "worker"], {
        cwd: ROOT,
        env: {
          ...process.env,
          DATABASE_URL: app.testDb.url as string,
          DATA_DIR: app.testDb.dataDir,
          ...(key ? { SECRETS_KEY: key } : {}),
          LOG_LEVEL: logLevel,
        },
        stdout: "pipe",
        stderr: "pipe",
      });
    const wrong = run(randomBytes(32).toString("hex"));
    expect(await wrong.exited).toBe(78);
    const lines = (await new Response(wrong.stderr).text()).trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^SECRETS_KEY cannot open the secrets already sealed in the database/);

    // The key the database was created with (DATA_DIR/secrets.key) starts.
    const right = run(null, "info");
    const reader = right.stdout.getReader();
    let out = "";
    while (!out.includes("delivery worker started")) {
      const { done, value } = await reader.read();
      if (done) break;
      out += new TextDecoder().decode(value);
    }
    expect(out).toContain("delivery worker started");
    right.kill("SIGKILL");
    await right.exited;
  }, 30_000);
});

for (const kind of testDbKinds()) {
  describe(`dashboard endpoints page (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver({ behaviour: { status: 200 } });
      worker = await startWorker(app.ctx, { concurrency: 4, pollMs: 20 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    const FORM = { "content-type": "application/x-www-form-urlencoded" };
    async function call(method: string, path: string, init: RequestInit = {}) {
      const res = await app.api.handle(new Request(`http://localhost${path}`, { method, ...init }));
      return { status: res.status, headers: res.headers, text: await res.text() };
    }
    const csrfOf = (page: string) => page.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
    const cookieOf = (h: Headers) => (h.get("set-cookie") ?? "").split(";")[0] as string;

    test("shows each endpoint's circuit and last-hour health; pause and resume confirm, act and report", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/ui` });
      await seedEvents(app.ctx, route, { count: 3 });
      await eventually("deliveries", async () => await eventRows(app, route), 10_000, {
        until: (rows) => rows.every((e) => e.status === "delivered"),
      });
      const form = await call("GET", "/ui/sign-in");
      const signed = await call("POST", "/ui/sign-in", {
        headers: { ...FORM, cookie: cookieOf(form.headers) },
        body: new URLSearchParams({ _csrf: csrfOf(form.text), api_key: route.apiKey }),
      });
      const cookie = cookieOf(signed.headers);
      const list = await call("GET", "/ui/endpoints", { headers: { cookie } });
      expect(list.status).toBe(200);
      const row = list.text.slice(list.text.indexOf(`data-endpoint="${route.endpointId}"`));
      expect(row).toContain('data-circuit="closed"');
      expect(row).toContain("100% of 3 ok");
      expect(row).toMatch(/p50 \d+ ms · p99 \d+ ms/);
      expect(row).toContain(
        `action="/ui/endpoints/${route.endpointId}/pause" data-confirm="Pause deliveries`,
      );

      const paused = await call("POST", `/ui/endpoints/${route.endpointId}/pause`, {
        headers: { ...FORM, cookie },
        body: new URLSearchParams({ _csrf: csrfOf(list.text) }),
      });
      expect(paused.status).toBe(303);
      const after = await call("GET", paused.headers.get("location") as string, { headers: { cookie } });
      expect(after.text).toContain("Endpoint paused");
      expect(after.text).toContain('data-circuit="paused"');
      expect(after.text).toContain(`action="/ui/endpoints/${route.endpointId}/resume"`);
      expect((await endpointView(app, route)).paused).toBe(true);

      const resumed = await call("POST", `/ui/endpoints/${route.endpointId}/resume`, {
        headers: { ...FORM, cookie },
        body: new URLSearchParams({ _csrf: csrfOf(after.text) }),
      });
      expect(resumed.status).toBe(303);
      expect((await endpointView(app, route)).paused).toBe(false);
    });
  });
}

onPostgres("endpoint limits across worker processes", () => {
  let app: TestApp;
  let rx: Receiver;
  const procs: ReturnType<typeof Bun.spawn>[] = [];
  beforeAll(async () => {
    app = await createTestApp("postgres");
    rx = await startReceiver({ behaviour: { status: 200, delayMs: 80 } });
  }, 60_000);
  afterAll(async () => {
    for (const p of procs) p.kill("SIGKILL");
    await rx?.close();
    await app?.close();
  });

  test("max_in_flight 3 holds over two worker processes of 16 slots each", async () => {
    const route = await seedRoute(app, { url: `${rx.url}/procs` });
    const r = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
      apiKey: route.apiKey,
      body: { max_in_flight: 3 },
    });
    expect(r.status).toBe(200);
    await seedEvents(app.ctx, route, { count: 30, quiet: true });
    for (let i = 0; i < 2; i++) {
      procs.push(
        Bun.spawn(["bun", "services/main.ts", "worker"], {
          cwd: ROOT,
          env: {
            ...process.env,
            DATABASE_URL: app.testDb.url as string,
            DATA_DIR: app.testDb.dataDir,
            ALLOW_PRIVATE_ENDPOINTS: "true",
            WORKER_CONCURRENCY: "16",
            LOG_LEVEL: "warn",
          },
          stdout: "inherit",
          stderr: "inherit",
        }),
      );
    }
    await eventually("all 30 to be delivered", async () => await eventRows(app, route), 40_000, {
      until: (rows) => rows.every((e) => e.status === "delivered"),
    });
    const marks = rx.requests.flatMap((q) => [
      [q.receivedAt, 1],
      [q.closedAt ?? Number.POSITIVE_INFINITY, -1],
    ]) as [number, number][];
    marks.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let most = 0;
    for (const [, d] of marks) {
      open += d;
      most = Math.max(most, open);
    }
    expect(rx.requests).toHaveLength(30);
    expect(most).toBeLessThanOrEqual(3);
    const logged = await app.ctx.database.rows<{ n: number | string }>(
      sql`select count(*) as n from attempts where endpoint_id = ${route.endpointId}`,
    );
    expect(Number(logged[0]?.n)).toBe(30);
  }, 60_000);
});
