/**
 * Replay (spec: Replay rules): rebuilt from the stored message and the CURRENT route, same idempotency
 * key, new body and signature, trigger `replay`, a fresh budget of 6; terminal events only.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { events } from "../../services/db/schema/index.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`replay (${kind})`, () => {
    let app: TestApp;
    let rx1: Receiver;
    let rx2: Receiver;
    let worker: RunningWorker;
    let route: SeededRoute;

    beforeAll(async () => {
      app = await createTestApp(kind, { env: { RETRY_SCHEDULE: "0,10ms,10ms,10ms,10ms" } });
      rx1 = await startReceiver();
      rx2 = await startReceiver();
      route = await seedRoute(app, { url: `${rx1.url}/one` });
      worker = await startWorker(app.ctx, { concurrency: 4, pollMs: 50 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx1.close();
      await rx2.close();
      await app.close();
    });

    const replay = (id: string, apiKey = route.apiKey) =>
      app.request("POST", `/v1/events/${id}/replay`, { apiKey });

    test("replay after changing the route's endpoint and pipeline sends a new body to the new URL with the same idempotency key", async () => {
      const own = await seedRoute(app, {
        url: `${rx1.url}/one`,
        project: { id: route.projectId, apiKey: route.apiKey },
      });
      const [id] = await seedEvents(app.ctx, own);
      const first = await waitForEvent(app.ctx, id!, isSettled);
      expect(first.status).toBe("delivered");
      const original = rx1.requests.find((r) => r.headers["x-idempotency-key"] === first.idempotencyKey)!;

      const ep2 = await app.request("POST", "/v1/endpoints", {
        apiKey: route.apiKey,
        body: { url: `${rx2.url}/two` },
      });
      const patch = await app.request("PATCH", `/v1/routes/${own.routeId}`, {
        apiKey: route.apiKey,
        body: {
          endpoint_id: ep2.body.id,
          pipeline: {
            steps: [
              {
                name: "map.custom_json",
                args: { version: "v1", output: { replayed: true, subject: { var: "message.subject" } } },
              },
            ],
          },
        },
      });
      expect(patch.status).toBe(200);

      const r = await replay(id!);
      expect(r.status).toBe(202);
      expect(r.body).toEqual({ queued: true, event_id: id });
      const after = await waitForEvent(app.ctx, id!, (e) => isSettled(e) && e.attempts === 2);
      expect(after.status).toBe("delivered");

      const [sent] = await rx2.waitForRequests(1);
      expect(sent!.path).toBe("/two");
      expect(JSON.parse(sent!.text)).toEqual({ replayed: true, subject: "Seeded message 0" });
      expect(sent!.text).not.toBe(original.text);
      expect(sent!.headers["x-idempotency-key"]).toBe(original.headers["x-idempotency-key"]);
      expect(sent!.headers["webhook-id"]).toBe(original.headers["webhook-id"]);
      expect(sent!.headers["webhook-signature"]).not.toBe(original.headers["webhook-signature"]);
      expect(() => new Webhook(own.secret.slice(6)).verify(sent!.text, sent!.headers)).not.toThrow();

      const list = await app.request("GET", `/v1/events/${id}/attempts`, { apiKey: route.apiKey });
      expect(list.body.items.map((a: any) => [a.number, a.trigger, a.status])).toEqual([
        [1, "auto", "success"],
        [2, "replay", "success"],
      ]);
      const detail = await app.request("GET", `/v1/events/${id}`, { apiKey: route.apiKey });
      expect(detail.body.routing.endpoint_url).toBe(`${rx2.url}/two`);
      expect(detail.body.routing.pipeline.steps[0].name).toBe("map.custom_json");
      expect(detail.body.routing.replayed_at).toBeUndefined();
    });

    test("a replayed dead event gets a fresh budget of 6 attempts", async () => {
      rx1.setBehaviour({ status: 503 });
      try {
        const [id] = await seedEvents(app.ctx, route);
        const dead = await waitForEvent(app.ctx, id!, isSettled);
        expect(dead.attempts).toBe(6);
        expect((await replay(id!)).status).toBe(202);
        const again = await waitForEvent(app.ctx, id!, (e) => isSettled(e) && e.attempts > 6);
        expect(again.status).toBe("dead");
        expect(again.attempts).toBe(12);
        expect(again.budgetStart).toBe(6);
        const list = await app.request("GET", `/v1/events/${id}/attempts`, { apiKey: route.apiKey });
        expect(list.body.items.map((a: any) => a.trigger)).toEqual([
          ...Array(6).fill("auto"),
          ...Array(6).fill("replay"),
        ]);
      } finally {
        rx1.setBehaviour({});
      }
    });

    test("pending and retry events are not replayable (409), and a second replay while queued is refused", async () => {
      const [id] = await seedEvents(app.ctx, route, { nextAttemptAt: null, quiet: true });
      const pending = await replay(id!);
      expect(pending.status).toBe(409);
      expect(pending.body.error.code).toBe("events.not_replayable");
      await app.ctx.database.db
        .update(events)
        .set({ status: "retry", nextAttemptAt: new Date("3000-01-01T00:00:00Z") })
        .where(eq(events.id, id!));
      expect((await replay(id!)).status).toBe(409);

      await app.ctx.database.db.update(events).set({ status: "discarded" }).where(eq(events.id, id!));
      // Two concurrent replays: the status change and the job insert are one statement, so one wins.
      const [a, b] = await Promise.all([replay(id!), replay(id!)]);
      expect([a.status, b.status].sort()).toEqual([202, 409]);
      const done = await waitForEvent(app.ctx, id!, isSettled);
      expect(done.status).toBe("delivered");
    });

    test("another project's event and a non-UUID id are not found", async () => {
      const [id] = await seedEvents(app.ctx, route);
      await waitForEvent(app.ctx, id!, isSettled);
      const other = await app.newProject("other");
      const r = await replay(id!, other.apiKey);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("events.not_found");
      const bad = await replay("not-a-uuid");
      expect(bad.status).toBe(404);
      expect(bad.body.error.code).toBe("events.not_found");
    });

    test("a replay whose route was deleted since ends the event dead with a clear error", async () => {
      const doomed = await seedRoute(app, {
        url: rx1.url,
        project: { id: route.projectId, apiKey: route.apiKey },
      });
      const [id] = await seedEvents(app.ctx, doomed);
      await waitForEvent(app.ctx, id!, isSettled);
      expect(
        (await app.request("DELETE", `/v1/routes/${doomed.routeId}`, { apiKey: route.apiKey })).status,
      ).toBe(204);
      expect((await replay(id!)).status).toBe(202);
      const dead = await waitForEvent(app.ctx, id!, (e) => e.status === "dead");
      expect(dead.lastError).toMatch(/^route_deleted: route rt_\w+ was deleted/);
      expect(dead.attempts).toBe(1);
    });
  });
}
