/**
 * Operational notifications end to end, on PGlite and Postgres, with loopback receivers: the settings
 * on `PATCH /v1/project`, each type arriving once and signed (checked with the `standardwebhooks`
 * library and an independent HMAC), a type not subscribed never sent, and a failing notification
 * endpoint retried, then given up, while deliveries carry on. Time is the injectable clock, moved
 * forward for circuit probes, notification retries and `route.silent`.
 */
import { afterAll, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { createHmac } from "node:crypto";
import { sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { NOTIFICATION_ATTEMPTS } from "../../services/delivery/notify.ts";
import { checkSilentRoutes } from "../../services/delivery/silent-routes.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type ReceivedRequest, type Receiver, startReceiver } from "../support/receiver.ts";
import { seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

/** Real time plus an offset the test moves: retries and leases still run, probes come due at will. */
function offsetClock() {
  let offset = 0;
  return {
    now: () => new Date(Date.now() + offset),
    advance(ms: number) {
      offset += ms;
    },
  };
}

/** Independent check of X-Service-Signature: HMAC-SHA256 keyed with the whole secret string. */
function serviceSignatureValid(header: string, secret: string, body: string, kid: string): boolean {
  const t = header.match(/t=(\d+)/)?.[1];
  const v1 = header.match(/v1=([A-Za-z0-9+/=]+)/)?.[1];
  if (!t || !v1 || !header.includes(`kid=${kid}`)) return false;
  return createHmac("sha256", secret).update(`${t}.${body}`).digest("base64") === v1;
}

interface Subscriber {
  projectId: string;
  apiKey: string;
  rx: Receiver;
  kid: string;
  secret: string;
  endpointId: string;
}

for (const kind of testDbKinds()) {
  describe(`notifications (${kind})`, () => {
    let app: TestApp;
    let worker: RunningWorker;
    const clock = offsetClock();
    const receivers: Receiver[] = [];

    beforeAll(async () => {
      app = await createTestApp(kind, {
        env: { RETRY_SCHEDULE: "0,10ms", ENDPOINT_FAILURE_THRESHOLD: "2" },
        clock,
      });
      worker = await startWorker(app.ctx, { concurrency: 4, pollMs: 50, silentCheckMs: 100 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      for (const rx of receivers) await rx.close();
      await app.close();
    });

    async function receiver(): Promise<Receiver> {
      const rx = await startReceiver();
      receivers.push(rx);
      return rx;
    }

    /** A project whose notifications go to a fresh receiver, subscribed to `types`. */
    async function subscriber(
      types: string[],
      project?: { id: string; apiKey: string },
    ): Promise<Subscriber> {
      const p = project ?? (await app.newProject());
      const rx = await receiver();
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: p.apiKey,
        body: { url: `${rx.url}/notify`, timeout_s: 2 },
      });
      const sk = await app.request("POST", "/v1/signing-secrets", { apiKey: p.apiKey, body: {} });
      const set = await app.request("PATCH", "/v1/project", {
        apiKey: p.apiKey,
        body: { notifications: { endpoint_id: ep.body.id, signing_secret_kid: sk.body.kid, types } },
      });
      expect(set.status).toBe(200);
      return {
        projectId: p.id,
        apiKey: p.apiKey,
        rx,
        kid: sk.body.kid,
        secret: sk.body.secret,
        endpointId: ep.body.id,
      };
    }

    /** Waits for a notification of `type`; checks both signatures and returns the parsed body. */
    async function received(sub: Subscriber, type: string) {
      const req = await eventually(
        `a ${type} notification`,
        () => sub.rx.requests.find((r) => JSON.parse(r.text).type === type),
        10_000,
      );
      return verified(sub, req);
    }

    function verified(sub: Subscriber, req: ReceivedRequest) {
      const body = JSON.parse(req.text);
      expect(req.method).toBe("POST");
      expect(req.headers["content-type"]).toBe("application/json");
      expect(req.headers["webhook-id"]).toBe(body.id);
      // Signed at the test clock's time: the library checks the timestamp against that time.
      const wh = new Webhook(sub.secret.slice("whsec_".length));
      setSystemTime(new Date(Number(req.headers["webhook-timestamp"]) * 1000));
      try {
        expect(() => wh.verify(req.text, req.headers)).not.toThrow();
      } finally {
        setSystemTime();
      }
      expect(serviceSignatureValid(req.headers["x-service-signature"]!, sub.secret, req.text, sub.kid)).toBe(
        true,
      );
      expect(Object.keys(body).sort()).toEqual(["created_at", "data", "id", "type"]);
      expect(body.id).toMatch(/^ntf_/);
      return body;
    }

    const ofType = (sub: Subscriber, type: string) =>
      sub.rx.requests.filter((r) => JSON.parse(r.text).type === type);

    test("PATCH /v1/project validates and stores the settings; GET shows them; null turns them off", async () => {
      const p = await app.newProject();
      const other = await app.newProject();
      const otherEp = await app.request("POST", "/v1/endpoints", {
        apiKey: other.apiKey,
        body: { url: "http://127.0.0.1:9/x" },
      });
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: p.apiKey,
        body: { url: "http://127.0.0.1:9/n" },
      });
      const sk = await app.request("POST", "/v1/signing-secrets", { apiKey: p.apiKey, body: {} });
      const before = await app.request("GET", "/v1/project", { apiKey: p.apiKey });
      expect(before.body.notifications).toBeNull();

      const badShape = await app.request("PATCH", "/v1/project", {
        apiKey: p.apiKey,
        body: { notifications: { endpoint_id: ep.body.id, types: ["event.dead", "mail.lost"], extra: 1 } },
      });
      expect(badShape.status).toBe(422);
      expect(badShape.body.error.code).toBe("projects.invalid_notifications");
      expect(badShape.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual([
        "/notifications/extra",
        "/notifications/signing_secret_kid",
        "/notifications/types/1",
      ]);

      const foreign = await app.request("PATCH", "/v1/project", {
        apiKey: p.apiKey,
        body: {
          notifications: {
            endpoint_id: otherEp.body.id,
            signing_secret_kid: "kid_nope",
            types: ["event.dead"],
          },
        },
      });
      expect(foreign.status).toBe(422);
      expect(foreign.body.error.code).toBe("projects.invalid_notifications");
      expect(foreign.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual([
        "/notifications/endpoint_id",
        "/notifications/signing_secret_kid",
      ]);

      const settings = { endpoint_id: ep.body.id, signing_secret_kid: sk.body.kid, types: ["route.silent"] };
      const ok = await app.request("PATCH", "/v1/project", {
        apiKey: p.apiKey,
        body: { notifications: settings },
      });
      expect(ok.status).toBe(200);
      expect(ok.body.notifications).toEqual(settings);
      expect((await app.request("GET", "/v1/project", { apiKey: p.apiKey })).body.notifications).toEqual(
        settings,
      );
      // Setting one key leaves the other alone.
      const policy = await app.request("PATCH", "/v1/project", {
        apiKey: p.apiKey,
        body: { intake_policy: { reject: { subject_contains: "x" } } },
      });
      expect(policy.body.notifications).toEqual(settings);

      const off = await app.request("PATCH", "/v1/project", {
        apiKey: p.apiKey,
        body: { notifications: null },
      });
      expect(off.status).toBe(200);
      expect(off.body.notifications).toBeNull();
      expect((await app.request("GET", "/v1/project", { apiKey: p.apiKey })).body.notifications).toBeNull();
    });

    test("event.dead arrives once, signed, when delivery gives up; an unsubscribed type is not sent", async () => {
      const sub = await subscriber(["event.dead"]);
      const rx = await receiver();
      rx.setBehaviour({ status: 400, body: "bad payload" });
      const route = await seedRoute(app, {
        url: `${rx.url}/hook`,
        project: { id: sub.projectId, apiKey: sub.apiKey },
      });
      const [id] = await seedEvents(app.ctx, route);
      const event = await waitForEvent(app.ctx, id as string, (e) => e.status === "dead");
      const body = await received(sub, "event.dead");
      expect(body.data).toEqual({
        event_id: event.id,
        route_id: route.routeId,
        last_error: "http 400: bad payload",
        attempts: 1,
      });
      // Not subscribed: a held message raises nothing for this project.
      await app.request("PATCH", "/v1/project", {
        apiKey: sub.apiKey,
        body: { intake_policy: { hold: { subject_contains: "hold" } } },
      });
      expect((await postMessage(app, sub.apiKey, buildMail({ subject: "hold this" }))).status).toBe(202);
      await Bun.sleep(300);
      const queued = await app.ctx.database.rows<{ n: number }>(
        sql`select count(*)::int as n from jobs where kind = 'notification' and project_id = ${sub.projectId}`,
      );
      expect(Number(queued[0]?.n)).toBe(0);
      expect(sub.rx.requests).toHaveLength(1);
    });

    test("endpoint.circuit_opened and endpoint.circuit_closed arrive once each", async () => {
      const sub = await subscriber(["endpoint.circuit_opened", "endpoint.circuit_closed"]);
      const rx = await receiver();
      rx.setBehaviour({ status: 503 });
      const route = await seedRoute(app, {
        url: `${rx.url}/hook`,
        project: { id: sub.projectId, apiKey: sub.apiKey },
      });
      const [id] = await seedEvents(app.ctx, route);
      const opened = await received(sub, "endpoint.circuit_opened");
      expect(opened.data).toMatchObject({
        endpoint_id: route.endpointId,
        url: `${rx.url}/hook`,
        consecutive_failures: 2,
      });
      expect(Number.isNaN(Date.parse(opened.data.since))).toBe(false);
      // The probe is due a minute later: move the clock; the endpoint has recovered.
      rx.setBehaviour({ status: 200 });
      clock.advance(61_000);
      await waitForEvent(app.ctx, id as string, (e) => e.status === "delivered");
      const closed = await received(sub, "endpoint.circuit_closed");
      expect(closed.data).toMatchObject({ endpoint_id: route.endpointId, consecutive_failures: 0 });
      await Bun.sleep(200);
      expect(ofType(sub, "endpoint.circuit_opened")).toHaveLength(1);
      expect(ofType(sub, "endpoint.circuit_closed")).toHaveLength(1);
    });

    test("message.held (one per message) and message.rejected name the message and the rule", async () => {
      const sub = await subscriber(["message.held", "message.rejected"]);
      await seedRoute(app, {
        url: "http://127.0.0.1:9/unused",
        project: { id: sub.projectId, apiKey: sub.apiKey },
      });
      await seedRoute(app, {
        url: "http://127.0.0.1:9/unused2",
        project: { id: sub.projectId, apiKey: sub.apiKey },
      });
      const policy = { reject: { subject_contains: "casino" }, hold: { subject_contains: "hold" } };
      await app.request("PATCH", "/v1/project", { apiKey: sub.apiKey, body: { intake_policy: policy } });

      const heldMail = buildMail({ subject: "please hold", from: "Ann <ann@example.com>" });
      const stored = await postMessage(app, sub.apiKey, heldMail);
      expect(stored.status).toBe(202);
      const held = await received(sub, "message.held");
      expect(held.data).toMatchObject({
        project: sub.projectId,
        message_id: stored.body.message_id,
        rule: policy.hold,
        from: "ann@example.com",
        subject: "please hold",
      });
      const [row] = await app.ctx.database.rows<{ id: string }>(
        sql`select id from messages where project_id = ${sub.projectId} and message_id = ${stored.body.message_id}`,
      );
      expect(held.data.msg_id).toBe(row?.id);

      const refused = await postMessage(app, sub.apiKey, buildMail({ subject: "casino bonus" }));
      expect(refused.status).toBe(422);
      const rejected = await received(sub, "message.rejected");
      expect(rejected.data).toMatchObject({
        project: sub.projectId,
        rule: policy.reject,
        subject: "casino bonus",
      });
      expect(rejected.data.msg_id).toBeUndefined();

      // A resend of the held message is a duplicate: no second notification.
      const resend = await postMessage(app, sub.apiKey, heldMail);
      expect(resend.body.duplicate).toBe(true);
      await Bun.sleep(300);
      expect(ofType(sub, "message.held")).toHaveLength(1);
      expect(ofType(sub, "message.rejected")).toHaveLength(1);
    });

    test("route.silent: once per silence, again only after mail matched and stopped again", async () => {
      const sub = await subscriber(["route.silent"]);
      const rx = await receiver();
      const route = await seedRoute(app, {
        url: `${rx.url}/hook`,
        project: { id: sub.projectId, apiKey: sub.apiKey },
      });
      const bad = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: sub.apiKey,
        body: { expect_mail_within: "10s" },
      });
      expect(bad.status).toBe(422);
      const set = await app.request("PATCH", `/v1/routes/${route.routeId}`, {
        apiKey: sub.apiKey,
        body: { expect_mail_within: "1h" },
      });
      expect(set.status).toBe(200);
      expect(set.body.expect_mail_within).toBe("1h");

      expect(await checkSilentRoutes(app.ctx)).toBe(0); // created just now: not silent yet
      clock.advance(2 * 3_600_000);
      const first = await received(sub, "route.silent");
      expect(first.data).toEqual({
        route_id: route.routeId,
        name: "delivery test",
        expect_mail_within: "1h",
        last_matched_at: null,
      });
      // The job is deleted just after the receiver answered: moving the clock before that would expire
      // its lease and let another pump send it again (delivery is at least once).
      await eventually("the sent notification's job to be deleted", async () => {
        const [row] = await app.ctx.database.rows<{ n: number }>(
          sql`select count(*)::int as n from jobs where kind = 'notification' and project_id = ${sub.projectId}`,
        );
        return Number(row?.n) === 0;
      });
      clock.advance(2 * 3_600_000);
      expect(await checkSilentRoutes(app.ctx)).toBe(0);
      await Bun.sleep(300);
      expect(ofType(sub, "route.silent")).toHaveLength(1);

      // Mail matches again, then stops: one more.
      expect((await postMessage(app, sub.apiKey, buildMail({ subject: "hello" }))).status).toBe(202);
      const matchedAt = clock.now().getTime();
      clock.advance(2 * 3_600_000);
      await eventually("a second route.silent", () => ofType(sub, "route.silent").length === 2, 10_000);
      const second = verified(sub, ofType(sub, "route.silent")[1]!);
      expect(Math.abs(Date.parse(second.data.last_matched_at) - matchedAt)).toBeLessThan(5_000);
    });

    test("a notification endpoint that hangs does not hold up deliveries", async () => {
      const sub = await subscriber(["event.dead"]);
      sub.rx.setBehaviour({ delayMs: 1900 }); // under the endpoint's 2 s timeout
      const failing = await receiver();
      failing.setBehaviour({ status: 404 });
      const healthy = await receiver();
      const project = { id: sub.projectId, apiKey: sub.apiKey };
      const dead = await seedRoute(app, { url: `${failing.url}/hook`, project });
      const ok = await seedRoute(app, { url: `${healthy.url}/hook`, project });
      await seedEvents(app.ctx, dead);
      await sub.rx.waitForRequests(1);
      const [id] = await seedEvents(app.ctx, ok);
      await waitForEvent(app.ctx, id as string, (e) => e.status === "delivered");
      // Delivered while the notification's request was still waiting for its answer.
      expect(sub.rx.requests[0]!.closedAt).toBeUndefined();
      await eventually("the notification to be answered", () => sub.rx.requests[0]!.closedAt, 10_000);
      verified(sub, sub.rx.requests[0]!);
    });

    test("a failing notification endpoint is retried, then given up; deliveries carry on", async () => {
      const sub = await subscriber(["event.dead", "message.rejected"]);
      sub.rx.setBehaviour({ status: 500, body: "down" });
      const rx = await receiver();
      const route = await seedRoute(app, {
        url: `${rx.url}/hook`,
        project: { id: sub.projectId, apiKey: sub.apiKey },
      });
      await app.request("PATCH", "/v1/project", {
        apiKey: sub.apiKey,
        body: { intake_policy: { reject: { subject_contains: "casino" } } },
      });
      expect((await postMessage(app, sub.apiKey, buildMail({ subject: "casino" }))).status).toBe(422);
      const jobRow = async () =>
        (
          await app.ctx.database.rows<{
            status: string;
            attempts: number;
            last_error: string;
            lease_owner: string | null;
          }>(
            sql`select status, attempts, last_error, lease_owner from jobs where kind = 'notification' and project_id = ${sub.projectId}`,
          )
        )[0];
      for (let n = 1; n < NOTIFICATION_ATTEMPTS; n++) {
        // Move the clock only once the failed run has scheduled the next one.
        await eventually(`notification run ${n} recorded`, jobRow, 10_000, {
          until: (j) => j?.attempts === n && j.lease_owner === null,
        });
        expect(sub.rx.requests).toHaveLength(n);
        clock.advance(7 * 60_000);
      }
      const job = await eventually("the notification to be given up", jobRow, 10_000, {
        until: (j) => j?.status === "failed",
      });
      expect(job.attempts).toBe(NOTIFICATION_ATTEMPTS);
      expect(job.last_error).toBe(`http 500: down (gave up after ${NOTIFICATION_ATTEMPTS} attempts)`);
      clock.advance(30 * 60_000);
      await Bun.sleep(300);
      expect(sub.rx.requests).toHaveLength(NOTIFICATION_ATTEMPTS);
      // Every attempt was the same notification, signed afresh.
      expect(new Set(sub.rx.requests.map((r) => r.headers["webhook-id"])).size).toBe(1);
      // Deliveries to the project's route are unaffected.
      const [id] = await seedEvents(app.ctx, route);
      const event = await waitForEvent(app.ctx, id as string, (e) => e.status === "delivered");
      expect(event.attempts).toBe(1);
    });
  });
}
