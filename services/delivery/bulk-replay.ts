/**
 * Runs a `bulk_replay` job (resources/bulk-replay.ts) one chunk per claim: one statement takes the next
 * {@link BULK_REPLAY_CHUNK} matching events in id order, queues the replayable ones exactly as a single
 * replay does (`pending`, no `next_attempt_at`, one `replay_event` job each — delivery/replay.ts then
 * snapshots the route), counts the others as skipped, and moves the job's cursor and counts — all
 * guarded by the job's lease, so a chunk is applied once. Between chunks the job is released and due
 * again at once, so the worker interleaves it with deliveries and other jobs.
 */
import { sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { WORK_CHANNEL } from "../context.ts";
import { REPLAYABLE_STATUSES, statusListSql } from "../lib/event-status.ts";
import { type BulkReplayPayload, bulkReplayWhere } from "../resources/bulk-replay.ts";
import { JOBS_NOTIFICATION } from "../resources/replay.ts";
import type { ClaimedJob } from "./claim.ts";

/** Events handled per run of a bulk replay job. */
export const BULK_REPLAY_CHUNK = 500;

/** Runs one chunk of a claimed `bulk_replay` job; returns whether the job is finished. */
export async function runBulkReplayChunk(ctx: AppContext, job: ClaimedJob, owner: string): Promise<boolean> {
  const p = job.payload as unknown as BulkReplayPayload;
  const now = ctx.clock.now().toISOString();
  const after = p.cursor ? sql`and id > ${p.cursor}::uuid` : sql``;
  const [r] = await ctx.database.rows<{
    seen: number | string;
    queued: number | string;
    last: string | null;
  }>(sql`
    with mine as (select id from jobs where id = ${job.id} and lease_owner = ${owner}),
    batch as (
      select id, status from events
      where ${bulkReplayWhere(job.projectId, p)} ${after} and exists (select 1 from mine)
      order by id limit ${BULK_REPLAY_CHUNK}
    ),
    upd as (
      update events e set status = 'pending', next_attempt_at = null, updated_at = ${now}::timestamptz
      from batch b
      where e.id = b.id and e.status in ${sql.raw(statusListSql(REPLAYABLE_STATUSES))}
      returning e.id, e.project_id
    ),
    ins as (
      insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at)
      select 'job_' || replace(gen_random_uuid()::text, '-', ''), 'replay_event', upd.project_id,
        jsonb_build_object('event_id', upd.id::text), ${now}::timestamptz, 0, ${now}::timestamptz
      from upd
    ),
    counts as (
      select (select count(*) from batch) as seen, (select count(*) from upd) as queued,
        (select max(id::text) from batch) as last
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
    select seen, queued, last from counts`);
  const seen = Number(r?.seen ?? 0);
  if (Number(r?.queued ?? 0) > 0 || seen === BULK_REPLAY_CHUNK) {
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
