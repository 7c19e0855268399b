/**
 * Operations endpoints on both databases: liveness, readiness (database + migrations), Prometheus
 * metrics (process counters and scrape-time gauges from the database), and the request-id access log.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { Elysia } from "elysia";
import { events } from "../../services/db/schema/index.ts";
import { manualClock } from "../../services/lib/clock.ts";
import type { Logger } from "../../services/lib/logger.ts";
import { metrics } from "../../services/lib/metrics.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { seedMessage } from "../support/seed-messages.ts";

interface LogLine {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

function recordingLogger(lines: LogLine[]): Logger {
  const log =
    (level: string) =>
    (msg: string, fields: Record<string, unknown> = {}) =>
      lines.push({ level, msg, fields });
  const logger: Logger = {
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    child: () => logger,
  };
  return logger;
}

/** Access lines are written after the response is sent, so tests poll for them; a timeout prints all lines. */
async function waitForLine(lines: LogLine[], pred: (l: LogLine) => boolean, timeoutMs = 2000) {
  const seen = await eventually("a matching log line", () => [...lines], timeoutMs, {
    until: (ls) => ls.some(pred),
  });
  return seen.find(pred) as LogLine;
}

/** Value of one sample line (`name{labels} value`) in an exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

for (const kind of testDbKinds()) {
  describe(`operations endpoints on ${kind}`, () => {
    let app: TestApp;
    const lines: LogLine[] = [];
    const clock = manualClock(new Date("2026-03-01T12:00:00Z"));

    beforeAll(async () => {
      app = await createTestApp(kind, {
        logger: recordingLogger(lines),
        clock,
        extraPlugins: [
          () =>
            new Elysia().get("/boom", () => {
              throw new Error("internal detail");
            }),
        ],
      });
    }, 30_000);
    afterAll(async () => {
      await app?.close();
    });

    test("/healthz answers 200 without touching anything", async () => {
      const r = await app.request("GET", "/healthz");
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual({ status: "ok" });
    });

    test("/readyz is 200 when the database answers and all migrations are applied", async () => {
      const r = await app.request("GET", "/readyz");
      expect(r.status, r.text).toBe(200);
      expect(r.body).toEqual({ status: "ok", checks: { database: "ok", migrations: "ok" } });
    });

    test("/readyz is 503 with migrations pending when the bookkeeping lacks one", async () => {
      const [last] = await app.ctx.database.rows<{ id: number }>(
        sql`select max(id) as id from drizzle.__drizzle_migrations`,
      );
      const saved = await app.ctx.database.rows<{ hash: string; created_at: string }>(
        sql`select hash, created_at from drizzle.__drizzle_migrations where id = ${last?.id}`,
      );
      await app.ctx.database.rows(sql`delete from drizzle.__drizzle_migrations where id = ${last?.id}`);
      try {
        const r = await app.request("GET", "/readyz");
        expect(r.status, r.text).toBe(503);
        expect(r.body.checks.migrations).toBe("pending");
      } finally {
        const row = saved[0];
        await app.ctx.database.rows(
          sql`insert into drizzle.__drizzle_migrations (hash, created_at) values (${row?.hash}, ${row?.created_at})`,
        );
      }
    });

    test("every response carries an X-Request-Id and one access line is logged for it", async () => {
      const r = await app.request("GET", "/v1/project", { apiKey: "nope" });
      expect(r.status).toBe(401);
      const id = r.headers.get("x-request-id");
      expect(id).toBeTruthy();
      const line = await waitForLine(lines, (l) => l.msg === "http request" && l.fields.req_id === id);
      expect(line.level).toBe("info");
      expect(line.fields).toMatchObject({ method: "GET", path: "/v1/project", status: 401 });
      expect(typeof line.fields.ms).toBe("number");
    });

    test("an unhandled error is logged with the request id the client got", async () => {
      const r = await app.request("GET", "/v1/boom");
      expect(r.status).toBe(500);
      expect(r.text).not.toContain("internal detail");
      const id = r.headers.get("x-request-id");
      const line = await waitForLine(lines, (l) => l.msg === "unhandled error" && l.fields.req_id === id);
      expect(line.level).toBe("error");
    });

    test("a well-formed incoming X-Request-Id is kept; a malformed one is replaced", async () => {
      const kept = await app.request("GET", "/healthz", { headers: { "x-request-id": "lb-1234abcd" } });
      expect(kept.headers.get("x-request-id")).toBe("lb-1234abcd");
      const replaced = await app.request("GET", "/healthz", { headers: { "x-request-id": 'a b"c' } });
      expect(replaced.headers.get("x-request-id")).not.toBe('a b"c');
    });

    test("download tokens in paths are not written to the log", async () => {
      const r = await app.request("GET", "/v1/attachments/secret-token-value");
      const id = r.headers.get("x-request-id");
      const line = await waitForLine(lines, (l) => l.msg === "http request" && l.fields.req_id === id);
      expect(line.fields.path).toBe("/v1/attachments/***");
      expect(JSON.stringify(lines)).not.toContain("secret-token-value");
    });

    test("ingest counts accepted and duplicate messages by source", async () => {
      const project = await app.newProject("ingest metrics");
      const raw = `From: a@example.com\r\nTo: ${project.inbound}\r\nMessage-ID: <ops-${kind}@test>\r\nSubject: hi\r\n\r\nhello\r\n`;
      const before = {
        accepted: metrics.ingestAccepted.get({ source: "api" }),
        duplicate: metrics.ingestDuplicates.get({ source: "api" }),
      };
      const post = (body: string) =>
        app.request("POST", "/v1/messages", {
          apiKey: project.apiKey,
          rawBody: body,
          headers: { "content-type": "message/rfc822" },
        });
      const commits = metrics.ingestCommits.get({});
      expect((await post(raw)).status).toBe(202);
      expect((await post(raw)).status).toBe(202);
      expect(metrics.ingestAccepted.get({ source: "api" }) - before.accepted).toBe(1);
      // The stored message went out in a group commit (the resend too, unless a fresh read of the
      // project found it stored first).
      const sent = metrics.ingestCommits.get({}) - commits;
      expect(sent).toBeGreaterThanOrEqual(1);
      expect(sent).toBeLessThanOrEqual(2);
      expect(metrics.ingestDuplicates.get({ source: "api" }) - before.duplicate).toBe(1);
      const text = (await app.request("GET", "/metrics")).text;
      expect(sample(text, 'mailhook_ingest_accepted_total{source="api"}')).toBeGreaterThanOrEqual(1);
      expect(sample(text, 'mailhook_ingest_commit_statements_total{retried="false"}')).toBeGreaterThanOrEqual(
        1,
      );
    });

    test("mapper runtime errors in the preview are counted by stage and code", async () => {
      const project = await app.newProject("mapper metrics");
      const code = "mapper.output_too_large";
      const before = metrics.mapperErrors.get({ stage: "preview", code });
      const r = await app.request("POST", "/v1/mapper/preview", {
        apiKey: project.apiKey,
        body: {
          // Twice a 600 kB text: over the 1 MiB output limit, from a body under the 1 MiB request limit.
          config: { version: "v1", output: [{ var: "message.text" }, { var: "message.text" }] },
          message: { text: "x".repeat(600_000) },
        },
      });
      expect(r.status, r.text.slice(0, 500)).toBe(422);
      expect(metrics.mapperErrors.get({ stage: "preview", code }) - before).toBe(1);
    });

    test("without METRICS_TOKEN /metrics is open, and an Authorization header is not checked", async () => {
      const scrapes: Record<string, string>[] = [{}, { authorization: "Bearer anything" }];
      for (const headers of scrapes) {
        const r = await app.request("GET", "/metrics", { headers });
        expect(r.status, r.text).toBe(200);
        expect(r.text).toContain("mailhook_build_info");
      }
    });

    test("/metrics exposes process counters and database gauges in Prometheus text format", async () => {
      const project = await app.newProject("metrics");
      const msg = await seedMessage(app.ctx, { projectId: project.id, messageId: "<m1@metrics.test>" });
      clock.advance(60_000); // past the events-by-status cache of earlier scrapes
      const now = clock.now().getTime();
      const row = (status: "pending" | "retry" | "delivered" | "dead", dueAgoMs: number | null) => ({
        id: crypto.randomUUID(),
        projectId: project.id,
        messagePk: msg.pk,
        routeId: "rt_x",
        status,
        idempotencyKey: crypto.randomUUID(),
        routeSnapshot: {
          route_id: "rt_x",
          name: "x",
          endpoint_id: "ep_x",
          endpoint_url: "http://127.0.0.1:9/",
          kid: "kid_x",
          pipeline: { steps: [] },
        },
        nextAttemptAt: dueAgoMs === null ? null : new Date(now - dueAgoMs),
      });
      await app.ctx.database.db.insert(events).values([
        row("pending", 90_000), // due 90 s ago: the oldest
        row("retry", 1_000),
        row("retry", -60_000), // scheduled a minute from now: not due
        row("delivered", null),
        row("dead", null),
      ]);
      metrics.attemptLatency.observe(42, { outcome: "success" });

      const r = await app.request("GET", "/metrics");
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
      const text = r.text;
      expect(text).toContain("# TYPE mailhook_events gauge");
      expect(sample(text, 'mailhook_events{status="pending"}'), text).toBe(1);
      expect(sample(text, 'mailhook_events{status="retry"}')).toBe(2);
      expect(sample(text, 'mailhook_events{status="delivered"}')).toBe(1);
      expect(sample(text, 'mailhook_events{status="discarded"}')).toBe(0);
      expect(sample(text, 'mailhook_queue_due{queue="events"}')).toBe(2);
      expect(sample(text, 'mailhook_queue_due{queue="jobs"}')).toBe(0);
      expect(sample(text, 'mailhook_queue_oldest_due_age_seconds{queue="events"}')).toBe(90);
      expect(sample(text, "mailhook_metrics_database_error")).toBe(0);
      expect(text).toContain("# TYPE mailhook_delivery_attempt_duration_seconds histogram");
      const bucket = 'mailhook_delivery_attempt_duration_seconds_bucket{outcome="success",le="0.05"}';
      expect(sample(text, bucket)).toBeGreaterThanOrEqual(1);
      // Every non-comment line is `name{labels} value` with a numeric value.
      for (const l of text.split("\n").filter((x) => x && !x.startsWith("#"))) {
        expect(l).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? (-?[0-9.e+-]+|\+Inf|NaN)$/);
      }
    });
  });
}
