/**
 * `route.silent` (docs/delivery.md, "Notifications"): a route with `expect_mail_within` whose last
 * matching message (its newest event; the route's creation when it never matched) is older than that
 * raises ONE notification, then not again until mail matched it again and stopped again. The worker
 * runs {@link checkSilentRoutes} periodically; only routes of projects subscribed to the type are read.
 *
 * `silent_notified_at` remembers the last notification. Marking the route and queueing the notification
 * are one statement, guarded by the value read, so workers checking at once raise it once.
 */
import { sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { WORK_CHANNEL } from "../context.ts";
import { parseRetrySchedule } from "../lib/durations.ts";
import { newId } from "../lib/ids.ts";
import { JOBS_NOTIFICATION } from "../resources/replay.ts";

/** How often the worker looks for silent routes by default. */
export const SILENT_CHECK_MS = 60_000;

interface Candidate {
  id: string;
  project_id: string;
  name: string;
  expect_mail_within: string;
  created_at: string | Date;
  silent_notified_at: string | Date | null;
  last_matched_at: string | Date | null;
}

const ms = (v: string | Date): number => new Date(v).getTime();
const iso = (v: string | Date | null): string | null => (v === null ? null : new Date(v).toISOString());

/** Raises `route.silent` for every route silent for too long; returns the number raised. */
export async function checkSilentRoutes(ctx: AppContext): Promise<number> {
  const rows = await ctx.database.rows<Candidate>(sql`
    select r.id, r.project_id, r.name, r.expect_mail_within, r.created_at, r.silent_notified_at,
      (select max(e.created_at) from events e where e.route_id = r.id) as last_matched_at
    from routes r join projects p on p.id = r.project_id
    where r.expect_mail_within is not null and r.deleted_at is null and r.enabled
      and p.notifications is not null and p.notifications -> 'types' @> '["route.silent"]'::jsonb`);
  const now = ctx.clock.now();
  let raised = 0;
  for (const r of rows) {
    let withinMs: number;
    try {
      [withinMs = Number.POSITIVE_INFINITY] = parseRetrySchedule(r.expect_mail_within);
    } catch {
      continue; // validated when set; a value that no longer parses is left alone
    }
    const last = r.last_matched_at ?? r.created_at;
    if (now.getTime() - ms(last) < withinMs) continue;
    // Already told about this silence: mail has not matched since.
    if (
      r.silent_notified_at !== null &&
      (r.last_matched_at === null || ms(r.last_matched_at) <= ms(r.silent_notified_at))
    )
      continue;
    const at = now.toISOString();
    const id = newId("ntf");
    const body = {
      id,
      type: "route.silent",
      created_at: at,
      data: {
        route_id: r.id,
        name: r.name,
        expect_mail_within: r.expect_mail_within,
        last_matched_at: iso(r.last_matched_at),
      },
    };
    const done = await ctx.database.rows(sql`
      with upd as (
        update routes set silent_notified_at = ${at}::timestamptz
        where id = ${r.id} and silent_notified_at is not distinct from ${iso(r.silent_notified_at)}::timestamptz
        returning id, project_id
      )
      insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at)
      select ${newId("job")}, 'notification', upd.project_id, ${JSON.stringify(body)}::jsonb, ${at}::timestamptz,
        0, ${at}::timestamptz
      from upd
      returning id`);
    raised += done.length;
  }
  if (raised > 0) await ctx.database.notify(WORK_CHANNEL, JOBS_NOTIFICATION);
  return raised;
}
