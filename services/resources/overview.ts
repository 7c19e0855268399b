/**
 * A project's last hours at a glance (the dashboard's Overview): messages in and delivery attempts by
 * outcome per hour, delivery latency percentiles, and the endpoints that are failing.
 *
 * Cost: three indexed reads per page view. Attempts are found through the project's events created in
 * the window plus a day before it (`events_project_created_idx`, then `attempts_event_idx`), which
 * covers every automatic retry (the schedule ends within the hour); a replay of an older event shows in
 * the event's own page, not here.
 */
import { and, eq, gte, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { attempts, events, messages } from "../db/schema/index.ts";

/** One hour of the window. `hour` is its start, RFC 3339 UTC. */
export interface OverviewHour {
  hour: string;
  messages: number;
  delivered: number;
  failed: number;
}

/** An endpoint with failed attempts in the window. */
export interface FailingEndpoint {
  endpoint_id: string;
  url: string;
  attempts: number;
  failures: number;
  success_rate: number;
  last_error: string | null;
}

export interface ProjectOverview {
  since: string;
  until: string;
  hours: OverviewHour[];
  totals: { messages: number; attempts: number; delivered: number; failed: number; dead_events: number };
  latency_ms: { p50: number | null; p99: number | null };
  failing_endpoints: FailingEndpoint[];
}

const HOUR_MS = 3_600_000;

/** The value at quantile `q` (0–1) of ascending `sorted`, nearest rank; null when empty. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1] as number;
}

/** The overview of the `hours` hours up to `now` (hour buckets aligned to whole UTC hours). */
export async function projectOverview(
  ctx: AppContext,
  projectId: string,
  now: Date,
  hours = 24,
): Promise<ProjectOverview> {
  const db = ctx.database.db;
  const end = Math.floor(now.getTime() / HOUR_MS) * HOUR_MS + HOUR_MS;
  const start = end - hours * HOUR_MS;
  const since = new Date(start);
  const eventsSince = new Date(start - 24 * HOUR_MS);

  const [messageRows, attemptRows, deadRows] = await Promise.all([
    db
      .select({ at: messages.receivedAt })
      .from(messages)
      .where(and(eq(messages.projectId, projectId), gte(messages.receivedAt, since))),
    db
      .select({
        at: attempts.createdAt,
        status: attempts.status,
        latency: attempts.latencyMs,
        httpStatus: attempts.httpStatus,
        network: sql<string | null>`${attempts.responseCapture} ->> 'network_error'`,
        endpointId: sql<string>`${events.routeSnapshot} ->> 'endpoint_id'`,
        endpointUrl: sql<string>`${events.routeSnapshot} ->> 'endpoint_url'`,
      })
      .from(attempts)
      .innerJoin(events, eq(attempts.eventId, events.id))
      .where(
        and(
          eq(events.projectId, projectId),
          gte(events.createdAt, eventsSince),
          gte(attempts.createdAt, since),
        ),
      ),
    db
      .select({ n: sql<number>`count(*)::int` })
      .from(events)
      .where(and(eq(events.projectId, projectId), eq(events.status, "dead"), gte(events.updatedAt, since))),
  ]);

  const buckets: OverviewHour[] = [];
  for (let t = start; t < end; t += HOUR_MS) {
    buckets.push({
      hour: new Date(t).toISOString().replace(".000Z", "Z"),
      messages: 0,
      delivered: 0,
      failed: 0,
    });
  }
  const bucketOf = (at: Date) => buckets[Math.floor((at.getTime() - start) / HOUR_MS)];
  for (const m of messageRows) {
    const b = bucketOf(m.at);
    if (b) b.messages++;
  }
  const latencies: number[] = [];
  const byEndpoint = new Map<string, FailingEndpoint & { lastAt: number }>();
  for (const a of attemptRows) {
    const b = bucketOf(a.at);
    if (b) a.status === "success" ? b.delivered++ : b.failed++;
    latencies.push(a.latency);
    const e = byEndpoint.get(a.endpointId) ?? {
      endpoint_id: a.endpointId,
      url: a.endpointUrl,
      attempts: 0,
      failures: 0,
      success_rate: 0,
      last_error: null,
      lastAt: 0,
    };
    e.attempts++;
    if (a.status !== "success") {
      e.failures++;
      if (a.at.getTime() >= e.lastAt) {
        e.lastAt = a.at.getTime();
        e.last_error = a.network ? a.network : `http ${a.httpStatus}`;
      }
    }
    byEndpoint.set(a.endpointId, e);
  }
  latencies.sort((x, y) => x - y);
  const failing = [...byEndpoint.values()]
    .filter((e) => e.failures > 0)
    .map(({ lastAt: _lastAt, ...e }) => ({ ...e, success_rate: (e.attempts - e.failures) / e.attempts }))
    .sort((x, y) => x.success_rate - y.success_rate || y.failures - x.failures);
  const delivered = buckets.reduce((n, b) => n + b.delivered, 0);
  const failed = buckets.reduce((n, b) => n + b.failed, 0);
  return {
    since: since.toISOString(),
    until: new Date(end).toISOString(),
    hours: buckets,
    totals: {
      messages: buckets.reduce((n, b) => n + b.messages, 0),
      attempts: delivered + failed,
      delivered,
      failed,
      dead_events: deadRows[0]?.n ?? 0,
    },
    latency_ms: { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99) },
    failing_endpoints: failing,
  };
}
