/**
 * Ingest → delivery: a raw message posted to `POST /v1/messages` reaches the endpoint as generic@1,
 * woken by the ingest notification, with the documented idempotency key.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { idempotencyKey } from "../../services/lib/signing.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedRoute, waitForEvent } from "../support/seed-events.ts";

const RAW = [
  "From: Alice <alice@example.com>",
  "To: inbox@in.localhost",
  "Subject: Order 1234",
  "Message-ID: <E2E-1@Example.com>",
  "Date: Thu, 01 Jan 2026 10:00:00 +0000",
  "MIME-Version: 1.0",
  "Content-Type: text/plain; charset=utf-8",
  "",
  "Your order shipped.",
  "",
].join("\r\n");

for (const kind of testDbKinds()) {
  describe(`ingest to delivery (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let route: SeededRoute;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      route = await seedRoute(app, { url: rx.url });
      // A long poll interval: delivery must come from the ingest wake-up, not from polling.
      worker = await startWorker(app.ctx, { concurrency: 4, pollMs: 60_000 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    test("a posted message is delivered as generic@1 with the deterministic idempotency key", async () => {
      const r = await app.request("POST", "/v1/messages", {
        apiKey: route.apiKey,
        rawBody: RAW,
        headers: { "content-type": "message/rfc822" },
      });
      expect(r.status).toBe(202);
      const [created] = r.body.events;
      expect(created.route_id).toBe(route.routeId);
      const event = await waitForEvent(app.ctx, created.id, isSettled, 5000);
      expect(event.status).toBe("delivered");
      const [req] = await rx.waitForRequests(1);
      const body = JSON.parse(req!.text);
      expect(body.message.message_id).toBe("<E2E-1@Example.com>");
      expect(body.message.subject).toBe("Order 1234");
      expect(body.body.text).toContain("Your order shipped.");
      expect(body.body.attachments).toEqual([]);
      expect(req!.headers["x-idempotency-key"]).toBe(idempotencyKey("<E2E-1@Example.com>", route.routeId));
      const detail = await app.request("GET", `/v1/events/${created.id}`, { apiKey: route.apiKey });
      expect(detail.body.message.subject).toBe("Order 1234");
      expect(detail.body.routing.route_id).toBe(route.routeId);
    });

    test("a custom_json mapper's output keys arrive in the order written (the route, the event and the body)", async () => {
      const output = { subject: { var: "message.subject" }, id: { var: "message.message_id" }, z: 1, a: 2 };
      const pipeline = { steps: [{ name: "map.custom_json", args: { version: "v1", output } }] };
      const mapped = await seedRoute(app, { url: rx.url, pipeline });
      const shown = await app.request("GET", `/v1/routes/${mapped.routeId}`, { apiKey: mapped.apiKey });
      expect(JSON.stringify(shown.body.pipeline)).toBe(JSON.stringify(pipeline));
      rx.clear();
      const r = await app.request("POST", "/v1/messages", {
        apiKey: mapped.apiKey,
        rawBody: RAW.replace("<E2E-1@Example.com>", "<E2E-order@Example.com>"),
        headers: { "content-type": "message/rfc822" },
      });
      expect(r.status, r.text).toBe(202);
      const [created] = r.body.events;
      expect((await waitForEvent(app.ctx, created.id, isSettled, 5000)).status).toBe("delivered");
      const [req] = await rx.waitForRequests(1);
      expect(req!.text).toBe('{"subject":"Order 1234","id":"<E2E-order@Example.com>","z":1,"a":2}');
      const detail = await app.request("GET", `/v1/events/${created.id}`, { apiKey: mapped.apiKey });
      expect(JSON.stringify(detail.body.routing.pipeline)).toBe(JSON.stringify(pipeline));
    });
  });
}
