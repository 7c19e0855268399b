/**
 * Queuing a replay: the API's and the dashboard's side of replay (docs/delivery.md, "Replay"). A
 * terminal event (`delivered`, `dead`, `discarded`) becomes `pending` with no `next_attempt_at` and a
 * `replay_event` job is queued in the same statement; the delivery worker runs the job
 * (`delivery/replay.ts`), taking a fresh snapshot of the route with {@link snapshotRoute}.
 */
import { and, eq, sql } from "drizzle-orm";
import { type AppContext, WORK_CHANNEL } from "../context.ts";
import { type endpoints, events, type RouteSnapshot, type routes } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { REPLAYABLE_STATUSES, statusListSql } from "../lib/event-status.ts";
import { isUuid, newId } from "../lib/ids.ts";

/** Payload on `WORK_CHANNEL` meaning "a background job was queued" (the worker then looks for jobs). */
export const JOBS_NOTIFICATION = "jobs";

/** "delivered, dead or discarded": the replayable statuses as the refusal's message lists them. */
const REPLAYABLE_WORDS = `${REPLAYABLE_STATUSES.slice(0, -1).join(", ")} or ${REPLAYABLE_STATUSES.at(-1)}`;

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
 * @throws AppError `events.not_found` (no such event in the project), `events.message_erased` (its
 * message was erased: nothing to rebuild the body from) or `events.not_replayable`.
 */
export async function queueReplay(ctx: AppContext, projectId: string, eventId: string): Promise<void> {
  if (!isUuid(eventId)) throw new AppError("events.not_found", "event not found");
  const now = ctx.clock.now().toISOString();
  const rows = await ctx.database.rows<{ id: string }>(sql`
    with upd as (
      update events set status = 'pending', next_attempt_at = null, updated_at = ${now}::timestamptz
      where id = ${eventId}::uuid and project_id = ${projectId}
        and status in ${sql.raw(statusListSql(REPLAYABLE_STATUSES))} and message_pk is not null
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
    .select({ status: events.status, messagePk: events.messagePk })
    .from(events)
    .where(and(eq(events.id, eventId), eq(events.projectId, projectId)));
  if (!existing) throw new AppError("events.not_found", "event not found");
  if (existing.messagePk === null)
    throw new AppError("events.message_erased", "the event's message was erased; it cannot be replayed");
  throw new AppError(
    "events.not_replayable",
    `the event is ${existing.status}; only ${REPLAYABLE_WORDS} events can be replayed`,
  );
}
