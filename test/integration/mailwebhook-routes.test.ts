/**
 * MailWebhook's documented route configs end to end (test/fixtures/mailwebhook-routes.ts): each route is
 * created through `POST /v1/routes` exactly as the documentation writes it (only the endpoint id and the
 * signing key id filled in), each fixture message is uploaded to `POST /v1/messages`, and a real worker
 * delivers to a loopback receiver. A message the page says matches is delivered with the documented
 * body (whole, or the part the page shows); one it says does not match creates no event.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { verifyServiceSignature } from "../../services/lib/signing.ts";
import { ROUTE_FIXTURES } from "../fixtures/mailwebhook-routes.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { postMessage } from "../support/ingest.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, waitForEvent } from "../support/seed-events.ts";

/** `actual` cut down to what `expected` names: its keys, and arrays to its length (an abridged output). */
function abridged(actual: unknown, expected: unknown): unknown {
  if (Array.isArray(expected) && Array.isArray(actual))
    return actual.slice(0, expected.length).map((a, i) => abridged(a, expected[i]));
  if (
    typeof expected === "object" &&
    expected !== null &&
    !("asymmetricMatch" in expected) &&
    typeof actual === "object" &&
    actual !== null
  ) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(expected))
      out[k] = abridged((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k]);
    return out;
  }
  return actual;
}

for (const kind of testDbKinds()) {
  describe(`MailWebhook route configs (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    ROUTE_FIXTURES.forEach((f, i) => {
      test(`${f.page}: ${f.name}`, async () => {
        const project = await app.newProject(`compat-${i}`);
        const apiKey = project.apiKey;
        const ep = await app.request("POST", "/v1/endpoints", { apiKey, body: { url: `${rx.url}/f${i}` } });
        expect(ep.status, ep.text).toBe(201);
        const sk = await app.request("POST", "/v1/signing-secrets", { apiKey, body: {} });
        expect(sk.status, sk.text).toBe(201);
        const body = { ...f.route, endpoint_id: ep.body.id, signing_secret_kid: sk.body.kid };
        const created = await app.request("POST", "/v1/routes", { apiKey, body });
        expect(created.status, created.text).toBe(201);
        // stored and returned as written
        if (f.route.rule !== undefined) expect(created.body.rule).toEqual(f.route.rule);
        if (f.route.pipeline !== undefined) expect(created.body.pipeline).toEqual(f.route.pipeline);
        const routeId: string = created.body.id;

        for (const m of f.messages) {
          rx.clear();
          const r = await postMessage(app, apiKey, m.raw);
          expect(r.status, `${m.label}: ${r.text}`).toBe(202);
          if (!m.matches) {
            expect(r.body.events, m.label).toEqual([]);
            continue;
          }
          expect(r.body.events, m.label).toHaveLength(1);
          const eventId: string = r.body.events[0].id;
          const event = await waitForEvent(app.ctx, eventId, isSettled, 15_000);
          expect(event.status, `${m.label}: ${JSON.stringify(event.lastError ?? null)}`).toBe("delivered");
          const [req] = await rx.waitForRequests(1);
          expect(req!.path).toBe(`/f${i}`);
          expect(req!.headers["content-type"]).toBe("application/json");
          expect(
            verifyServiceSignature({
              header: req!.headers["x-service-signature"]!,
              secrets: { [sk.body.kid]: sk.body.secret },
              body: req!.body,
              nowSec: Math.floor(Date.now() / 1000),
            }).ok,
          ).toBe(true);
          const delivered = JSON.parse(req!.text);
          const d = { eventId, routeId, projectId: project.id };
          if (m.expected) expect(delivered, m.label).toEqual(m.expected(d) as never);
          if (m.expectedSubset) {
            const want = m.expectedSubset(d);
            expect(abridged(delivered, want), m.label).toEqual(want as never);
          }
          m.check?.(delivered, d);
        }
      }, 60_000);
    });
  });
}
