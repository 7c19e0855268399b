/**
 * Notifications about a state change are queued by the statement that makes the change, on PGlite and
 * Postgres: the `notification` job exists if and only if the change committed. Two injected failures
 * show it. After the commit point: waking the workers fails (as if the process died right after the
 * commit), and the job is there all the same. Inside the statement: a trigger refuses the job's
 * insert, and the change is not made either — the event stays due and is retried, its lease expiring
 * as after a crash — instead of committing without its notification. No worker runs: the tests drive
 * claims and attempts themselves and read the `jobs` table.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { recordCircuitOutcome } from "../../services/delivery/circuit.ts";
import { claimDueEvents } from "../../services/delivery/claim.ts";
import { attemptEvent, loadAttemptInputs, prepareAttemptLoads } from "../../services/delivery/deliver.ts";
import { createAttemptRecorder } from "../../services/delivery/record.ts";
import { JOBS_NOTIFICATION } from "../../services/resources/replay.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { type SeededRoute, seedEvents, seedRoute } from "../support/seed-events.ts";

const ALL_TYPES = ["event.dead", "endpoint.circuit_opened", "endpoint.circuit_closed", "message.held"];

for (const kind of testDbKinds()) {
  describe(`notification durability (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let failWake = false;
    let wakesRefused = 0;

    beforeAll(async () => {
      app = await createTestApp(kind, { env: { RETRY_SCHEDULE: "0", ENDPOINT_FAILURE_THRESHOLD: "2" } });
      rx = await startReceiver();
      // The failure after the commit point: the jobs wake-up throws, as if the process died there.
      const database = app.ctx.database;
      const notify = database.notify.bind(database);
      database.notify = async (channel, payload) => {
        if (failWake && payload === JOBS_NOTIFICATION) {
          wakesRefused++;
          throw new Error("injected: died after the commit");
        }
        return notify(channel, payload);
      };
      await app.ctx.database.rows(
        sql.raw(`
        create or replace function test_refuse_notification() returns trigger language plpgsql as $$
        begin raise exception 'injected: notification insert refused'; end $$`),
      );
    }, 180_000);
    afterAll(async () => {
      await rx.close();
      await app.close();
    });

    /** A project subscribed to every state-change type, and a route of it to `rx`. */
    async function subscribedRoute(): Promise<SeededRoute> {
      const route = await seedRoute(app, { url: `${rx.url}/hook` });
      const sk = await app.request("POST", "/v1/signing-secrets", { apiKey: route.apiKey, body: {} });
      const set = await app.request("PATCH", "/v1/project", {
        apiKey: route.apiKey,
        body: {
          notifications: { endpoint_id: route.endpointId, signing_secret_kid: sk.body.kid, types: ALL_TYPES },
        },
      });
      expect(set.status).toBe(200);
      return route;
    }

    async function notificationsOf(projectId: string) {
      const rows = await app.ctx.database.rows<{ payload: { type: string; data: Record<string, unknown> } }>(
        sql`select payload from jobs where kind = 'notification' and project_id = ${projectId} order by created_at`,
      );
      return rows.map((r) => (typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload));
    }

    async function eventRow(id: string) {
      const [row] = await app.ctx.database.rows<{
        status: string;
        attempts: number;
        lease_owner: string | null;
      }>(sql`select status, attempts, lease_owner from events where id = ${id}::uuid`);
      return row;
    }

    async function refuseNotifications(on: boolean) {
      await app.ctx.database.rows(
        sql.raw(
          on
            ? `create trigger test_refuse_notification before insert on jobs for each row
                when (new.kind = 'notification') execute function test_refuse_notification()`
            : "drop trigger if exists test_refuse_notification on jobs",
        ),
      );
    }

    /** Claims the (only) due event and makes one attempt of it as worker `owner`. */
    async function attemptOnce(owner: string) {
      const [event] = await claimDueEvents(app.ctx.database, {
        owner,
        limit: 1,
        leaseMs: 60_000,
        now: app.ctx.clock.now(),
      });
      if (!event) throw new Error("nothing due");
      const inputs = await loadAttemptInputs(prepareAttemptLoads(app.ctx.database.db), [event], app.ctx);
      return {
        event,
        attempt: () =>
          attemptEvent(app.ctx, event, inputs, owner, createAttemptRecorder(app.ctx.database, owner)),
      };
    }

    test("event.dead: queued with the attempt that gives up, even when the wake-up after the commit fails", async () => {
      const route = await subscribedRoute();
      rx.setBehaviour({ status: 400, body: "bad payload" });
      const [id] = await seedEvents(app.ctx, route, { quiet: true });
      failWake = true;
      wakesRefused = 0;
      try {
        const report = await (await attemptOnce("w1")).attempt();
        expect(report).toMatchObject({ kind: "attempted", status: "dead", recorded: true });
      } finally {
        failWake = false;
      }
      expect(wakesRefused).toBe(1);
      expect((await eventRow(id as string))?.status).toBe("dead");
      const queued = await notificationsOf(route.projectId);
      expect(queued).toHaveLength(1);
      expect(queued[0]).toMatchObject({
        type: "event.dead",
        data: { event_id: id, route_id: route.routeId, last_error: "http 400: bad payload", attempts: 1 },
      });
    });

    test("event.dead: an attempt whose lease was taken over writes neither the death nor its notification", async () => {
      const route = await subscribedRoute();
      rx.setBehaviour({ status: 400, body: "bad payload" });
      const [id] = await seedEvents(app.ctx, route, { quiet: true });
      const { attempt } = await attemptOnce("w1");
      await app.ctx.database.rows(sql`update events set lease_owner = 'w2' where id = ${id}::uuid`);
      expect(await attempt()).toMatchObject({ kind: "attempted", status: "dead", recorded: false });
      expect((await eventRow(id as string))?.status).toBe("pending");
      expect(await notificationsOf(route.projectId)).toEqual([]);
    });

    test("event.dead: when the notification cannot be written, the event is not given up either; the retry gives it up with it", async () => {
      const route = await subscribedRoute();
      rx.setBehaviour({ status: 400, body: "bad payload" });
      const [id] = await seedEvents(app.ctx, route, { quiet: true });
      await refuseNotifications(true);
      try {
        const { attempt } = await attemptOnce("w1");
        await expect(attempt()).rejects.toThrow();
      } finally {
        await refuseNotifications(false);
      }
      // Nothing of the attempt was written: the event waits for its lease to expire, as after a crash.
      const stuck = await eventRow(id as string);
      expect(stuck).toMatchObject({ status: "pending", attempts: 0, lease_owner: "w1" });
      expect(await notificationsOf(route.projectId)).toEqual([]);
      await app.ctx.database.rows(
        sql`update events set lease_expires_at = now() - interval '1 second' where id = ${id}::uuid`,
      );
      expect(await (await attemptOnce("w2")).attempt()).toMatchObject({ status: "dead", recorded: true });
      expect((await notificationsOf(route.projectId)).map((n) => n.type)).toEqual(["event.dead"]);
    });

    test("event.dead without an attempt (route deleted): queued by the statement that ends the event", async () => {
      const route = await subscribedRoute();
      const [id] = await seedEvents(app.ctx, route, { quiet: true });
      const del = await app.request("DELETE", `/v1/routes/${route.routeId}`, { apiKey: route.apiKey });
      expect(del.status).toBeLessThan(300);
      const { attempt } = await attemptOnce("w1");
      failWake = true;
      try {
        expect(await attempt()).toMatchObject({ kind: "dead_without_attempt", recorded: true });
      } finally {
        failWake = false;
      }
      expect((await eventRow(id as string))?.status).toBe("dead");
      const queued = await notificationsOf(route.projectId);
      expect(queued.map((n) => [n.type, n.data.event_id])).toEqual([["event.dead", id]]);
    });

    test("endpoint.circuit_opened / _closed: queued by the transition's statement, or neither happens", async () => {
      const route = await subscribedRoute();
      const [ep] = await app.ctx.database.rows<{ url: string }>(
        sql`select url from endpoints where id = ${route.endpointId}`,
      );
      const view = (state: string, failures: number) => ({
        id: route.endpointId,
        url: ep?.url ?? "",
        circuitState: state,
        consecutiveFailures: failures,
      });
      const state = async () =>
        (
          await app.ctx.database.rows<{ circuit_state: string; consecutive_failures: number }>(
            sql`select circuit_state, consecutive_failures from endpoints where id = ${route.endpointId}`,
          )
        )[0];
      expect(await recordCircuitOutcome(app.ctx, view("closed", 0), "retryable")).toBeNull();
      // The opening transition cannot write its notification: the endpoint stays closed, its count unchanged.
      await refuseNotifications(true);
      try {
        await expect(recordCircuitOutcome(app.ctx, view("closed", 1), "retryable")).rejects.toThrow();
      } finally {
        await refuseNotifications(false);
      }
      expect(await state()).toMatchObject({ circuit_state: "closed", consecutive_failures: 1 });
      expect(await notificationsOf(route.projectId)).toEqual([]);

      failWake = true;
      try {
        expect(await recordCircuitOutcome(app.ctx, view("closed", 1), "retryable")).toMatchObject({
          from: "closed",
          to: "open",
        });
        expect(await recordCircuitOutcome(app.ctx, view("open", 2), "success")).toMatchObject({
          from: "open",
          to: "closed",
        });
      } finally {
        failWake = false;
      }
      expect(await state()).toMatchObject({ circuit_state: "closed", consecutive_failures: 0 });
      const queued = await notificationsOf(route.projectId);
      expect(queued.map((n) => n.type)).toEqual(["endpoint.circuit_opened", "endpoint.circuit_closed"]);
      expect(queued[0]?.data).toMatchObject({ endpoint_id: route.endpointId, consecutive_failures: 2 });
      expect(queued[1]?.data).toMatchObject({ endpoint_id: route.endpointId, consecutive_failures: 0 });
      expect(Number.isNaN(Date.parse(String(queued[0]?.data.since)))).toBe(false);
    });

    test("message.held: queued by the statement storing the message; a duplicate stores and queues nothing", async () => {
      const route = await subscribedRoute();
      const policy = await app.request("PATCH", "/v1/project", {
        apiKey: route.apiKey,
        body: { intake_policy: { hold: { subject_contains: "hold" } } },
      });
      expect(policy.status).toBe(200);
      const mail = buildMail({ subject: "hold this" });
      failWake = true;
      try {
        const stored = await postMessage(app, route.apiKey, mail);
        expect(stored.status).toBe(202);
        const resend = await postMessage(app, route.apiKey, mail);
        expect(resend.body.duplicate).toBe(true);
      } finally {
        failWake = false;
      }
      const [msg] = await app.ctx.database.rows<{ id: string }>(
        sql`select id from messages where project_id = ${route.projectId}`,
      );
      const queued = await notificationsOf(route.projectId);
      expect(queued.map((n) => [n.type, n.data.msg_id])).toEqual([["message.held", msg?.id]]);
    });
  });
}
