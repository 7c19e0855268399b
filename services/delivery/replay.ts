/**
 * Replay (spec: Replay rules; docs/delivery.md): a terminal event (`delivered`, `dead`, `discarded`) is
 * queued as a `replay_event` job and set `pending` with no `next_attempt_at`, so no worker claims it
 * before the job has run. The job takes a fresh snapshot of the CURRENT route (endpoint, kid,
 * pipeline), clears the stored body (rebuilt from the stored message by the next attempt), starts a
 * fresh attempt budget (`budget_start = attempts`) and makes the event due now, ignoring any old
 * schedule. The cleared body's bytes leave the storage usage with it; the rebuilt body adds them again
 * when it is stored (record.ts). The idempotency key is unchanged; body and signature are new.
 */
import { and, eq, sql } from "drizzle-orm";
import { deleteUnreferencedBlobs } from "../attachments/retention.ts";
import type { AppContext } from "../context.ts";
import type { Database } from "../db/client.ts";
import { endpoints, events, routes } from "../db/schema/index.ts";
import { formatDeadReason, routeDeleted } from "../lib/dead-reasons.ts";
import { isUuid } from "../lib/ids.ts";
import {
  notificationJobsInsert,
  type PendingNotification,
  pendingNotification,
  wakeForNotifications,
} from "../resources/notifications.ts";
import { snapshotRoute } from "../resources/replay.ts";
import type { ClaimedJob } from "./claim.ts";
import { shrinkUsage } from "./usage.ts";

/**
 * Runs a claimed `replay_event` job (see the module comment). The event update and the job's
 * deletion are one statement guarded by the job lease. A route deleted since → the event ends `dead`.
 */
export async function runReplayJob(ctx: AppContext, job: ClaimedJob, owner: string): Promise<void> {
  const db = ctx.database;
  const eventId = typeof job.payload.event_id === "string" ? job.payload.event_id : "";
  const now = ctx.clock.now();
  const [row] = isUuid(eventId)
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
    const lastError = formatDeadReason(routeDeleted(row.event.routeId, "replay"));
    const notified = await finishJob(
      db,
      job.id,
      owner,
      sql`status = 'dead', last_error = ${lastError}`,
      eventId,
      now,
      {
        notification: pendingNotification({
          projectId: job.projectId,
          type: "event.dead",
          data: {
            event_id: eventId,
            route_id: row.event.routeId,
            last_error: lastError,
            attempts: row.event.attempts,
          },
          now,
        }),
      },
    );
    if (notified) await wakeForNotifications(db);
    return;
  }
  const snap = snapshotRoute(row.route, row.endpoint, now);
  await finishJob(
    db,
    job.id,
    owner,
    sql`route_snapshot = ${JSON.stringify(snap)}::jsonb, body = null, body_blob_key = null,
      body_blob_size = null, budget_start = attempts,
      next_attempt_at = ${now.toISOString()}::timestamptz, lease_owner = null, lease_expires_at = null`,
    eventId,
    now,
    { clearsBody: true },
  );
  // A body kept in the blob store (body-store.ts) is deleted once nothing references it.
  if (row.event.bodyBlobKey) await deleteUnreferencedBlobs(ctx, [row.event.bodyBlobKey]);
  await ctx.wakeWorkers();
}

/**
 * Deletes the job (if we still hold it) and applies `set` to the event, atomically. With `clearsBody`
 * (`set` clears `body`) the body's bytes leave its message's `stored_bytes` and its project's
 * `storage_bytes` in the same statement (ingest/quota.ts); the message row is locked before the event,
 * in the order retention and the attempt recorder use. A `notification` (the event's `event.dead`) is
 * queued by the same statement when the event is updated; returns whether it was.
 */
async function finishJob(
  db: Database,
  jobId: string,
  owner: string,
  set: ReturnType<typeof sql>,
  eventId: string,
  now: Date,
  opts: { clearsBody?: boolean; notification?: PendingNotification } = {},
): Promise<boolean> {
  const clearsBody = opts.clearsBody ?? false;
  const n = opts.notification;
  const rows = await db.rows<{ id: string; notified: boolean }>(sql`
    with del as (delete from jobs where id = ${jobId} and lease_owner = ${owner} returning id),
    old as (
      select id, message_pk, project_id, coalesce(octet_length(body), body_blob_size, 0) as n from events
      where id = ${eventId}::uuid and ${clearsBody}::boolean
    ),
    lm as (
      select count(*) as n from (
        select m.id from messages m where m.id in (select message_pk from old where n > 0)
        for no key update of m) x
    ),
    upd as (
      update events set ${set}, updated_at = ${now.toISOString()}::timestamptz
      where id = ${eventId}::uuid and status = 'pending' and next_attempt_at is null
        and exists (select 1 from del) and (select n from lm) >= 0
      returning id
    ),
    cleared as (select old.* from old join upd on upd.id = old.id where old.n > 0),
    ${shrinkUsage(sql`select message_pk, project_id, n from cleared`)}${
      n
        ? sql`, ntf as (
      ${notificationJobsInsert(sql`select ${n.job_id}::text, ${n.project_id}::text, ${JSON.stringify(n.body)}::jsonb
        from upd`)}
    )
    select id, exists (select 1 from ntf) as notified from upd`
        : sql`
    select id, false as notified from upd`
    }`);
  return rows[0]?.notified === true;
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
