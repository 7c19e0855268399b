/**
 * What docs/receivers.md claims about third-party verifiers, checked against a real delivery: the
 * Standard Webhooks library and Svix's verify the `webhook-*` headers unchanged; MailWebhook's
 * documented verifier verifies `X-Service-Signature` with only the header name changed; Stripe's own
 * library rejects it (hex digests, `","` without spaces), and Stripe-style code verifies it after the
 * two changes the docs show.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import { Webhook as StandardWebhook } from "standardwebhooks";
import Stripe from "stripe";
import { Webhook as SvixWebhook } from "svix";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

/**
 * MailWebhook's documented Node.js verifier for `X-MailWebhook-Signature` (parse on ",", trim, base64
 * `v1`, HMAC keyed with the secret), written from its documentation; a receiver passes our
 * `X-Service-Signature` value to it.
 */
function mailWebhookVerify(header: string, body: Buffer, secretsByKid: Record<string, string>): boolean {
  const parts = Object.fromEntries(
    header
      .split(",")
      .map((p) => p.trim())
      .filter((p) => p.includes("="))
      .map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]),
  );
  if (!/^\d+$/.test(parts.t ?? "")) return false;
  const t = Number.parseInt(parts.t as string, 10);
  const secret = secretsByKid[parts.kid ?? ""];
  if (!secret || !parts.v1 || Math.abs(Date.now() / 1000 - t) > 300) return false;
  const expected = createHmac("sha256", secret)
    .update(Buffer.concat([Buffer.from(`${t}.`, "ascii"), body]))
    .digest();
  const provided = Buffer.from(parts.v1, "base64");
  return expected.length === provided.length && timingSafeEqual(expected, provided);
}

/**
 * The manual check Stripe documents for `Stripe-Signature` ("t=…,v1=<hex>"): split on ",", split each
 * item on "=", compare the hex HMAC. `adapted` applies the two changes docs/receivers.md shows: split
 * each trimmed item at its first "=" only (a base64 signature ends in "="), and compare base64
 * instead of hex.
 */
function stripeStyleVerify(header: string, body: string, secret: string, adapted: boolean): boolean {
  const pairs = header
    .split(",")
    .map((item) =>
      adapted
        ? ([
            item.trim().slice(0, item.trim().indexOf("=")),
            item.trim().slice(item.trim().indexOf("=") + 1),
          ] as [string, string])
        : (item.split("=") as [string, string]),
    );
  const t = pairs.find(([k]) => k === "t")?.[1];
  const signatures = pairs.filter(([k]) => k === "v1").map(([, v]) => v);
  if (!t) return false;
  const expected = createHmac("sha256", secret)
    .update(`${t}.${body}`)
    .digest(adapted ? "base64" : "hex");
  return signatures.some((s) => s === expected);
}

describe("third-party verifiers against a real delivery", () => {
  let app: TestApp;
  let rx: Receiver;
  let worker: RunningWorker;
  let route: SeededRoute;
  let request: ReceivedRequest;

  beforeAll(async () => {
    app = await createTestApp("pglite");
    rx = await startReceiver();
    route = await seedRoute(app, { url: `${rx.url}/hook` });
    worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
    const [id] = await seedEvents(app.ctx, route);
    const event = await waitForEvent(app.ctx, id as string, isSettled);
    expect(event.status).toBe("delivered");
    request = rx.requests[0] as ReceivedRequest;
  }, 60_000);
  afterAll(async () => {
    await worker?.stop();
    await rx?.close();
    await app?.close();
  });

  test("the Standard Webhooks library verifies the webhook-* headers with the whsec_ secret as is", () => {
    const payload = new StandardWebhook(route.secret).verify(request.text, request.headers);
    expect(payload).toMatchObject({ schema: { name: "generic", version: "1" } });
  });

  test("Svix's library verifies the webhook-* headers with the whsec_ secret as is", () => {
    // svix 2.x returns nothing and throws on a bad signature
    expect(() => new SvixWebhook(route.secret).verify(request.text, request.headers)).not.toThrow();
  });

  test("a tampered body fails both libraries", () => {
    const tampered = `${request.text} `;
    expect(() => new StandardWebhook(route.secret).verify(tampered, request.headers)).toThrow();
    expect(() => new SvixWebhook(route.secret).verify(tampered, request.headers)).toThrow();
  });

  test("MailWebhook's verifier accepts X-Service-Signature (only the header name differs)", () => {
    const header = request.headers["x-service-signature"] as string;
    expect(mailWebhookVerify(header, Buffer.from(request.body), { [route.kid]: route.secret })).toBe(true);
    expect(mailWebhookVerify(header, Buffer.from(`${request.text} `), { [route.kid]: route.secret })).toBe(
      false,
    );
  });

  test("Stripe's library rejects X-Service-Signature", () => {
    const stripe = new Stripe("sk_test_not_used");
    const header = request.headers["x-service-signature"] as string;
    expect(() => stripe.webhooks.constructEvent(request.text, header, route.secret)).toThrow();
  });

  test("Stripe-style code verifies X-Service-Signature after the two documented changes, and not before", () => {
    const header = request.headers["x-service-signature"] as string;
    expect(stripeStyleVerify(header, request.text, route.secret, false)).toBe(false);
    expect(stripeStyleVerify(header, request.text, route.secret, true)).toBe(true);
  });
});
