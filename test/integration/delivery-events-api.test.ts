/**
 * The events API (docs/api.md): list with filters and cursor paging, detail, attempts with redacted
 * captures, and project scoping.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { inArray } from "drizzle-orm";
import { events } from "../../services/db/schema/index.ts";
import { startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`events API (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let a: SeededRoute;
    let b: SeededRoute;
    let idsA: string[];
    let idsB: string[];

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      a = await seedRoute(app, {
        url: `${rx.url}/a`,
        headers: { "X-Token": "tok-123", "X-Plain": "visible" },
        secretHeaders: ["x-token"],
      });
      b = await seedRoute(app, { url: `${rx.url}/b`, project: { id: a.projectId, apiKey: a.apiKey } });
      // Not due: these stay put for the list tests (no worker runs on them).
      idsA = await seedEvents(app.ctx, a, { count: 7, nextAttemptAt: null, quiet: true });
      idsB = await seedEvents(app.ctx, b, { count: 3, nextAttemptAt: null, quiet: true });
      await app.ctx.database.db
        .update(events)
        .set({ status: "dead", lastError: "http 410: gone" })
        .where(inArray(events.id, idsA.slice(0, 2)));
    }, 60_000);
    afterAll(async () => {
      await rx.close();
      await app.close();
    });

    const get = (path: string, apiKey = a.apiKey) => app.request("GET", path, { apiKey });

    test("lists events newest first and pages through all of them with the cursor", async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const r = await get(`/v1/events?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
        expect(r.status).toBe(200);
        expect(r.body.items.length).toBeLessThanOrEqual(3);
        seen.push(...r.body.items.map((e: any) => e.id));
        cursor = r.body.next_cursor;
        pages++;
      } while (cursor && pages < 10);
      expect(pages).toBe(4);
      expect(new Set(seen).size).toBe(10);
      expect(seen.sort()).toEqual([...idsA, ...idsB].sort());
      const all = await get("/v1/events");
      const keys = all.body.items.map((e: any) => `${e.created_at}|${e.id}`);
      expect(keys).toEqual([...keys].sort().reverse());
      expect(all.body.next_cursor).toBeNull();
      expect(Object.keys(all.body.items[0]).sort()).toEqual(
        [
          "attempts",
          "created_at",
          "id",
          "last_error",
          "next_attempt_at",
          "route_id",
          "status",
          "updated_at",
        ].sort(),
      );
    });

    test("filters by status and by route", async () => {
      const dead = await get("/v1/events?status=dead");
      expect(dead.body.items.map((e: any) => e.id).sort()).toEqual(idsA.slice(0, 2).sort());
      expect(dead.body.items[0].last_error).toBe("http 410: gone");
      const byRoute = await get(`/v1/events?route_id=${b.routeId}`);
      expect(byRoute.body.items.map((e: any) => e.id).sort()).toEqual([...idsB].sort());
      const both = await get(`/v1/events?route_id=${b.routeId}&status=dead`);
      expect(both.body.items).toEqual([]);
    });

    test.each([["limit=0"], ["limit=201"], ["limit=abc"], ["status=bogus"], ["cursor=not-a-cursor"]])(
      "rejects the query %s with request.invalid",
      async (q) => {
        const r = await get(`/v1/events?${q}`);
        expect([400, 422]).toContain(r.status);
        expect(r.body.error.code).toMatch(/^request\./);
      },
    );

    test("detail carries the message summary and the route snapshot", async () => {
      const r = await get(`/v1/events/${idsB[0]}`);
      expect(r.status).toBe(200);
      expect(r.body.id).toBe(idsB[0]);
      expect(r.body.status).toBe("pending");
      expect(r.body.message).toEqual({
        message_id: expect.stringMatching(/^<seed-0-/),
        subject: "Seeded message 0",
        from: [{ email: "sender@example.com", name: "Sender" }],
        to: [{ email: "inbox@in.localhost", name: "" }],
        mail: expect.objectContaining({ message_id_conflict: false, spam: null, forwarded: null }),
      });
      expect(r.body.policy_notes).toEqual([]);
      expect(r.body.routing).toEqual({
        route_id: b.routeId,
        name: "delivery test",
        endpoint_id: b.endpointId,
        endpoint_url: `${rx.url}/b`,
        kid: b.kid,
        pipeline: { steps: [{ name: "map.generic_json", args: {} }] },
      });
    });

    test("attempts come oldest first with secrets redacted in the captures", async () => {
      rx.enqueue(
        { status: 500, body: "try later", headers: { "x-reply": "1" } },
        { status: 200, body: "ok" },
      );
      const worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
      try {
        const [id] = await seedEvents(app.ctx, a);
        await waitForEvent(app.ctx, id!, isSettled);
        const r = await get(`/v1/events/${id}/attempts`);
        expect(r.status).toBe(200);
        const [first, second] = r.body.items;
        expect(r.body.items).toHaveLength(2);
        expect([first.number, second.number]).toEqual([1, 2]);
        expect([first.status, second.status]).toEqual(["failed", "success"]);
        expect(first.http_status).toBe(500);
        expect(first.trigger).toBe("auto");
        expect(first.latency_ms).toBeGreaterThanOrEqual(0);
        expect(first.request_capture.method).toBe("POST");
        expect(first.request_capture.url).toBe(`${rx.url}/a`);
        const h = first.request_capture.headers;
        expect(h["X-Token"]).toBe("***");
        expect(h["X-Plain"]).toBe("visible");
        expect(h["X-Service-Signature"]).toBe("***");
        expect(h["webhook-signature"]).toBe("***");
        expect(h["X-Idempotency-Key"]).toMatch(/^[0-9a-f]{64}$/);
        expect(JSON.parse(first.request_capture.body_preview).schema.name).toBe("generic");
        expect(first.response_capture).toEqual({
          status: 500,
          headers: expect.objectContaining({ "x-reply": "1" }),
          body_preview: "try later",
          network_error: null,
        });
        expect(JSON.stringify(r.body)).not.toContain("tok-123");
      } finally {
        await worker.stop();
      }
    });

    test("another project's event and a malformed id are not found", async () => {
      const other = await app.newProject("other");
      for (const path of [`/v1/events/${idsA[0]}`, `/v1/events/${idsA[0]}/attempts`]) {
        const r = await get(path, other.apiKey);
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe("events.not_found");
      }
      expect((await get("/v1/events", other.apiKey)).body.items).toEqual([]);
      for (const path of ["/v1/events/not-a-uuid", "/v1/events/123/attempts"]) {
        const r = await get(path);
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe("events.not_found");
      }
      expect((await app.request("GET", "/v1/events", { apiKey: null })).status).toBe(401);
    });
  });
}
