/**
 * Replay (spec: Replay rules; contract §7): a terminal event (`delivered`, `dead`, `discarded`) is
 * queued as a `replay_event` job and set `pending` with no `next_attempt_at`, so no worker claims it
 * before the job has run. The job takes a fresh snapshot of the CURRENT route (endpoint, kid,
 * pipeline), clears the stored body (rebuilt from the stored message by the next attempt), starts a
 * fresh attempt budget (`budget_start = attempts`) and makes the event due now, ignoring any old
 * schedule. The idempotency key is unchanged; body and signature are new.
 */
import { and, eq, sql } from "drizzle-orm";
import { type AppContext, WORK_CHANNEL } from "../context.ts";
import type { Database } from "../db/client.ts";
import { endpoints, events, type RouteSnapshot, routes } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import type { ClaimedJob } from "./claim.ts";

/** Payload on `WORK_CHANNEL` meaning "a background job was queued" (the worker then looks for jobs). */
export const JOBS_NOTIFICATION = "jobs";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `id` can be an event id (a UUID); anything else is simply not found. */
export function isEventId(id: string): boolean {
  return UUID.test(id);
}

/** A route snapshot as stored on events (`routing` in the event detail). */
export function snapshotRoute(
  route: typeof routes.$inferSelect,
  endpoint: Pick<typeof endpoints.$inferSelect, "id" | "url">,
  replayedAt?: Date,
): RouteSnapshot {
  return {
    route_id: route.id,
    name: route.name,
    endpoint_id: endpoint.id,
    endpoint_url: endpoint.url,
    kid: route.signingSecretKid,
    pipeline: route.pipeline,
    pipeline_text: route.pipelineText,
    ...(replayedAt ? { replayed_at: replayedAt.toISOString() } : {}),
  };
}

/**
 * Queues a replay of `eventId` for `projectId` in one statement: the status change and the job insert
 * happen together or not at all, and a second concurrent request finds the event `pending` (409).
 * @throws AppError `events.not_found` (no such event in the project) or `events.not_replayable`.
 */
export async function queueReplay(ctx: AppContext, projectId: string, eventId: string): Promise<void> {
  if (!isEventId(eventId)) throw new AppError("events.not_found", "event not found");
  const now = ctx.clock.now().toISOString();
  const rows = await ctx.database.rows<{ id: string }>(sql`
    with upd as (
      update events set status = 'pending', next_attempt_at = null, updated_at = ${now}::timestamptz
      where id = ${eventId}::uuid and project_id = ${projectId}
        and status in ('delivered', 'dead', 'discarded')
      returning id, project_id
    )
    insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at)
    select ${newId("job")}, 'replay_event', upd.project_id, jsonb_build_object('event_id', upd.id::text),
      ${now}::timestamptz, 0, ${now}::timestamptz
    from upd
    returning id`);
  if (rows.length === 1) {
    await ctx.database.notify(WORK_CHANNEL, JOBS_NOTIFICATION);
    return;
  }
  const [existing] = await ctx.database.db
    .select({ status: events.status })
    .from(events)
    .where(and(eq(events.id, eventId), eq(events.projectId, projectId)));
  if (!existing) throw new AppError("events.not_found", "event not found");
  throw new AppError(
    "events.not_replayable",
    `the event is ${existing.status}; only delivered, dead or discarded events can be replayed`,
  );
}

/**
 * Runs a claimed `replay_event` job (see the module comment). The event update and the job's
 * deletion are one statement guarded by the job lease. A route deleted since → the event ends `dead`.
 */
export async function runReplayJob(ctx: AppContext, job: ClaimedJob, owner: string): Promise<void> {
  const db = ctx.database;
  const eventId = typeof job.payload.event_id === "string" ? job.payload.event_id : "";
  const now = ctx.clock.now();
  const [row] = isEventId(eventId)
    ? await db.db
        .select({ event: events, route: routes, endpoint: endpoints })
        .from(events)
        .leftJoin(routes, eq(routes.id, events.routeId))
        .leftJoin(endpoints, eq(endpoints.id, routes.endpointId))
        .where(and(eq(events.id, eventId), eq(events.projectId, job.projectId)))
    : [];
  // Only a queued replay (pending, not scheduled) is touched; anything else means the job is stale.
  if (row?.event.status !== "pending" || row.event.nextAttemptAt !== null) {
    await deleteJob(db, job.id, owner);
    return;
  }
  if (!row.route || row.route.deletedAt || !row.endpoint) {
    await finishJob(
      db,
      job.id,
      owner,
      sql`status = 'dead', last_error = ${`route_deleted: route ${row.event.routeId} was deleted; the replay cannot run`}`,
      eventId,
      now,
    );
    return;
  }
  const snap = snapshotRoute(row.route, row.endpoint, now);
  await finishJob(
    db,
    job.id,
    owner,
    sql`route_snapshot = ${JSON.stringify(snap)}::jsonb, body = null, budget_start = attempts,
      next_attempt_at = ${now.toISOString()}::timestamptz, lease_owner = null, lease_expires_at = null`,
    eventId,
    now,
  );
  await ctx.wakeWorkers();
}

/** Deletes the job (if we still hold it) and applies `set` to the event, atomically. */
async function finishJob(
  db: Database,
  jobId: string,
  owner: string,
  set: ReturnType<typeof sql>,
  eventId: string,
  now: Date,
): Promise<void> {
  await db.rows(sql`
    with del as (delete from jobs where id = ${jobId} and lease_owner = ${owner} returning id)
    update events set ${set}, updated_at = ${now.toISOString()}::timestamptz
    where id = ${eventId}::uuid and status = 'pending' and next_attempt_at is null
      and exists (select 1 from del)
    returning id`);
}

async function deleteJob(db: Database, jobId: string, owner: string): Promise<void> {
  await db.rows(sql`delete from jobs where id = ${jobId} and lease_owner = ${owner} returning id`);
}

/** Records a failed job run and schedules the next one (exponential, capped at 5 minutes). */
export async function failJob(
  db: Database,
  job: ClaimedJob,
  owner: string,
  error: string,
  now: Date,
): Promise<void> {
  const delayMs = Math.min(300_000, 1000 * 2 ** Math.min(job.attempts, 10));
  await db.rows(sql`
    update jobs set last_error = ${error}, run_at = ${new Date(now.getTime() + delayMs).toISOString()}::timestamptz,
      lease_owner = null, lease_expires_at = null
    where id = ${job.id} and lease_owner = ${owner}
    returning id`);
}
