/**
 * Credentials in an endpoint URL's query string never reach the attempt log or the event's routing
 * snapshot as the API shows them: the attack configures a receiver that authenticates by
 * `?token=…`, delivers, and reads the attempts and the event back. The endpoint itself (the owner's
 * configuration) still shows the URL in full, and the receiver still gets the real token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

const TOKEN = "s3cr3t-query-token-0123456789";

/** Seeds one event on `route`, runs a worker until it is settled, and returns its id. */
async function deliverOne(app: TestApp, route: Awaited<ReturnType<typeof seedRoute>>): Promise<string> {
  const worker = await startWorker(app.ctx, { pollMs: 50 });
  try {
    const [id] = (await seedEvents(app.ctx, route)) as [string];
    await waitForEvent(app.ctx, id, isSettled);
    return id;
  } finally {
    await worker.stop();
  }
}

for (const kind of testDbKinds()) {
  describe(`endpoint URL credentials in captures (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
    }, 60_000);
    afterAll(async () => {
      await rx?.close();
      await app?.close();
    });

    test("query values are *** in the attempt capture and the event's routing; the receiver got them", async () => {
      const url = `${rx.url}/hook?token=${TOKEN}&tenant=acme-7`;
      const route = await seedRoute(app, { url });
      const get = (path: string) => app.request("GET", path, { apiKey: route.apiKey });
      const id = await deliverOne(app, route);
      expect(rx.requests.at(-1)?.path).toBe(`/hook?token=${TOKEN}&tenant=acme-7`);

      const attempts = await get(`/v1/events/${id}/attempts`);
      expect(attempts.status, attempts.text).toBe(200);
      expect(attempts.body.items[0].request_capture.url).toBe(`${rx.url}/hook?token=***&tenant=***`);
      expect(attempts.text).not.toContain(TOKEN);
      expect(attempts.text).not.toContain("acme-7");

      const detail = await get(`/v1/events/${id}`);
      expect(detail.body.routing.endpoint_url, detail.text).toBe(`${rx.url}/hook?token=***&tenant=***`);
      expect(detail.text).not.toContain(TOKEN);

      // Stored redacted, too: the attempt log itself never held the token.
      const stored = await app.ctx.database.rows<{ capture: string }>(
        sql`select request_capture::text as capture from attempts where event_id = ${id}`,
      );
      expect(stored.length).toBeGreaterThan(0);
      for (const row of stored) expect(row.capture).not.toContain(TOKEN);

      // The endpoint is the owner's configuration: shown as configured, so it can be read and edited.
      const endpoint = await get(`/v1/endpoints/${route.endpointId}`);
      expect(endpoint.body.url, endpoint.text).toBe(url);
    });

    test("a capture recorded before URL masking is masked when read", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/old` });
      const id = await deliverOne(app, route);
      const legacy = `https://user:pa55@hooks.example/old?token=${TOKEN}`;
      await app.ctx.database.rows(
        sql`update attempts set request_capture = jsonb_set(request_capture, '{url}', to_jsonb(${legacy}::text))
            where event_id = ${id}`,
      );
      const r = await app.request("GET", `/v1/events/${id}/attempts`, { apiKey: route.apiKey });
      expect(r.body.items[0].request_capture.url, r.text).toBe("https://***:***@hooks.example/old?token=***");
      expect(r.text).not.toContain(TOKEN);
      expect(r.text).not.toContain("pa55");
    });
  });
}
