/**
 * Operations endpoints at the root (not under /v1, so probes and scrapers need no API version):
 * - `GET /healthz` — the process is alive and serving HTTP (liveness; never touches the database).
 * - `GET /readyz`  — the database answers and every committed migration is applied (readiness).
 * - `GET /metrics` — Prometheus text format: the in-process counters of `lib/metrics.ts` plus gauges
 *   read from the database at scrape time (events by status, due queue depth and oldest due age).
 *   The counts span every project, so with `METRICS_TOKEN` set a scrape must carry
 *   `Authorization: Bearer <token>` (RFC 6750 §2.1); the probes stay open for orchestrators.
 *
 * Also the request-id hook for the whole app: every request gets an `X-Request-Id` (a well-formed
 * incoming one is kept, so ids follow a request through a proxy) and one structured access log line.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import hyperid from "hyperid";
import pkg from "../../package.json" with { type: "json" };
import type { AppContext } from "../context.ts";
import { sql } from "../db/client.ts";
import journal from "../db/migrations/meta/_journal.json" with { type: "json" };
import { AppError } from "../lib/errors.ts";
import { DUE_STATUSES, EVENT_STATUSES, statusListSql } from "../lib/event-status.ts";
import { METRICS_CONTENT_TYPE, renderGauge, renderProcessMetrics } from "../lib/metrics.ts";

/** Options of {@link opsApi}; defaults suit production. */
export interface OpsOptions {
  /** How long the events-by-status counts are reused between scrapes (a full count of a big table). */
  statusCacheMs?: number;
  /** Bound on each database probe of `/readyz` and `/metrics`. */
  dbTimeoutMs?: number;
}

const REQUEST_ID_HEADER = "x-request-id";
/** Incoming ids are kept only when short and plain, so they cannot inject into logs or headers. */
const INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;
const QUEUES = ["events", "jobs"] as const;

/** Paths whose last segment is a credential (single-use download tokens) are logged redacted. */
function loggablePath(pathname: string): string {
  return pathname.startsWith("/v1/attachments/") ? "/v1/attachments/***" : pathname;
}

/** The challenge of a refused scrape (RFC 6750 §3). */
const METRICS_CHALLENGE = { "www-authenticate": 'Bearer realm="metrics"' };

/** Equal-length digests compared in constant time: timing reveals neither a prefix nor the length. */
function tokenMatches(given: string, expected: string): boolean {
  const digest = (t: string) => createHash("sha256").update(t).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * Refuses a scrape without the configured bearer token (401 with a `WWW-Authenticate` challenge). The
 * scheme is case-insensitive (RFC 9110 §11.1).
 */
function requireMetricsToken(request: Request, token: string): void {
  const header = request.headers.get("authorization");
  const match = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
  if (!match) {
    throw new AppError(
      "auth.missing_metrics_token",
      "/metrics requires Authorization: Bearer <METRICS_TOKEN>",
      undefined,
      METRICS_CHALLENGE,
    );
  }
  if (!tokenMatches(match[1] ?? "", token)) {
    throw new AppError("auth.invalid_metrics_token", "the metrics token is wrong", undefined, {
      "www-authenticate": 'Bearer realm="metrics", error="invalid_token"',
    });
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Whether every migration of the committed journal is recorded in drizzle's bookkeeping table. */
async function migrationsApplied(ctx: AppContext): Promise<boolean> {
  const rows = await ctx.database.rows<{ n: number | string }>(
    sql`select count(*)::int as n from drizzle.__drizzle_migrations`,
  );
  return Number(rows[0]?.n ?? 0) >= journal.entries.length;
}

interface QueueRow {
  queue: string;
  due: number | string;
  oldest: Date | string | null;
}

/** Gauges read from the database; counts by status are cached, queue numbers use the due indexes. */
function databaseGauges(ctx: AppContext, statusCacheMs: number) {
  let statusCache: { at: number; counts: Map<string, number> } | null = null;

  async function statusCounts(): Promise<Map<string, number>> {
    const nowMs = ctx.clock.now().getTime();
    if (statusCache && nowMs - statusCache.at < statusCacheMs) return statusCache.counts;
    const rows = await ctx.database.rows<{ status: string; n: number | string }>(
      sql`select status, count(*)::bigint as n from events group by status`,
    );
    const counts = new Map<string, number>(EVENT_STATUSES.map((s) => [s, 0]));
    for (const r of rows) counts.set(r.status, Number(r.n));
    statusCache = { at: nowMs, counts };
    return counts;
  }

  return async function render(): Promise<string> {
    const now = ctx.clock.now();
    const at = now.toISOString();
    const counts = await statusCounts();
    const queues = await ctx.database.rows<QueueRow>(sql`
      select 'events' as queue, count(*)::bigint as due, min(next_attempt_at) as oldest
        from events
        where status in ${sql.raw(statusListSql(DUE_STATUSES))} and next_attempt_at <= ${at}::timestamptz
      union all
      select 'jobs' as queue, count(*)::bigint as due, min(run_at) as oldest
        from jobs
        where run_at <= ${at}::timestamptz`);
    const byQueue = new Map(queues.map((q) => [q.queue, q]));
    const depth = QUEUES.map((q) => ({ labels: { queue: q }, value: Number(byQueue.get(q)?.due ?? 0) }));
    const age = QUEUES.map((q) => {
      const oldest = byQueue.get(q)?.oldest;
      const ms = oldest ? Math.max(0, now.getTime() - new Date(oldest).getTime()) : 0;
      return { labels: { queue: q }, value: ms / 1000 };
    });
    return (
      renderGauge(
        "mailhook_events",
        "Events by status (all projects; refreshed at most every statusCacheMs).",
        [...counts].map(([status, value]) => ({ labels: { status }, value })),
      ) +
      renderGauge(
        "mailhook_queue_due",
        "Work due now and not yet done: events to attempt, jobs to run.",
        depth,
      ) +
      renderGauge(
        "mailhook_queue_oldest_due_age_seconds",
        "How long the oldest due item has waited past its due time (0 when none is due).",
        age,
      )
    );
  };
}

/**
 * The ops plugin: mount it on the root app (before `/v1`) so its request-id hook sees every request.
 * Access lines go to `ctx.logger` at info: `{msg: "http request", req_id, method, path, route, status, ms}`.
 */
export function opsApi(ctx: AppContext, opts: OpsOptions = {}) {
  const dbTimeoutMs = opts.dbTimeoutMs ?? 2000;
  const gauges = databaseGauges(ctx, opts.statusCacheMs ?? 15_000);
  const nextId = hyperid({ urlSafe: true });
  const started = new WeakMap<Request, { id: string; t0: number }>();
  const startedAt = Date.now();

  return new Elysia({ name: "mailhook-ops" })
    .onRequest(({ request, set }) => {
      const incoming = request.headers.get(REQUEST_ID_HEADER);
      const id = incoming && INCOMING_ID.test(incoming) ? incoming : nextId();
      started.set(request, { id, t0: performance.now() });
      set.headers[REQUEST_ID_HEADER] = id;
    })
    .onAfterResponse({ as: "global" }, ({ request, set, route }) => {
      const s = started.get(request);
      ctx.logger.info("http request", {
        req_id: s?.id,
        method: request.method,
        path: loggablePath(new URL(request.url).pathname),
        route: route || undefined,
        status: typeof set.status === "number" ? set.status : Number(set.status) || 200,
        ms: s ? Math.round((performance.now() - s.t0) * 10) / 10 : undefined,
      });
    })
    .get("/healthz", () => ({ status: "ok" }), {
      detail: { hide: true, summary: "Liveness: the process serves HTTP" },
    })
    .get(
      "/readyz",
      async ({ set }) => {
        const checks: Record<string, string> = { database: "ok", migrations: "ok" };
        try {
          await withTimeout(ctx.database.rows(sql`select 1`), dbTimeoutMs, "database probe");
          if (!(await withTimeout(migrationsApplied(ctx), dbTimeoutMs, "migration check"))) {
            checks.migrations = "pending";
          }
        } catch (err) {
          ctx.logger.warn("readiness check failed", { err });
          checks.database = "unavailable";
          checks.migrations = "unknown";
        }
        const ready = checks.database === "ok" && checks.migrations === "ok";
        set.status = ready ? 200 : 503;
        return { status: ready ? "ok" : "unavailable", checks };
      },
      { detail: { hide: true, summary: "Readiness: database reachable, migrations applied" } },
    )
    .get(
      "/metrics",
      async ({ request, set }) => {
        if (ctx.config.metricsToken !== null) requireMetricsToken(request, ctx.config.metricsToken);
        let db = "";
        let scrapeError = 0;
        try {
          db = await withTimeout(gauges(), dbTimeoutMs, "metrics query");
        } catch (err) {
          // The process metrics are still worth having when the database is slow or down.
          ctx.logger.warn("metrics database gauges failed", { err });
          scrapeError = 1;
        }
        set.headers["content-type"] = METRICS_CONTENT_TYPE;
        return (
          renderGauge("mailhook_build_info", "Build information; always 1.", [
            { labels: { version: pkg.version }, value: 1 },
          ]) +
          renderGauge("process_start_time_seconds", "Start time of the process since the Unix epoch.", [
            { value: Math.floor(startedAt / 1000) },
          ]) +
          renderGauge("process_resident_memory_bytes", "Resident memory size in bytes.", [
            { value: process.memoryUsage().rss },
          ]) +
          renderProcessMetrics() +
          db +
          renderGauge("mailhook_metrics_database_error", "1 when the database gauges could not be read.", [
            { value: scrapeError },
          ])
        );
      },
      { detail: { hide: true, summary: "Prometheus metrics" } },
    );
}
