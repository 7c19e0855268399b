/**
 * Database-side checks shared by the chaos suites, run after the cluster has drained: what the SMTP
 * clients were told (250) against what is stored, event end states, the attempt log, leases, and the
 * receiver's view of each event's idempotency key.
 */
import type postgres from "postgres";
import type { Sink } from "./sink.ts";

/** Counts of what was checked. */
export interface DrainFacts {
  events: number;
  delivered: number;
}

/**
 * Polls until at least `minEvents` events exist and all of them are `delivered` (or `timeoutMs`
 * passes). Returns whether it drained; the checks of {@link verifyDrained} say what is missing.
 */
export async function waitDrained(sql: postgres.Sql, minEvents: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await sql<{ total: number; delivered: number }[]>`
      select count(*)::int as total, count(*) filter (where status = 'delivered')::int as delivered
      from events`;
    if (row && row.total >= minEvents && row.delivered === row.total) return true;
    if (Date.now() > deadline) return false;
    await Bun.sleep(250);
  }
}

/**
 * Checks the invariants of a drained cluster; pushes one line per violation into `violations`.
 * `accepted` are the Message-IDs that got a 250 (or a 202).
 */
export async function verifyDrained(
  sql: postgres.Sql,
  sink: Sink,
  accepted: string[],
  violations: string[],
): Promise<DrainFacts> {
  const stored = new Map<string, { copies: number; events: number }>();
  const rows = await sql<{ message_id: string; copies: number; events: number }[]>`
    select m.message_id, count(distinct m.id)::int as copies, count(e.id)::int as events
    from messages m left join events e on e.message_pk = m.id
    group by m.message_id`;
  for (const r of rows) stored.set(r.message_id, { copies: r.copies, events: r.events });
  for (const id of accepted) {
    const s = stored.get(id);
    if (!s) violations.push(`${id} got a 250 but is not stored`);
    else if (s.events === 0) violations.push(`${id} got a 250 but has no event`);
    else if (s.copies > 1) violations.push(`${id} is stored ${s.copies} times`);
  }

  const events = await sql<
    {
      id: string;
      status: string;
      attempts: number;
      last_error: string | null;
      key: string;
      owner: string | null;
    }[]
  >`select id::text, status, attempts, last_error, idempotency_key as key, lease_owner as owner from events`;
  let delivered = 0;
  for (const e of events) {
    if (e.status === "delivered") delivered++;
    else violations.push(`event ${e.id} ended ${e.status} after ${e.attempts} attempts: ${e.last_error}`);
    if (e.owner !== null) violations.push(`event ${e.id} is still leased by ${e.owner}`);
    if (e.status === "delivered" && !sink.firstOk.has(e.key))
      violations.push(`event ${e.id} is delivered but the receiver never answered 2xx for its key`);
  }
  const eventOfKey = new Map(events.map((e) => [e.key, e.id]));
  const wrong = new Set<string>();
  for (const d of sink.deliveries) {
    const id = eventOfKey.get(d.key);
    if (id === undefined) wrong.add(`receiver got key ${d.key} that no event has`);
    else if (d.eventId !== id)
      wrong.add(`key ${d.key} (event ${id}) arrived with a body of event ${d.eventId}`);
  }
  violations.push(...wrong);

  const jobs = await sql<{ n: number }[]>`select count(*)::int as n from jobs where lease_owner is not null`;
  if ((jobs[0]?.n ?? 0) > 0) violations.push(`${jobs[0]?.n} jobs still leased`);

  const doubled = await sql<{ event_id: string; n: number }[]>`
    select event_id::text, count(*)::int as n from attempts where status = 'success'
    group by event_id having count(*) > 1`;
  for (const d of doubled) violations.push(`event ${d.event_id} has ${d.n} successful attempt rows`);
  const unexplained = await sql<{ n: number }[]>`
    select count(*)::int as n from events e where e.status = 'delivered'
      and not exists (select 1 from attempts a where a.event_id = e.id and a.status = 'success')`;
  if ((unexplained[0]?.n ?? 0) > 0)
    violations.push(`${unexplained[0]?.n} delivered events have no successful attempt row`);
  return { events: events.length, delivered };
}
