/**
 * Runs a `bulk_replay` job (resources/bulk-replay.ts) one chunk per claim: one statement takes the next
 * {@link BULK_REPLAY_CHUNK} matching events in id order, replays the replayable ones, counts the others
 * as skipped, and moves the job's cursor and counts — all guarded by the job's lease, so a chunk is
 * applied once. Between chunks the job is released and due again at once, so the worker interleaves it
 * with deliveries and other jobs.
 *
 * A replayed event ends exactly as a single replay leaves it (delivery/replay.ts): a fresh snapshot of
 * its route as it is now ({@link snapshotRoute}, taken once per route of the chunk), no stored body
 * (its bytes leave the storage usage), a fresh attempt budget, due at once. The chunk does that itself
 * instead of queuing one `replay_event` job per event: a job per event cost three statements per event
 * run one after another (tools/bench/bulk-replay.ts measures the chunks). Only an event
 * whose route was deleted (or appeared after the routes were read) is queued as a `replay_event` job,
 * `pending` with no `next_attempt_at`, so that job ends it `dead` and raises the notification exactly
 * as before.
 */

import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { deleteUnreferencedBlobs } from "../attachments/retention.ts";
import type { AppContext } from "../context.ts";
import { WORK_CHANNEL } from "../context.ts";
import { endpoints, type RouteSnapshot, routes } from "../db/schema/index.ts";
import { REPLAYABLE_STATUSES, statusListSql } from "../lib/event-status.ts";
import { type BulkReplayPayload, bulkReplayWhere } from "../resources/bulk-replay.ts";
import { JOBS_NOTIFICATION, snapshotRoute } from "../resources/replay.ts";
import type { ClaimedJob } from "./claim.ts";
import { shrinkUsage } from "./usage.ts";

/** Events handled per run of a bulk replay job. */
export const BULK_REPLAY_CHUNK = 500;

/** Runs one chunk of a claimed `bulk_replay` job; returns whether the job is finished. */
export async function runBulkReplayChunk(ctx: AppContext, job: ClaimedJob, owner: string): Promise<boolean> {
  const p = job.payload as unknown as BulkReplayPayload;
  const nowDate = ctx.clock.now();
  const now = nowDate.toISOString();
  const after = p.cursor ? sql`and id > ${p.cursor}::uuid` : sql``;
  const chunk = sql`
    select id, status, route_id from events
    where ${bulkReplayWhere(job.projectId, p)} ${after}
    order by id limit ${BULK_REPLAY_CHUNK}`;
  // The snapshots of the chunk's routes as they are now: live routes only (an event of a deleted route
  // goes through a replay job, which ends it dead).
  const routeIds = (
    await ctx.database.rows<{ route_id: string }>(sql`select distinct route_id from (${chunk}) c`)
  ).map((r) => r.route_id);
  const live =
    routeIds.length === 0
      ? []
      : await ctx.database.db
          .select({ route: routes, endpoint: { id: endpoints.id, url: endpoints.url } })
          .from(routes)
          .innerJoin(endpoints, eq(endpoints.id, routes.endpointId))
          .where(and(inArray(routes.id, routeIds), isNull(routes.deletedAt)));
  const snapshots: Record<string, RouteSnapshot> = {};
  for (const { route, endpoint } of live) snapshots[route.id] = snapshotRoute(route, endpoint, nowDate);

  const [r] = await ctx.database.rows<{
    seen: number | string;
    queued: number | string;
    direct: number | string;
    last: string | null;
    blobs: string;
  }>(sql`
    with mine as (select id from jobs where id = ${job.id} and lease_owner = ${owner}),
    batch as (
      select b.id, b.status, b.route_id from (${chunk}) b where exists (select 1 from mine)
    ),
    cand as (
      -- the replayable events of the chunk, with their route's new snapshot (null: through a job)
      select e.id, e.message_pk, e.project_id, e.body_blob_key as blob_key,
        coalesce(octet_length(e.body), e.body_blob_size, 0) as n,
        ${JSON.stringify(snapshots)}::jsonb -> b.route_id as snap
      from batch b join events e on e.id = b.id
      where b.status in ${sql.raw(statusListSql(REPLAYABLE_STATUSES))}
    ),
    lm as (
      -- the messages whose usage shrinks, locked before their events (the order retention and the
      -- attempt recorder use)
      select count(*) as n from (
        select m.id from messages m
        where m.id in (select message_pk from cand where snap is not null and n > 0)
        order by m.id for no key update of m) x
    ),
    upd as (
      update events e set status = 'pending', updated_at = ${now}::timestamptz,
        route_snapshot = coalesce(c.snap, e.route_snapshot),
        body = case when c.snap is null then e.body end,
        body_blob_key = case when c.snap is null then e.body_blob_key end,
        body_blob_size = case when c.snap is null then e.body_blob_size end,
        budget_start = case when c.snap is null then e.budget_start else e.attempts end,
        next_attempt_at = case when c.snap is null then null else ${now}::timestamptz end,
        lease_owner = null, lease_expires_at = null
      from cand c
      where e.id = c.id and e.id = any(array(select id from cand))
        and e.status in ${sql.raw(statusListSql(REPLAYABLE_STATUSES))} and (select n from lm) >= 0
      returning e.id, e.project_id, e.message_pk, c.snap is not null as direct, c.n, c.blob_key
    ),
    ${shrinkUsage(sql`select message_pk, project_id, n from upd where direct and n > 0`)},
    ins as (
      insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at)
      select 'job_' || replace(gen_random_uuid()::text, '-', ''), 'replay_event', upd.project_id,
        jsonb_build_object('event_id', upd.id::text), ${now}::timestamptz, 0, ${now}::timestamptz
      from upd where not upd.direct
    ),
    counts as (
      select (select count(*) from batch) as seen, (select count(*) from upd) as queued,
        (select count(*) from upd where direct) as direct, (select max(id::text) from batch) as last,
        (select coalesce(jsonb_agg(blob_key), '[]'::jsonb)::text from upd where direct and blob_key is not null)
          as blobs
    ),
    progress as (
      update jobs j set
        done = j.done + c.queued,
        skipped = j.skipped + (c.seen - c.queued),
        payload = case when c.last is null then j.payload else jsonb_set(j.payload, '{cursor}', to_jsonb(c.last)) end,
        status = case when c.seen < ${BULK_REPLAY_CHUNK} then 'done' else 'running' end,
        finished_at = case when c.seen < ${BULK_REPLAY_CHUNK} then ${now}::timestamptz else null end,
        run_at = ${now}::timestamptz, attempts = 0,
        lease_owner = null, lease_expires_at = null
      from counts c
      where j.id in (select id from mine)
    )
    select seen, queued, direct, last, blobs from counts`);
  // Webhook bodies kept in the blob store (body-store.ts) of the events replayed here, once nothing
  // references them: the replay builds each body again, as a replay of one event does (replay.ts).
  const blobs = JSON.parse(r?.blobs ?? "[]") as string[];
  if (blobs.length > 0) await deleteUnreferencedBlobs(ctx, blobs);
  const seen = Number(r?.seen ?? 0);
  const queued = Number(r?.queued ?? 0);
  if (Number(r?.direct ?? 0) > 0) await ctx.wakeWorkers();
  if (queued > Number(r?.direct ?? 0) || seen === BULK_REPLAY_CHUNK) {
    await ctx.database.notify(WORK_CHANNEL, JOBS_NOTIFICATION);
  }
  return seen < BULK_REPLAY_CHUNK;
}

/** Marks a bulk replay job failed (its error kept in `last_error`). */
export async function failBulkReplay(
  ctx: AppContext,
  job: ClaimedJob,
  owner: string,
  error: string,
): Promise<void> {
  const now = ctx.clock.now().toISOString();
  await ctx.database.rows(sql`
    update jobs set status = 'failed', last_error = ${error}, finished_at = ${now}::timestamptz,
      lease_owner = null, lease_expires_at = null
    where id = ${job.id} and lease_owner = ${owner}`);
}
