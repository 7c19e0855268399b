/**
 * The project's intake policy and the hold queue, over real SMTP and the HTTP upload: a rejected
 * message is refused (550 5.7.1 after DATA, 422 ingest.rejected) and nothing is stored; a held one is
 * stored with `held` events that no worker delivers until released; release and discard, and their
 * refusal on events that are not held; the list filter.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedRoute, waitForEvent } from "../support/seed-events.ts";
import { RawSmtp } from "../support/smtp.ts";
import { FORM, signIn, uiCall } from "../support/ui-session.ts";

const POLICY = {
  reject: { subject_contains: "casino" },
  hold: { any: [{ from_domains: "unknown.example" }, { auto_kind_in: ["auto_reply"] }] },
};

for (const kind of testDbKinds()) {
  describe(`intake policy and hold queue (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let smtp: RunningSmtp;
    let route: SeededRoute;
    let inbound: string;

    const countMessages = async () => {
      const [row] = await app.ctx.database.rows<{ n: number | string }>(
        sql`select count(*) as n from messages where project_id = ${route.projectId}`,
      );
      return Number(row?.n);
    };
    const upload = (raw: Uint8Array<ArrayBuffer>) =>
      app.request("POST", "/v1/messages", {
        apiKey: route.apiKey,
        rawBody: raw,
        headers: { "content-type": "message/rfc822" },
      });

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      const project = await app.newProject();
      inbound = project.inbound;
      route = await seedRoute(app, { url: rx.url, project });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 100 });
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await smtp?.close();
      await rx?.close();
      await app?.close();
    });

    test("PATCH /v1/project sets the policy, GET shows it; invalid rules are refused with their paths", async () => {
      const before = await app.request("GET", "/v1/project", { apiKey: route.apiKey });
      expect(before.body.intake_policy).toEqual({ reject: null, hold: null });
      const bad = await app.request("PATCH", "/v1/project", {
        apiKey: route.apiKey,
        body: { intake_policy: { reject: { spam_score_gte: "high" }, hold: { nope: 1 }, other: {} } },
      });
      expect(bad.status).toBe(422);
      expect(bad.body.error.code).toBe("projects.invalid_intake_policy");
      expect(bad.body.error.details.map((d: { path: string }) => d.path)).toEqual([
        "/intake_policy/reject/spam_score_gte",
        "/intake_policy/hold/nope",
        "/intake_policy/other",
      ]);
      const set = await app.request("PATCH", "/v1/project", {
        apiKey: route.apiKey,
        body: { intake_policy: POLICY },
      });
      expect(set.status, set.text).toBe(200);
      expect(set.body.intake_policy).toEqual(POLICY);
      expect((await app.request("GET", "/v1/project", { apiKey: route.apiKey })).body.intake_policy).toEqual(
        POLICY,
      );
    });

    test("a rejected message: SMTP answers 550 5.7.1 after DATA, HTTP 422 ingest.rejected; nothing is stored", async () => {
      const stored = await countMessages();
      const c = await RawSmtp.connect(smtp.port);
      const [rcpt] = await c.envelope("spam@example.com", [inbound]);
      expect(rcpt?.code).toBe(250);
      const reply = await c.data(buildMail({ subject: "Win at the CASINO today" }));
      expect(reply.code).toBe(550);
      expect(reply.raw).toMatch(/^550 5\.7\.1 /);
      await c.quit();

      const http = await upload(buildMail({ subject: "casino bonus" }));
      expect(http.status).toBe(422);
      expect(http.body.error.code).toBe("ingest.rejected");
      expect(await countMessages()).toBe(stored);
      expect(rx.requests).toHaveLength(0);
    });

    test("a held message is stored with held events that are not delivered; release delivers, discard ends it", async () => {
      const first = await upload(buildMail({ from: "Who <who@unknown.example>", subject: "hold me 1" }));
      const second = await upload(buildMail({ from: "Who <who@unknown.example>", subject: "hold me 2" }));
      expect(first.status, first.text).toBe(202);
      expect(first.body.events[0].status).toBe("held");
      const heldA = first.body.events[0].id as string;
      const heldB = second.body.events[0].id as string;

      const listed = await app.request("GET", "/v1/events?status=held", { apiKey: route.apiKey });
      expect(listed.status).toBe(200);
      expect(listed.body.items.map((e: { id: string }) => e.id).sort()).toEqual([heldA, heldB].sort());
      // The worker polls every 100 ms: held events stay put.
      await Bun.sleep(600);
      expect(rx.requests).toHaveLength(0);

      const released = await app.request("POST", `/v1/events/${heldA}/release`, { apiKey: route.apiKey });
      expect(released.status, released.text).toBe(202);
      expect(released.body).toEqual({ queued: true, event_id: heldA });
      expect((await waitForEvent(app.ctx, heldA, isSettled, 10_000)).status).toBe("delivered");
      const [req] = await rx.waitForRequests(1);
      expect(JSON.parse(req?.text ?? "{}").message.subject).toBe("hold me 1");

      const discarded = await app.request("POST", `/v1/events/${heldB}/discard`, { apiKey: route.apiKey });
      expect(discarded.status, discarded.text).toBe(200);
      expect(discarded.body).toMatchObject({ id: heldB, status: "discarded", last_error: "held:discarded" });

      for (const [id, action] of [
        [heldA, "release"],
        [heldA, "discard"],
        [heldB, "release"],
      ] as const) {
        const again = await app.request("POST", `/v1/events/${id}/${action}`, { apiKey: route.apiKey });
        expect(again.status).toBe(409);
        expect(again.body.error.code).toBe("events.not_held");
      }
      const missing = await app.request("POST", "/v1/events/00000000-0000-4000-8000-000000000000/release", {
        apiKey: route.apiKey,
      });
      expect(missing.status).toBe(404);
      expect(rx.requests).toHaveLength(1);
    });

    test("over SMTP an auto-reply is held (a rule key on the understanding); removing the policy accepts again", async () => {
      const c = await RawSmtp.connect(smtp.port);
      await c.envelope("vacation@example.com", [inbound]);
      const reply = await c.data(
        buildMail({ subject: "Out of office", extraHeaders: ["Auto-Submitted: auto-replied"] }),
      );
      expect(reply.code).toBe(250);
      await c.quit();
      const [row] = await app.ctx.database.rows<{ status: string }>(
        sql`select e.status from events e join messages m on m.id = e.message_pk
            where m.project_id = ${route.projectId} and m.parsed->>'subject' = 'Out of office'`,
      );
      expect(row?.status).toBe("held");

      const cleared = await app.request("PATCH", "/v1/project", {
        apiKey: route.apiKey,
        body: { intake_policy: { reject: null, hold: null } },
      });
      expect(cleared.body.intake_policy).toEqual({ reject: null, hold: null });
      const ok = await upload(buildMail({ subject: "casino night, all welcome" }));
      expect(ok.status).toBe(202);
      expect(ok.body.events[0].status).toBe("pending");
    });

    test("the dashboard's Held view releases several at once and discards one, reporting what it did", async () => {
      await app.request("PATCH", "/v1/project", {
        apiKey: route.apiKey,
        body: { intake_policy: { hold: { subject_contains: "needs review" } } },
      });
      const ids: string[] = [];
      for (const n of [1, 2, 3]) {
        const r = await upload(buildMail({ subject: `needs review ${n}` }));
        ids.push(r.body.events[0].id);
      }
      const ui = await dashboard(app, route.apiKey);
      const detail = await ui.get(`/ui/events/${ids[0]}`);
      expect(detail.text).toContain(`action="/ui/held/release?id=${ids[0]}"`);
      expect(detail.text).toContain('id="discard"');
      const listed = await ui.get("/ui/held");
      for (const id of ids) expect(listed.text).toContain(`value="${id}"`);
      expect(listed.text).toContain("data-confirm=");

      const form = new URLSearchParams({ _csrf: ui.csrf });
      form.append("event_id", ids[0] as string);
      form.append("event_id", ids[1] as string);
      const released = await ui.post("/ui/held/release", form);
      expect(released.status).toBe(303);
      const after = await ui.get(released.headers.get("location") ?? "");
      expect(after.text).toContain("Released 2 events");

      const discarded = await ui.post(
        `/ui/held/discard?id=${ids[2]}`,
        new URLSearchParams({ _csrf: ui.csrf }),
      );
      expect(discarded.status).toBe(303);
      expect((await ui.get(discarded.headers.get("location") ?? "")).text).toContain("Discarded 1 event.");
      const again = await ui.post(`/ui/held/release?id=${ids[2]}`, new URLSearchParams({ _csrf: ui.csrf }));
      expect((await ui.get(again.headers.get("location") ?? "")).text).toContain("1 was no longer held");

      for (const id of ids.slice(0, 2))
        expect((await waitForEvent(app.ctx, id, isSettled, 10_000)).status).toBe("delivered");
      const gone = await waitForEvent(app.ctx, ids[2] as string, isSettled, 1000);
      expect(gone).toMatchObject({ status: "discarded", lastError: "held:discarded" });
      const left = (await ui.get("/ui/held")).text;
      for (const id of ids) expect(left).not.toContain(`value="${id}"`);
    });
  });
}

/** A dashboard session for the project's API key, signed in as a browser would. */
async function dashboard(app: TestApp, apiKey: string) {
  const { cookie, csrf } = await signIn(app, apiKey);
  return {
    csrf,
    get: (path: string) => uiCall(app, "GET", path, { headers: { cookie } }),
    post: (path: string, body: URLSearchParams) =>
      uiCall(app, "POST", path, { headers: { ...FORM, cookie }, body }),
  };
}
