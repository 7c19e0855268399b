/**
 * Bulk replay (docs/delivery.md, "Bulk replay"): `POST /v1/events/replay` picks events by a filter or by
 * ids, counts them, and queues ONE `bulk_replay` job; the delivery worker runs it in chunks
 * (delivery/bulk-replay.ts), each chunk one statement that queues the chunk's replayable events exactly
 * as a single replay does (status `pending`, a `replay_event` job each), so neither the API nor a
 * worker is ever held by a large replay. `GET /v1/jobs/{id}` shows its progress.
 */
import { type Static, Type } from "@sinclair/typebox";
import { type SQL, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { WORK_CHANNEL } from "../context.ts";
import { AppError, type ErrorDetail } from "../lib/errors.ts";
import { EVENT_STATUSES, REPLAYABLE_STATUSES, statusListSql } from "../lib/event-status.ts";
import { isUuid, newId } from "../lib/ids.ts";
import { Integer, Nullable, Timestamp } from "../lib/schema.ts";
import { JOBS_NOTIFICATION } from "./replay.ts";

/** Most events one bulk replay may match. */
export const MAX_BULK_REPLAY = 100_000;

/** Which events a bulk replay takes; every key optional, all given keys must hold. */
export interface BulkReplayFilter {
  status?: string[];
  route_id?: string;
  endpoint_id?: string;
  /** created at or after (RFC 3339) */
  since?: string;
  /** created before (RFC 3339) */
  until?: string;
}

/** The body of `POST /v1/events/replay`. */
export interface BulkReplayInput {
  filter?: BulkReplayFilter;
  event_ids?: string[];
  dry_run?: boolean;
}

/** What a `bulk_replay` job carries. */
export interface BulkReplayPayload {
  filter: BulkReplayFilter | null;
  event_ids: string[] | null;
  /** the last event id handled (events are taken in id order) */
  cursor: string | null;
}

/** `GET /v1/jobs/{id}`. */
export const JobViewSchema = Type.Object({
  id: Type.String(),
  kind: Type.Literal("bulk_replay"),
  status: Type.Union([
    Type.Literal("queued"),
    Type.Literal("running"),
    Type.Literal("done"),
    Type.Literal("failed"),
  ]),
  total: Integer(),
  done: Integer(),
  skipped: Integer(),
  created_at: Timestamp,
  finished_at: Nullable(Timestamp),
});
/** See {@link JobViewSchema}. */
export type JobView = Static<typeof JobViewSchema>;

function validate(input: BulkReplayInput): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const f = input.filter;
  if (!f && !input.event_ids) problems.push({ path: "", message: "give a filter, event_ids, or both" });
  for (const [i, s] of (f?.status ?? []).entries()) {
    if (!(EVENT_STATUSES as readonly string[]).includes(s))
      problems.push({
        path: `/filter/status/${i}`,
        message: `not an event status (${EVENT_STATUSES.join(", ")})`,
      });
  }
  for (const key of ["since", "until"] as const) {
    const v = f?.[key];
    if (v !== undefined && Number.isNaN(Date.parse(v)))
      problems.push({ path: `/filter/${key}`, message: "not an RFC 3339 time" });
  }
  const ids = input.event_ids ?? [];
  if (ids.length > MAX_BULK_REPLAY)
    problems.push({ path: "/event_ids", message: `at most ${MAX_BULK_REPLAY} event ids` });
  const bad = ids.findIndex((id) => !isUuid(id));
  if (bad >= 0) problems.push({ path: `/event_ids/${bad}`, message: "not an event id" });
  return problems;
}

/** A Postgres array literal of uuids (validated before). */
function uuidArray(ids: readonly string[]): string {
  return `{${ids.join(",")}}`;
}

/** The events of `projectId` the payload selects, as a `where` condition on `events`. */
export function bulkReplayWhere(projectId: string, p: Pick<BulkReplayPayload, "filter" | "event_ids">): SQL {
  const parts: SQL[] = [sql`project_id = ${projectId}`];
  const f = p.filter;
  if (p.event_ids) parts.push(sql`id = any(${uuidArray(p.event_ids)}::uuid[])`);
  if (f?.status?.length) parts.push(sql`status = any(${`{${f.status.join(",")}}`}::text[])`);
  if (f?.route_id !== undefined) parts.push(sql`route_id = ${f.route_id}`);
  if (f?.endpoint_id !== undefined) parts.push(sql`endpoint_id = ${f.endpoint_id}`);
  if (f?.since !== undefined) parts.push(sql`created_at >= ${new Date(f.since).toISOString()}::timestamptz`);
  if (f?.until !== undefined) parts.push(sql`created_at < ${new Date(f.until).toISOString()}::timestamptz`);
  return sql.join(parts, sql` and `);
}

/**
 * Counts what `input` selects; with `dry_run` answers `{matched, replayable}`, otherwise queues the
 * job and answers `{queued, job_id}` (`queued`: the replayable events among them now).
 */
export async function startBulkReplay(
  ctx: AppContext,
  projectId: string,
  input: BulkReplayInput,
): Promise<{ matched: number; replayable: number } | { queued: number; job_id: string }> {
  const problems = validate(input);
  if (problems.length) throw new AppError("request.invalid", "the replay request is invalid", problems);
  const payload: BulkReplayPayload = {
    filter: input.filter ?? null,
    event_ids: input.event_ids ? [...new Set(input.event_ids.map((id) => id.toLowerCase()))] : null,
    cursor: null,
  };
  const [count] = await ctx.database.rows<{ matched: number | string; replayable: number | string }>(sql`
    select count(*) as matched,
      count(*) filter (where status in ${sql.raw(statusListSql(REPLAYABLE_STATUSES))}) as replayable
    from events where ${bulkReplayWhere(projectId, payload)}`);
  const matched = Number(count?.matched ?? 0);
  const replayable = Number(count?.replayable ?? 0);
  if (matched > MAX_BULK_REPLAY) {
    throw new AppError(
      "request.invalid",
      `the request matches ${matched} events; at most ${MAX_BULK_REPLAY}`,
      [{ path: input.filter ? "/filter" : "/event_ids", message: `matches ${matched} events; narrow it` }],
    );
  }
  if (input.dry_run) return { matched, replayable };
  const id = newId("job");
  const now = ctx.clock.now().toISOString();
  await ctx.database.rows(sql`
    insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at, status, total)
    values (${id}, 'bulk_replay', ${projectId}, ${JSON.stringify(payload)}::jsonb, ${now}::timestamptz, 0,
      ${now}::timestamptz, 'queued', ${matched})`);
  await ctx.database.notify(WORK_CHANNEL, JOBS_NOTIFICATION);
  return { queued: replayable, job_id: id };
}

/** A bulk replay job of the project (404 `jobs.not_found` otherwise). */
export async function getJob(ctx: AppContext, projectId: string, id: string): Promise<JobView> {
  const [row] = await ctx.database.rows<{
    id: string;
    status: JobView["status"];
    total: number;
    done: number;
    skipped: number;
    created_at: Date | string;
    finished_at: Date | string | null;
  }>(sql`
    select id, status, total, done, skipped, created_at, finished_at from jobs
    where id = ${id} and project_id = ${projectId} and kind = 'bulk_replay'`);
  if (!row) throw new AppError("jobs.not_found", "job not found");
  return {
    id: row.id,
    kind: "bulk_replay",
    status: row.status,
    total: Number(row.total),
    done: Number(row.done),
    skipped: Number(row.skipped),
    created_at: new Date(row.created_at).toISOString(),
    finished_at: row.finished_at === null ? null : new Date(row.finished_at).toISOString(),
  };
}
