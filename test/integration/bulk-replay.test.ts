/**
 * Bulk replay end to end on PGlite and Postgres: `POST /v1/events/replay` by filter and by ids, the
 * dry run's counts, the job's progress through `GET /v1/jobs/{id}` over several chunks, replayable
 * events delivered again by a real worker, the others skipped, and the refusals.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq, sql } from "drizzle-orm";
import { events } from "../../services/db/schema/index.ts";
import { BULK_REPLAY_CHUNK } from "../../services/delivery/bulk-replay.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { postLargeMessage } from "../support/ingest.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { eventStorage, seedEvents, seedRoute } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`bulk replay (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver({ behaviour: { status: 200 } });
      worker = await startWorker(app.ctx, { concurrency: 16, pollMs: 20 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    const rowsOf = (routeId: string) =>
      app.ctx.database.db.select().from(events).where(eq(events.routeId, routeId));

    test("a filter replays the replayable events (in chunks); the job reports total, done and skipped", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/bulk` });
      // Three chunks, each replaying its events at once: the attempts in flight must keep their I/O
      // meanwhile (on PGlite a long run of jobs once starved them into timeouts).
      const n = BULK_REPLAY_CHUNK * 2 + 20;
      // Already delivered (as if attempted once), plus 7 events still scheduled: not replayable.
      await seedEvents(app.ctx, route, {
        count: n,
        quiet: true,
        nextAttemptAt: new Date("3000-01-01T00:00:00Z"),
      });
      await app.ctx.database.rows(sql`
        update events set status = 'delivered', attempts = 1, next_attempt_at = null
        where route_id = ${route.routeId}`);
      const waiting = await seedEvents(app.ctx, route, {
        count: 7,
        quiet: true,
        nextAttemptAt: new Date("3000-01-01T00:00:00Z"),
      });
      await app.ctx.database.rows(sql`
        update events set status = 'retry' where id = any(${`{${waiting.join(",")}}`}::uuid[])`);

      const dry = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { filter: { route_id: route.routeId }, dry_run: true },
      });
      expect(dry.status).toBe(200);
      expect(dry.body).toEqual({ matched: n + 7, replayable: n });
      const onlyRetry = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { filter: { route_id: route.routeId, status: ["retry"] }, dry_run: true },
      });
      expect(onlyRetry.body).toEqual({ matched: 7, replayable: 0 });

      const res = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { filter: { route_id: route.routeId, endpoint_id: route.endpointId } },
      });
      expect(res.status).toBe(202);
      expect(res.body.queued).toBe(n);
      const job = await eventually(
        "the job to finish",
        async () => (await app.request("GET", `/v1/jobs/${res.body.job_id}`, { apiKey: route.apiKey })).body,
        60_000,
        { until: (j) => j.status === "done" },
      );
      expect(job).toMatchObject({
        id: res.body.job_id,
        kind: "bulk_replay",
        total: n + 7,
        done: n,
        skipped: 7,
      });
      expect(Date.parse(job.finished_at)).toBeGreaterThanOrEqual(Date.parse(job.created_at));
      const failures = () =>
        app.ctx.database.rows<{ e: string; n: number }>(
          sql`select coalesce(response_capture->>'network_error', http_status::text) as e, count(*)::int as n
            from attempts where endpoint_id = ${route.endpointId} and status = 'failed' group by 1`,
        );
      await eventually(
        "every replayed event to be delivered again (or a failed attempt)",
        async () => ({ rows: await rowsOf(route.routeId), failed: await failures() }),
        60_000,
        {
          until: ({ rows, failed }) =>
            failed.length > 0 ||
            rows.filter((e) => e.status === "delivered" && e.attempts === 2).length === n,
        },
      ).then(({ failed }) => expect(failed).toEqual([]));
      const rows = await rowsOf(route.routeId);
      expect(rows.filter((e) => e.status === "retry")).toHaveLength(7);

      expect(rx.requests.filter((q) => q.path === "/bulk")).toHaveLength(n);
    }, 120_000);

    test("the dashboard offers 'Replay all matching' on a filtered list with the dry run's count", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/ui` });
      await seedEvents(app.ctx, route, { count: 3 });
      await eventually("deliveries", async () => await rowsOf(route.routeId), 10_000, {
        until: (rows) => rows.every((e) => e.status === "delivered"),
      });
      const FORM = { "content-type": "application/x-www-form-urlencoded" };
      const call = async (method: string, path: string, init: RequestInit = {}) => {
        const res = await app.api.handle(new Request(`http://localhost${path}`, { method, ...init }));
        return { status: res.status, headers: res.headers, text: await res.text() };
      };
      const csrfOf = (page: string) => page.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
      const cookieOf = (h: Headers) => (h.get("set-cookie") ?? "").split(";")[0] as string;
      const form = await call("GET", "/ui/sign-in");
      const signed = await call("POST", "/ui/sign-in", {
        headers: { ...FORM, cookie: cookieOf(form.headers) },
        body: new URLSearchParams({ _csrf: csrfOf(form.text), api_key: route.apiKey }),
      });
      const cookie = cookieOf(signed.headers);
      const unfiltered = await call("GET", "/ui/events", { headers: { cookie } });
      expect(unfiltered.text).not.toContain('id="bulk-replay"');
      const list = await call("GET", `/ui/events?status=delivered&route_id=${route.routeId}`, {
        headers: { cookie },
      });
      expect(list.text).toContain('id="bulk-replay"');
      expect(list.text).toContain("3 of the 3 matching events can be replayed");
      expect(list.text).toContain('data-confirm="Replay 3 events?');
      const posted = await call("POST", "/ui/events/replay", {
        headers: { ...FORM, cookie },
        body: new URLSearchParams({ _csrf: csrfOf(list.text), status: "delivered", route_id: route.routeId }),
      });
      expect(posted.status).toBe(303);
      const back = await call("GET", posted.headers.get("location") as string, { headers: { cookie } });
      expect(back.text).toContain("Replay of all matching events queued");
      await eventually("the three to be delivered again", async () => await rowsOf(route.routeId), 20_000, {
        until: (rows) => rows.every((e) => e.status === "delivered" && e.attempts === 2),
      });
    }, 60_000);

    test("a replayed event gets its route as it is now and a new body; one whose route was deleted ends dead", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/fresh` });
      const doomed = await seedRoute(app, {
        url: `${rx.url}/doomed`,
        project: { id: route.projectId, apiKey: route.apiKey },
      });
      const ids = await seedEvents(app.ctx, route, { count: 3 });
      const doomedIds = await seedEvents(app.ctx, doomed, { count: 2 });
      const all = [...ids, ...doomedIds];
      const settled = async () =>
        app.ctx.database.db
          .select()
          .from(events)
          .where(sql`${events.id} = any(${`{${all.join(",")}}`}::uuid[])`);
      await eventually("the first deliveries", settled, 20_000, {
        until: (rows) => rows.length === 5 && rows.every((e) => e.status === "delivered"),
      });
      const renamed = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: route.apiKey,
        body: { name: "renamed before the replay" },
      });
      expect(renamed.status).toBe(200);
      const gone = await app.request("DELETE", `/v1/routes/${doomed.routeId}`, { apiKey: route.apiKey });
      expect(gone.status).toBe(204);

      const res = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { event_ids: all },
      });
      expect(res.status).toBe(202);
      expect(res.body.queued).toBe(5);
      const rows = await eventually("the replays to settle", settled, 30_000, {
        until: (rs) =>
          rs.filter((e) => e.status === "delivered" && e.attempts === 2).length === 3 &&
          rs.filter((e) => e.status === "dead").length === 2,
      });
      for (const e of rows.filter((r) => r.routeId === route.routeId)) {
        expect(e.routeSnapshot.name).toBe("renamed before the replay");
        expect(typeof e.routeSnapshot.replayed_at).toBe("string");
        expect(e.budgetStart).toBe(1);
        expect(e.body).toContain('"schema"');
      }
      for (const e of rows.filter((r) => r.routeId === doomed.routeId)) {
        expect(e.lastError).toMatch(/^route_deleted: route rt_\w+ was deleted; the replay cannot run/);
        expect(e.attempts).toBe(1);
      }
      const replayAttempts = await app.ctx.database.rows<{ n: number }>(sql`
        select count(*)::int as n from attempts
        where event_id = any(${`{${ids.join(",")}}`}::uuid[]) and trigger = 'replay' and status = 'success'`);
      expect(replayAttempts[0]?.n).toBe(3);
      const job = await app.request("GET", `/v1/jobs/${res.body.job_id}`, { apiKey: route.apiKey });
      expect(job.body).toMatchObject({ status: "done", total: 5, done: 5, skipped: 0 });
    }, 60_000);

    test("a replayed event whose body was kept in the blob store gets a new body too, counted once", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/large` });
      const { eventId: id } = await postLargeMessage(app, route.apiKey, "large");
      const state = () => eventStorage(app.ctx, id);
      const first = await eventually("the first delivery", state, 20_000, {
        until: (e) => e.status === "delivered" && e.key !== null,
      });
      // the route now sends generic@2: a replay must build that, not send the stored generic@1 bytes
      const changed = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: route.apiKey,
        body: { pipeline: { steps: [{ name: "map.generic_json", args: { version: "2" } }] } },
      });
      expect(changed.status, JSON.stringify(changed.body)).toBe(200);
      rx.clear();
      const res = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { event_ids: [id] },
      });
      expect(res.status).toBe(202);
      const after = await eventually("the replay to be delivered", state, 30_000, {
        until: (e) => e.status === "delivered" && e.attempts === 2,
      });
      const [req] = await rx.waitForRequests(1);
      if (!req) throw new Error("no replayed request");
      expect(JSON.parse(req.text).schema).toEqual({ name: "generic", version: "2" });
      if (!after.key || !first.key) throw new Error("no stored body");
      expect(after.key).not.toBe(first.key);
      expect(await app.ctx.blobs.stat(first.key)).toBeNull();
      expect(await new Response(await app.ctx.blobs.read(after.key)).text()).toBe(req.text);
      // the old body left the usage, the new one came in: counted once (plus the second attempt's captures)
      expect(Number(after.stored) - Number(first.stored)).toBeLessThan(
        Number(after.size) - Number(first.size) + 64 * 1024,
      );
      expect(Number(after.used)).toBe(Number(after.stored));
    }, 60_000);

    test("event_ids replays exactly those; bad requests and other projects' jobs are refused", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/ids` });
      const ids = await seedEvents(app.ctx, route, { count: 4 });
      await eventually("deliveries", async () => await rowsOf(route.routeId), 10_000, {
        until: (rows) => rows.every((e) => e.status === "delivered"),
      });
      const res = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { event_ids: [ids[0], ids[2]] },
      });
      expect(res.status).toBe(202);
      expect(res.body.queued).toBe(2);
      await eventually("two replays", async () => await rowsOf(route.routeId), 10_000, {
        until: (rows) => rows.filter((e) => e.attempts === 2 && e.status === "delivered").length === 2,
      });
      const twice = (await rowsOf(route.routeId)).filter((e) => e.attempts === 2).map((e) => e.id);
      expect(twice.sort()).toEqual([ids[0], ids[2]].sort() as string[]);

      const none = await app.request("POST", "/v1/events/replay", { apiKey: route.apiKey, body: {} });
      expect(none.status).toBe(422);
      expect(none.body.error.code).toBe("request.invalid");
      const badId = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { event_ids: ["nope"] },
      });
      expect(badId.status).toBe(422);
      const badTime = await app.request("POST", "/v1/events/replay", {
        apiKey: route.apiKey,
        body: { filter: { since: "yesterday" } },
      });
      expect(badTime.status).toBe(422);

      const other = await app.newProject("other");
      const foreign = await app.request("GET", `/v1/jobs/${res.body.job_id}`, { apiKey: other.apiKey });
      expect(foreign.status).toBe(404);
      expect(foreign.body.error.code).toBe("jobs.not_found");
      // Another project's filter sees none of these events.
      const theirs = await app.request("POST", "/v1/events/replay", {
        apiKey: other.apiKey,
        body: { filter: { route_id: route.routeId }, dry_run: true },
      });
      expect(theirs.body).toEqual({ matched: 0, replayable: 0 });
    }, 60_000);
  });
}
