/**
 * MailWebhook's documented route configs end to end (test/fixtures/mailwebhook-routes.ts): each route is
 * created through `POST /v1/routes` exactly as the documentation writes it (only the endpoint id and the
 * signing key id filled in), each fixture message is uploaded to `POST /v1/messages`, and a real worker
 * delivers to a loopback receiver. A message the page says matches is delivered with the documented
 * body (whole, or the part the page shows); one it says does not match creates no event.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import nodemailer from "nodemailer";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { verifyServiceSignature } from "../../services/lib/signing.ts";
import { mixedMail, ROUTE_FIXTURES, SCREENSHOT } from "../fixtures/mailwebhook-routes.ts";
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
    let smtp: RunningSmtp;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
    }, 60_000);
    afterAll(async () => {
      await smtp.close();
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

    test("the support-ticket recipe over SMTP: matched on the To header, mapped with source_type smtp", async () => {
      const f = ROUTE_FIXTURES.find((x) => x.name === "Support recipe: Support inbox to ticket API")!;
      const project = await app.newProject("compat-smtp");
      const apiKey = project.apiKey;
      const ep = await app.request("POST", "/v1/endpoints", { apiKey, body: { url: `${rx.url}/smtp` } });
      const sk = await app.request("POST", "/v1/signing-secrets", { apiKey, body: {} });
      const created = await app.request("POST", "/v1/routes", {
        apiKey,
        body: { ...f.route, endpoint_id: ep.body.id, signing_secret_kid: sk.body.kid },
      });
      expect(created.status, created.text).toBe(201);
      rx.clear();
      const transport = nodemailer.createTransport({
        host: "127.0.0.1",
        port: smtp.port,
        secure: false,
        ignoreTLS: true,
      });
      const raw = mixedMail({
        from: "Customer Name <customer@example.com>",
        to: "support@example.com",
        subject: "Cannot access account",
        text: "I cannot sign in after resetting my password.",
        attachments: [{ filename: "screenshot.png", contentType: "image/png", content: SCREENSHOT }],
      });
      await transport.sendMail({
        envelope: { from: "customer@example.com", to: [project.inbound] },
        raw: Buffer.from(raw),
      });
      transport.close();
      const [req] = await rx.waitForRequests(1, 15_000);
      const body = JSON.parse(req!.text);
      expect(body.type).toBe("support_ticket.create");
      expect(body.mailwebhook).toEqual({
        event_id: body.external_id,
        route_id: created.body.id,
        source_type: "smtp",
      });
      expect(body.requester).toEqual({ email: "customer@example.com", name: "Customer Name" });
      expect(body.body).toBe("I cannot sign in after resetting my password.");
      expect(body.attachments.map((a: any) => [a.filename, a.size])).toEqual([
        ["screenshot.png", SCREENSHOT.byteLength],
      ]);
    });

    // What the pages say a route may not be, and where this service is deliberately stricter
    // (docs/routing.md, "Differences from MailWebhook"): refused with a code and the path at fault.
    const refused: [string, Record<string, unknown>, string, string, RegExp][] = [
      [
        "a pipeline with no steps",
        { pipeline: { steps: [] } },
        "routes.invalid_pipeline",
        "/pipeline/steps",
        /./,
      ],
      [
        "a map step that is not the last step",
        {
          pipeline: {
            steps: [
              { name: "map.slack_simple", args: { channel: "C0123456789" } },
              { name: "html_to_text", args: {} },
            ],
          },
        },
        "routes.invalid_pipeline",
        "/pipeline/steps",
        /./,
      ],
      [
        "a Slack step without its channel",
        { pipeline: { steps: [{ name: "map.slack_simple", args: {} }] } },
        "routes.invalid_pipeline",
        "/pipeline/steps/0/args/channel",
        /required/,
      ],
      [
        "a Telegram step whose max_chars is not an integer",
        {
          pipeline: {
            steps: [{ name: "map.telegram_simple", args: { chat_id: "-10012345", max_chars: "700" } }],
          },
        },
        "routes.invalid_pipeline",
        "/pipeline/steps/0/args/max_chars",
        /integer/,
      ],
      [
        "a custom_json step without version v1",
        { pipeline: { steps: [{ name: "map.custom_json", args: { output: { a: 1 } } }] } },
        "routes.invalid_pipeline",
        "/pipeline/steps/0/args",
        /./,
      ],
      // stricter than MailWebhook, which ignores unknown keys, skips invalid regexes and reads empty
      // lists as "no constraint"
      [
        "a rule with an unknown key",
        { rule: { subjet_contains: ["x"] } },
        "routes.invalid_rule",
        "/rule/subjet_contains",
        /unknown rule key/,
      ],
      [
        "a rule with an empty list",
        { rule: { subject_contains: [] } },
        "routes.invalid_rule",
        "/rule/subject_contains",
        /must not be empty/,
      ],
      [
        "a rule with an empty any",
        { rule: { any: [] } },
        "routes.invalid_rule",
        "/rule/any",
        /must not be empty/,
      ],
      [
        "a rule whose regex RE2 cannot run (a backreference)",
        { rule: { subject_regex: ["(a)\\1"] } },
        "routes.invalid_rule",
        "/rule/subject_regex/0",
        /RE2/,
      ],
    ];
    test.each(refused)("refuses %s with its code and path", async (_label, part, code, path, message) => {
      const project = await app.newProject("compat-refused");
      const apiKey = project.apiKey;
      const ep = await app.request("POST", "/v1/endpoints", { apiKey, body: { url: `${rx.url}/refused` } });
      const sk = await app.request("POST", "/v1/signing-secrets", { apiKey, body: {} });
      const r = await app.request("POST", "/v1/routes", {
        apiKey,
        body: {
          name: "refused",
          endpoint_id: ep.body.id,
          signing_secret_kid: sk.body.kid,
          rule: {},
          ...part,
        },
      });
      expect(r.status, r.text).toBe(422);
      expect(r.body.error.code).toBe(code);
      const details: { path: string; message: string }[] = r.body.error.details;
      expect(
        details.some((d) => d.path.startsWith(path) && message.test(d.message)),
        r.text,
      ).toBe(true);
    });
  });
}
