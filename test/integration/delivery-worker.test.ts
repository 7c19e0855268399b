/**
 * The delivery worker end to end against the local receiver, on PGlite and Postgres: outbound request
 * shape and both signature schemes (checked with independent code), each retryable and terminal class,
 * exhaustion, Retry-After, deleted routes, mapper runtime errors.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { eq, sql } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { attempts, endpoints, events } from "../../services/db/schema/index.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { sampleMessage } from "../support/messages.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

/** Independent check of X-Service-Signature: HMAC-SHA256 keyed with the whole secret string. */
function serviceSignatureValid(header: string, secret: string, body: string, kid: string): boolean {
  const parts = Object.fromEntries(header.split(",").map((p) => p.trim().split("=", 2) as [string, string]));
  const t = header.match(/t=(\d+)/)?.[1];
  const v1 = header.match(/v1=([A-Za-z0-9+/=]+)/)?.[1];
  if (!t || !v1 || parts.kid !== kid) return false;
  const expected = createHmac("sha256", secret).update(`${t}.${body}`).digest("base64");
  return expected === v1 && Math.abs(Date.now() / 1000 - Number(t)) < 300;
}

async function attemptRows(app: TestApp, eventId: string) {
  return app.ctx.database.db
    .select()
    .from(attempts)
    .where(eq(attempts.eventId, eventId))
    .orderBy(attempts.number);
}

for (const kind of testDbKinds()) {
  describe(`delivery worker (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let route: SeededRoute;

    beforeAll(async () => {
      app = await createTestApp(kind, { env: { RETRY_SCHEDULE: "0,10ms,10ms,10ms,10ms" } });
      rx = await startReceiver();
      route = await seedRoute(app, {
        url: `${rx.url}/hook?x=1`,
        headers: { "X-Tenant": "acme", Authorization: "Bearer s3cret" },
        secretHeaders: ["authorization"],
        timeoutS: 1,
      });
      worker = await startWorker(app.ctx, { concurrency: 8, pollMs: 50 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    /** Seeds one event whose receiver answers per `behaviours` (by request order for this event). */
    async function deliverOne(
      behaviours: Parameters<Receiver["enqueue"]>,
      settle: (e: { status: string; attempts: number }) => boolean = isSettled,
    ) {
      rx.clear();
      rx.setBehaviour({});
      rx.enqueue(...behaviours);
      const [id] = await seedEvents(app.ctx, route);
      const event = await waitForEvent(app.ctx, id as string, settle);
      return {
        id: id as string,
        event,
        requests: rx.requests.slice(),
        rows: await attemptRows(app, id as string),
      };
    }

    test("a 2xx delivers the event with one signed attempt carrying the documented headers", async () => {
      const { event, requests, rows } = await deliverOne([{ status: 204 }]);
      expect(event.status).toBe("delivered");
      expect(event.attempts).toBe(1);
      expect(event.lastError).toBeNull();
      expect(event.nextAttemptAt).toBeNull();
      expect(event.leaseOwner).toBeNull();
      expect(requests).toHaveLength(1);
      const req = requests[0]!;
      expect(req.method).toBe("POST");
      expect(req.path).toBe("/hook?x=1");
      expect(req.headers["content-type"]).toBe("application/json");
      expect(req.headers["user-agent"]).toMatch(/^mailhook\/\d+\.\d+\.\d+$/);
      expect(req.headers["x-idempotency-key"]).toBe(event.idempotencyKey);
      expect(req.headers["x-tenant"]).toBe("acme");
      expect(req.headers.authorization).toBe("Bearer s3cret");
      const body = JSON.parse(req.text);
      expect(body.schema).toEqual({ name: "generic", version: "1" });
      expect(body.event.id).toBe(event.id);
      expect(event.body).toBe(req.text);
      // Both schemes, verified by code that does not share ours.
      expect(
        serviceSignatureValid(req.headers["x-service-signature"]!, route.secret, req.text, route.kid),
      ).toBe(true);
      const wh = new Webhook(route.secret.slice("whsec_".length));
      expect(() => wh.verify(req.text, req.headers)).not.toThrow();
      expect(req.headers["webhook-id"]).toBe(event.idempotencyKey);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.status).toBe("success");
      expect(rows[0]!.trigger).toBe("auto");
      expect(rows[0]!.httpStatus).toBe(204);
      expect(rows[0]!.requestCapture.headers.Authorization).toBe("***");
      expect(rows[0]!.requestCapture.headers["X-Service-Signature"]).toBe("***");
    });

    test("each attempt's request capture shows the body it sent; a body over 16 KiB shows its first 16 KiB", async () => {
      const { event, rows, requests } = await deliverOne([{ status: 503 }, { status: 200 }]);
      expect(rows).toHaveLength(2);
      for (const [i, row] of rows.entries()) {
        expect(row.requestCapture.body_preview).toBe(requests[i]!.text);
        expect(row.requestCapture.body_preview).toBe(event.body as string);
      }

      rx.clear();
      rx.setBehaviour({});
      rx.enqueue({ status: 200 });
      const [big] = await seedEvents(app.ctx, route, {
        message: (n) => sampleMessage(n, { text: "é".repeat(20_000) }),
      });
      const delivered = await waitForEvent(app.ctx, big as string, isSettled);
      const [row] = await attemptRows(app, big as string);
      expect(delivered.body!.length).toBeGreaterThan(20_000);
      expect(Buffer.byteLength(row!.requestCapture.body_preview)).toBeLessThanOrEqual(16_384);
      expect(delivered.body!.startsWith(row!.requestCapture.body_preview)).toBe(true);
    });

    test("custom headers cannot override the service's own headers", async () => {
      const [ep] = await app.ctx.database.db
        .select()
        .from(endpoints)
        .where(eq(endpoints.id, route.endpointId));
      const saved = ep!.headersSealed;
      await app.ctx.database.db
        .update(endpoints)
        .set({
          headersSealed: {
            ...saved,
            "user-agent": app.ctx.box.seal("evil"),
            "X-Idempotency-Key": app.ctx.box.seal("x"),
          },
        })
        .where(eq(endpoints.id, route.endpointId));
      try {
        const { requests, event } = await deliverOne([{}]);
        expect(requests[0]!.headers["user-agent"]).toMatch(/^mailhook\//);
        expect(requests[0]!.headers["x-idempotency-key"]).toBe(event.idempotencyKey);
      } finally {
        await app.ctx.database.db
          .update(endpoints)
          .set({ headersSealed: saved })
          .where(eq(endpoints.id, route.endpointId));
      }
    });

    const retryable: [string, Parameters<Receiver["enqueue"]>[0], RegExp][] = [
      ["408", { status: 408 }, /^http 408/],
      ["409", { status: 409 }, /^http 409/],
      ["425", { status: 425 }, /^http 425/],
      ["429", { status: 429 }, /^http 429/],
      ["500", { status: 500, body: "boom" }, /^http 500: boom$/],
      ["502", { status: 502 }, /^http 502/],
      ["503", { status: 503 }, /^http 503/],
      ["a connection reset", { reset: true }, /^connection_reset|^network_error/],
      ["a timeout", { delayMs: 1500 }, /^timeout after 1000 ms$/],
    ];
    for (const [name, behaviour, errorPattern] of retryable) {
      test(`${name} is retried and the next success delivers`, async () => {
        const { event, rows } = await deliverOne([behaviour, { status: 200 }]);
        expect(event.status).toBe("delivered");
        expect(event.attempts).toBe(2);
        expect(rows.map((r) => r.status)).toEqual(["failed", "success"]);
        expect(rows.map((r) => r.number)).toEqual([1, 2]);
        const first = rows[0]!;
        const shown =
          first.responseCapture.network_error ??
          `http ${first.httpStatus}: ${first.responseCapture.body_preview}`;
        expect(shown).toMatch(errorPattern);
      });
    }

    for (const status of [400, 401, 403, 404, 410, 422, 301, 302, 307]) {
      test(`${status} is terminal: dead after one attempt`, async () => {
        const { event, rows, requests } = await deliverOne([
          { status, body: "nope", headers: status < 400 ? { location: "http://elsewhere.example/" } : {} },
        ]);
        expect(event.status).toBe("dead");
        expect(event.attempts).toBe(1);
        expect(requests).toHaveLength(1);
        expect(rows).toHaveLength(1);
        expect(event.lastError).toMatch(new RegExp(`^http ${status}: `));
        if (status < 400) expect(event.lastError).toContain("redirects are not followed");
      });
    }

    test("a retryable failure on every attempt ends dead after 6 attempts", async () => {
      rx.clear();
      rx.setBehaviour({ status: 503, body: "down" });
      const [id] = await seedEvents(app.ctx, route);
      const event = await waitForEvent(app.ctx, id!, isSettled);
      rx.setBehaviour({});
      expect(event.status).toBe("dead");
      expect(event.attempts).toBe(6);
      expect(event.lastError).toBe("http 503: down (gave up after 6 attempts)");
      expect(rx.requests).toHaveLength(6);
      expect((await attemptRows(app, id!)).map((r) => r.number)).toEqual([1, 2, 3, 4, 5, 6]);
    });

    test("Retry-After on 429 is honoured for a short wait and capped for a long one", async () => {
      const short = await deliverOne([{ status: 429, headers: { "retry-after": "1" } }, {}]);
      expect(short.event.status).toBe("delivered");
      const gap = short.requests[1]!.receivedAt - short.requests[0]!.receivedAt;
      expect(gap).toBeGreaterThanOrEqual(1000);

      rx.clear();
      rx.enqueue({ status: 503, headers: { "retry-after": "86400" } });
      const [id] = await seedEvents(app.ctx, route);
      const waiting = await waitForEvent(app.ctx, id!, (e) => e.status === "retry");
      const waitMs = waiting.nextAttemptAt!.getTime() - waiting.updatedAt.getTime();
      // schedule 0 → cap max(2 × 0, 60 s), plus at most 10% jitter never above the cap
      expect(waitMs).toBeGreaterThan(50_000);
      expect(waitMs).toBeLessThanOrEqual(60_000);
      await app.ctx.database.db.delete(events).where(eq(events.id, id!));
    });

    test("an event whose route was deleted ends dead without an attempt", async () => {
      const other = await seedRoute(app, {
        url: rx.url,
        project: { id: route.projectId, apiKey: route.apiKey },
      });
      const [id] = await seedEvents(app.ctx, other, { nextAttemptAt: null, quiet: true });
      const del = await app.request("DELETE", `/v1/routes/${other.routeId}`, { apiKey: route.apiKey });
      expect(del.status).toBe(204);
      rx.clear();
      await app.ctx.database.db.update(events).set({ nextAttemptAt: new Date() }).where(eq(events.id, id!));
      await app.ctx.wakeWorkers();
      const event = await waitForEvent(app.ctx, id!, isSettled);
      expect(event.status).toBe("dead");
      expect(event.lastError).toMatch(/^route_deleted: route rt_/);
      expect(event.attempts).toBe(0);
      expect(rx.requests).toHaveLength(0);
    });

    test("a custom_json mapper runtime error ends the event dead with mapper:<code> and no attempt", async () => {
      const mapped = await seedRoute(app, {
        url: rx.url,
        project: { id: route.projectId, apiKey: route.apiKey },
        pipeline: {
          steps: [
            {
              name: "map.custom_json",
              args: { version: "v1", output: [{ var: "message.text" }, { var: "message.text" }] },
            },
          ],
        },
      });
      rx.clear();
      const [big] = await seedEvents(app.ctx, mapped, {
        message: (i) => sampleMessage(i, { text: "x".repeat(600_000) }),
      });
      const event = await waitForEvent(app.ctx, big!, isSettled);
      expect(event.status).toBe("dead");
      expect(event.lastError).toBe("mapper:mapper.output_too_large");
      expect(event.attempts).toBe(0);
      expect(rx.requests).toHaveLength(0);

      const [small] = await seedEvents(app.ctx, mapped);
      const okEvent = await waitForEvent(app.ctx, small!, isSettled);
      expect(okEvent.status).toBe("delivered");
      expect(JSON.parse(rx.requests[0]!.text)).toEqual(["Hello 0", "Hello 0"]);
    });

    test("the claim statement leases each due event to one owner only", async () => {
      const { claimDueEvents } = await import("../../services/delivery/claim.ts");
      // Due only in the far future, so the running worker leaves them; we claim "then" as two owners.
      const far = Date.parse("3000-01-01T00:00:00Z");
      // A fresh endpoint: the suite's own has counted failures, which leaves its events to the gated claim.
      const fresh = await seedRoute(app, { url: `${rx.url}/hook` });
      const ids = await seedEvents(app.ctx, fresh, { count: 5, nextAttemptAt: new Date(far), quiet: true });
      const now = new Date(far + 1000);
      const a = await claimDueEvents(app.ctx.database, { owner: "A", limit: 3, leaseMs: 60_000, now });
      const b = await claimDueEvents(app.ctx.database, { owner: "B", limit: 10, leaseMs: 60_000, now });
      const mine = (xs: { id: string }[]) => xs.map((x) => x.id).filter((x) => ids.includes(x));
      expect(mine(a).length + mine(b).length).toBe(5);
      expect(new Set([...mine(a), ...mine(b)]).size).toBe(5);
      // An expired lease is claimable again.
      const c = await claimDueEvents(app.ctx.database, {
        owner: "C",
        limit: 10,
        leaseMs: 1,
        now: new Date(far + 120_000),
      });
      expect(mine(c).sort()).toEqual([...ids].sort());
      await app.ctx.database.rows(
        sql`delete from events where id in (${sql.join(
          ids.map((i) => sql`${i}::uuid`),
          sql`, `,
        )})`,
      );
    });

    test("the claim writes the owner and lease time as given, and leaves no setting behind", async () => {
      const { claimDueEvents } = await import("../../services/delivery/claim.ts");
      const far = Date.parse("3000-02-01T00:00:00Z");
      const fresh = await seedRoute(app, { url: `${rx.url}/hook` });
      const ids = await seedEvents(app.ctx, fresh, { count: 3, nextAttemptAt: new Date(far), quiet: true });
      // On Postgres the claim's values are written into its text: quotes and backslashes must survive.
      const owner = `host\\'s:1:'; drop table events; --\\'`;
      const now = new Date(far + 1000);
      const got = await claimDueEvents(app.ctx.database, { owner, limit: 2.7, leaseMs: 60_000, now });
      const claimed = got.filter((e) => ids.includes(e.id));
      expect(claimed).toHaveLength(2);
      expect(claimed[0]).toMatchObject({ routeId: fresh.routeId, attempts: 0, status: "pending" });
      expect(claimed[0]!.createdAt).toBeInstanceOf(Date);
      expect(claimed[0]!.routeSnapshot.endpoint_id).toBe(fresh.endpointId);
      const rows = await app.ctx.database.rows<{ lease_owner: string; until: string }>(
        sql`select lease_owner, to_char(lease_expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as until
            from events where id = any(${`{${claimed.map((e) => e.id).join(",")}}`}::uuid[])`,
      );
      expect(rows.map((r) => r.lease_owner)).toEqual([owner, owner]);
      expect(rows.map((r) => r.until)).toEqual([0, 1].map(() => new Date(far + 61_000).toISOString()));
      // `set local` ends with the claim: every pooled connection plans with the defaults afterwards.
      const settings = await Promise.all(
        Array.from({ length: 12 }, () =>
          app.ctx.database.rows<{ s: string; c: string }>(
            sql`select current_setting('enable_sort') as s, current_setting('synchronous_commit') as c`,
          ),
        ),
      );
      expect(new Set(settings.map((r) => `${r[0]!.s}/${r[0]!.c}`))).toEqual(new Set(["on/on"]));
      await app.ctx.database.rows(sql`delete from events where id = any(${`{${ids.join(",")}}`}::uuid[])`);
    });
  });
}
