/**
 * The worker's pipeline on PGlite and Postgres: an attempt's slot is free once its request is over,
 * while its result waits for the recorder, so a slow write of results does not hold up the next
 * requests; the results are all written once the database answers. Sealed secrets are opened once per
 * worker, not once per batch.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type SQL, sql } from "drizzle-orm";
import { PgDialect } from "drizzle-orm/pg-core";
import type { Database } from "../../services/db/client.ts";
import { createAttemptRecorder } from "../../services/delivery/record.ts";
import { startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

const dialect = new PgDialect();

/** `database` whose attempt-record statements wait until `release` is called. */
function holdingRecords(database: Database) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = 0;
  const wrapped: Database = {
    ...database,
    async rows<T>(query: SQL) {
      if (dialect.sqlToQuery(query).sql.includes("jsonb_to_recordset")) {
        held++;
        await released;
      }
      return database.rows<T>(query);
    },
  };
  return { database: wrapped, release, held: () => held };
}

for (const kind of testDbKinds()) {
  describe(`delivery pipeline (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
    }, 60_000);
    afterAll(async () => {
      await rx.close();
      await app.close();
    });

    test("a slot is free once its request is over: the next request goes while the result waits", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/hook` });
      const ids = await seedEvents(app.ctx, route, { count: 2, quiet: true });
      const hold = holdingRecords(app.ctx.database);
      // One slot: the second event's request can only go once the first's slot is given back.
      const worker = await startWorker(
        { ...app.ctx, database: hold.database },
        { concurrency: 1, pollMs: 50 },
      );
      try {
        const requests = await rx.waitForRequests(2, 10_000);
        expect(new Set(requests.map((r) => r.headers["x-idempotency-key"])).size).toBe(2);
        // Both requests went while the first result was still waiting for its write.
        expect(hold.held()).toBe(1);
        const before = await app.ctx.database.rows<{ n: number | string }>(
          sql`select count(*) as n from attempts where event_id = any(${`{${ids.join(",")}}`}::uuid[])`,
        );
        expect(Number(before[0]!.n)).toBe(0);
        hold.release();
        for (const id of ids) {
          const e = await waitForEvent(app.ctx, id, (x) => x.status === "delivered");
          expect(e.attempts).toBe(1);
          expect(e.leaseOwner).toBeNull();
        }
      } finally {
        hold.release();
        await worker.stop();
      }
    });

    test("a refill is claimed ahead of the free slots, and given back unsent when the worker stops", async () => {
      // A receiver that holds every request until told to answer.
      let answer!: () => void;
      const answered = new Promise<void>((resolve) => {
        answer = resolve;
      });
      let arrived = 0;
      const held = Bun.serve({
        hostname: "127.0.0.1",
        port: 0,
        async fetch(req) {
          await req.arrayBuffer();
          arrived++;
          await answered;
          return new Response("ok");
        },
      });
      const route = await seedRoute(app, { url: `http://127.0.0.1:${held.port}/held` });
      const ids = await seedEvents(app.ctx, route, { count: 10, quiet: true });
      const leased = async () =>
        (
          await app.ctx.database.rows<{ n: number | string }>(
            sql`select count(*) as n from events where lease_owner is not null and id = any(${`{${ids.join(",")}}`}::uuid[])`,
          )
        ).map((r) => Number(r.n))[0];
      // Four slots, and a refill of one more event held ahead.
      const worker = await startWorker(app.ctx, { concurrency: 4, pollMs: 50 });
      try {
        await eventually("four requests to arrive", async () => arrived, 10_000, { until: (n) => n === 4 });
        await eventually("the fifth event to be claimed ahead", leased, 10_000, { until: (n) => n === 5 });
        // The fifth waits for a slot: every slot is taken by a request the receiver holds.
        expect(arrived).toBe(4);
        const stopped = worker.stop();
        answer();
        await stopped;
        const rows = await app.ctx.database.rows<{
          status: string;
          attempts: number;
          lease_owner: string | null;
        }>(
          sql`select status, attempts, lease_owner from events where id = any(${`{${ids.join(",")}}`}::uuid[])`,
        );
        expect(rows.filter((r) => r.status === "delivered")).toHaveLength(4);
        // The one claimed ahead was given back without an attempt, like every event never claimed.
        expect(rows.filter((r) => r.status === "pending" && Number(r.attempts) === 0)).toHaveLength(6);
        expect(rows.every((r) => r.lease_owner === null)).toBe(true);
      } finally {
        answer();
        await worker.stop();
        held.stop(true);
        // the events never sent would go to the stopped receiver in the next tests
        await app.ctx.database.rows(sql`delete from events where id = any(${`{${ids.join(",")}}`}::uuid[])`);
      }
    });

    test("a worker opens each sealed secret once, and a changed header value anew", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/sealed`, headers: { "X-Tenant": "acme" } });
      let opens = 0;
      const box = app.ctx.box;
      const counting = {
        seal: (v: string) => box.seal(v),
        open(sealed: string) {
          opens++;
          return box.open(sealed);
        },
      };
      // Two slots and six events: at least three batches, each loading the endpoint and secret rows.
      const worker = await startWorker({ ...app.ctx, box: counting }, { concurrency: 2, pollMs: 50 });
      try {
        const tenants = async (ids: string[]) => {
          for (const id of ids) await waitForEvent(app.ctx, id, (x) => x.status === "delivered");
          const keys = new Set(
            (
              await app.ctx.database.rows<{ k: string }>(
                sql`select idempotency_key as k from events where id = any(${`{${ids.join(",")}}`}::uuid[])`,
              )
            ).map((r) => r.k),
          );
          return rx.requests
            .filter((r) => keys.has(r.headers["x-idempotency-key"] ?? ""))
            .map((r) => r.headers["x-tenant"]);
        };
        const first = await seedEvents(app.ctx, route, { count: 6 });
        expect(await tenants(first)).toEqual(Array(6).fill("acme"));
        // the signing secret and the one sealed header
        expect(opens).toBe(2);
        const patched = await app.request("PATCH", `/v1/endpoints/${route.endpointId}`, {
          apiKey: route.apiKey,
          body: { headers: { "X-Tenant": "globex" } },
        });
        expect(patched.status).toBe(200);
        const second = await seedEvents(app.ctx, route, { count: 2 });
        expect(await tenants(second)).toEqual(["globex", "globex"]);
        expect(opens).toBe(3);
      } finally {
        await worker.stop();
      }
    });

    test("the recorder counts results handed to it until they are written", async () => {
      const hold = holdingRecords(app.ctx.database);
      const recorder = createAttemptRecorder(hold.database, "nobody");
      expect(recorder.pending()).toBe(0);
      const record = (i: number) =>
        recorder.record({
          event_id: Bun.randomUUIDv7(),
          attempt_id: `atm_pending_${i}`,
          event_status: "delivered",
          last_error: null,
          next_attempt_at: null,
          body: "{}",
          body_content_type: "application/json",
          body_encoding: "utf8",
          trigger: "auto",
          attempt_status: "success",
          http_status: 200,
          latency_ms: 1,
          request_capture: { method: "POST", url: "http://x/", headers: {}, body_preview: "{}" },
          response_capture: { status: 200, headers: {}, body_preview: "", network_error: null },
          at: new Date().toISOString(),
        });
      // The first is written at once (and held here); the next two queue behind it.
      const written = [record(0), record(1), record(2)];
      expect(recorder.pending()).toBe(3);
      hold.release();
      // No event of those ids is leased to "nobody": nothing is written, and nothing is pending after.
      expect(await Promise.all(written)).toEqual([false, false, false]);
      expect(recorder.pending()).toBe(0);
    });
  });
}
