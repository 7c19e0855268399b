/**
 * A route's attachment policy end to end: one message with a disallowed attachment, a mismatched one
 * and an attached message, uploaded over HTTP to a project whose routes each have another policy; what
 * each route's receiver gets, what each event records (`policy_notes`, `last_error`), the validation of
 * the policy, and the dashboard's event page with the notes and the Understanding panel.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { buildMail, TINY_PNG } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, waitForEvent } from "../support/seed-events.ts";

const GENERIC = { steps: [{ name: "map.generic_json", args: {} }] };

function forwardedOriginal(): string {
  return [
    "From: Carol <carol@example.net>",
    "To: alice@example.com",
    "Subject: the original",
    "Message-ID: <orig@example.net>",
    "",
    "Original words.",
    "",
  ].join("\r\n");
}

/** A PDF, a "PNG" that is a PDF (mismatch), a video (disallowed) and an attached message. */
function mixedMail(messageId: string): Uint8Array<ArrayBuffer> {
  return buildMail({
    messageId,
    subject: "mixed attachments",
    attachments: [
      { filename: "ok.pdf", contentType: "application/pdf", content: "%PDF-1.4\n%%EOF\n" },
      { filename: "fake.png", contentType: "image/png", content: "%PDF-1.4\n%%EOF\n" },
      { filename: "clip.mp4", contentType: "video/mp4", content: "not really a video" },
      { filename: "fwd.eml", contentType: "message/rfc822", content: forwardedOriginal(), encoding: "7bit" },
      { filename: "logo.png", contentType: "image/png", content: TINY_PNG },
    ],
  });
}

for (const kind of testDbKinds()) {
  describe(`route attachment policy (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let project: { id: string; apiKey: string; inbound: string };
    let endpointId: string;
    let kid: string;

    async function route(name: string, attachmentPolicy?: unknown) {
      const r = await app.request("POST", "/v1/routes", {
        apiKey: project.apiKey,
        body: {
          name,
          endpoint_id: endpointId,
          signing_secret_kid: kid,
          rule: {},
          pipeline: GENERIC,
          ...(attachmentPolicy !== undefined ? { attachment_policy: attachmentPolicy } : {}),
        },
      });
      return r;
    }

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      project = await app.newProject();
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: project.apiKey,
        body: { url: rx.url },
      });
      endpointId = ep.body.id;
      kid = (await app.request("POST", "/v1/signing-secrets", { apiKey: project.apiKey })).body.kid;
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 100 });
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await rx?.close();
      await app?.close();
    });

    test("an invalid policy is refused with its paths; a valid one is shown completed", async () => {
      const bad = await route("bad", { allowed_prefixes: ["image/", ""], on_disallowed: "bounce", extra: 1 });
      expect(bad.status).toBe(422);
      expect(bad.body.error.code).toBe("routes.invalid_attachment_policy");
      expect(bad.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual([
        "/attachment_policy/allowed_prefixes/1",
        "/attachment_policy/extra",
        "/attachment_policy/on_disallowed",
      ]);
      const ok = await route("partial", { on_mismatch: "deliver" });
      expect(ok.status, ok.text).toBe(201);
      expect(ok.body.attachment_policy).toEqual({
        allowed_prefixes: ["application/", "image/", "text/"],
        on_disallowed: "discard",
        on_mismatch: "deliver",
      });
      const plain = await route("plain");
      expect(plain.body.attachment_policy).toBeNull();
      // Back to the service-wide policy, then remove both so the next test starts clean.
      const cleared = await app.request("PATCH", `/v1/routes/${ok.body.id}`, {
        apiKey: project.apiKey,
        body: { attachment_policy: null },
      });
      expect(cleared.body.attachment_policy).toBeNull();
      for (const id of [ok.body.id, plain.body.id])
        await app.request("DELETE", `/v1/routes/${id}`, { apiKey: project.apiKey });
    });

    test("each route applies its own policy to the same message: discard, strip, deliver", async () => {
      const discard = (await route("service-wide")).body;
      const strip = (
        await route("strip", {
          allowed_prefixes: ["application/", "image/"],
          on_disallowed: "strip",
          on_mismatch: "strip",
        })
      ).body;
      const deliver = (
        await route("deliver", {
          allowed_prefixes: ["application/", "image/", "message/"],
          on_disallowed: "strip",
          on_mismatch: "deliver",
        })
      ).body;

      const r = await app.request("POST", "/v1/messages", {
        apiKey: project.apiKey,
        rawBody: mixedMail("<policy-1@example.com>"),
        headers: { "content-type": "message/rfc822" },
      });
      expect(r.status, r.text).toBe(202);
      const byRoute = new Map<string, string>(
        r.body.events.map((e: { route_id: string; id: string }) => [e.route_id, e.id]),
      );

      // The service-wide policy discards, as it always did.
      const discarded = await waitForEvent(app.ctx, byRoute.get(discard.id) as string, isSettled, 5000);
      expect(discarded.status).toBe("discarded");
      expect(discarded.lastError).toBe("mime_discard:disallowed_attachment_type");

      for (const id of [strip.id, deliver.id]) {
        expect((await waitForEvent(app.ctx, byRoute.get(id) as string, isSettled, 10_000)).status).toBe(
          "delivered",
        );
      }
      const bodies = rx.requests.map((q) => JSON.parse(q.text));
      const bodyOf = (routeId: string) => bodies.find((b) => b.event.route_id === routeId);
      const names = (b: { body: { attachments: { filename: string }[] } }) =>
        b.body.attachments.map((a) => a.filename).sort();
      expect(bodies).toHaveLength(2);
      expect(names(bodyOf(strip.id))).toEqual(["logo.png", "ok.pdf"]);
      expect(names(bodyOf(deliver.id))).toEqual(["fake.png", "fwd.eml", "logo.png", "ok.pdf"]);

      const stripDetail = await app.request("GET", `/v1/events/${byRoute.get(strip.id)}`, {
        apiKey: project.apiKey,
      });
      const notes = stripDetail.body.policy_notes as { filename: string; reason: string; action: string }[];
      expect(notes.map((n) => [n.filename, n.reason, n.action]).sort()).toEqual([
        ["clip.mp4", "disallowed_attachment_type", "strip"],
        ["fake.png", "content_type_mismatch", "strip"],
        ["fwd.eml", "disallowed_attachment_type", "strip"],
      ]);
      const deliverDetail = await app.request("GET", `/v1/events/${byRoute.get(deliver.id)}`, {
        apiKey: project.apiKey,
      });
      expect(
        deliverDetail.body.policy_notes
          .map((n: { filename: string; action: string }) => [n.filename, n.action])
          .sort(),
      ).toEqual([
        ["clip.mp4", "strip"],
        ["fake.png", "deliver"],
      ]);
      const discardDetail = await app.request("GET", `/v1/events/${byRoute.get(discard.id)}`, {
        apiKey: project.apiKey,
      });
      expect(discardDetail.body.policy_notes).toEqual([]);

      // A replay rebuilds the body: the stripped attachments stay out.
      rx.clear();
      const replay = await app.request("POST", `/v1/events/${byRoute.get(strip.id)}/replay`, {
        apiKey: project.apiKey,
      });
      expect(replay.status, replay.text).toBe(202);
      const [again] = await rx.waitForRequests(1, 10_000);
      expect(names(JSON.parse(again?.text ?? "{}"))).toEqual(["logo.png", "ok.pdf"]);

      // The dashboard's event page shows the notes and the Understanding panel.
      const pageHtml = await dashboardEventPage(app, project.apiKey, byRoute.get(strip.id) as string);
      expect(pageHtml).toContain('id="policy-notes"');
      expect(pageHtml).toContain("clip.mp4");
      expect(pageHtml).toContain('id="understanding"');
      expect(pageHtml).toContain('data-auth="spf"');
      expect(pageHtml).not.toContain('id="conflict-warning"');
    });
  });
}

/** Signs in to the dashboard with the API key, as a browser would, and fetches an event's page. */
async function dashboardEventPage(app: TestApp, apiKey: string, eventId: string): Promise<string> {
  const call = async (method: string, path: string, init: RequestInit = {}) =>
    app.api.handle(new Request(`http://localhost${path}`, { method, ...init }));
  const form = await call("GET", "/ui/sign-in");
  const anon = (form.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const csrf = (await form.text()).match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
  const signedIn = await call("POST", "/ui/sign-in", {
    headers: { "content-type": "application/x-www-form-urlencoded", cookie: anon },
    body: new URLSearchParams({ _csrf: csrf, api_key: apiKey }),
  });
  expect(signedIn.status).toBe(303);
  const cookie = (signedIn.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
  const res = await call("GET", `/ui/events/${eventId}`, { headers: { cookie } });
  expect(res.status).toBe(200);
  return res.text();
}
