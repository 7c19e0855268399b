/**
 * Claiming due work with a lease (graphile-worker's `getJobs` habit): each claim is ONE statement —
 * a `select … for update skip locked` in a CTE feeding an `update … returning` — so two workers never
 * receive the same row, and no worker waits on another's locked rows. A lease (`lease_owner`,
 * `lease_expires_at`) replaces graphile's `locked_at`: a row whose lease has expired is claimable
 * again, and `releaseExpiredLeases` sweeps stale leases so dashboards do not show dead owners.
 *
 * Works the same on Postgres and on PGlite (one connection; `skip locked` is accepted and trivially
 * satisfied there).
 */

import { type SQL, sql } from "drizzle-orm";
import type { Database } from "../db/client.ts";
import { GATED_ENDPOINT_PREDICATE } from "../db/schema/endpoints.ts";
import type { RouteSnapshot } from "../db/schema/events.ts";
import type { PolicyNote } from "../lib/attachment-policy.ts";
import { DUE_STATUSES, type DueStatus, statusListSql } from "../lib/event-status.ts";

/** Options of {@link claimDueEvents} and {@link claimDueJobs}. */
export interface ClaimOptions {
  /** Lease owner id, unique per worker instance. */
  owner: string;
  /** Most rows to claim in this statement. */
  limit: number;
  /** Lease length; must outlast the longest attempt (endpoint timeout ≤ 60 s + body building). */
  leaseMs: number;
  now: Date;
}

/** What a worker needs of a claimed event; the rest it loads per batch. */
export interface ClaimedEvent {
  id: string;
  projectId: string;
  /** null when the message was erased: the event can no longer be delivered */
  messagePk: string | null;
  routeId: string;
  status: DueStatus;
  attempts: number;
  budgetStart: number;
  idempotencyKey: string;
  routeSnapshot: RouteSnapshot;
  body: string | null;
  /** the stored body's media type; null with no body, or for bodies stored before it was kept (JSON) */
  bodyContentType: string | null;
  /** how `body` holds the body: null or "utf8" as text, "base64" for bytes */
  bodyEncoding: "utf8" | "base64" | null;
  /** the blob of a stored body too large for `body` (delivery/body-store.ts): the bytes sent; else null */
  bodyBlobKey: string | null;
  createdAt: Date;
  /** what the route's attachment policy stripped or let through at intake (null or absent: nothing) */
  policyNotes?: PolicyNote[] | null;
  /** epoch ms before which the attempt must not start (its endpoint's rate limit: gate.ts) */
  notBeforeMs?: number;
}

/** A claimed event as the database returns it. */
export interface ClaimedEventRow {
  id: string;
  project_id: string;
  message_pk: string | null;
  route_id: string;
  status: DueStatus;
  attempts: number;
  budget_start: number;
  idempotency_key: string;
  route_snapshot: RouteSnapshot | string;
  body: string | null;
  body_content_type: string | null;
  body_encoding: "utf8" | "base64" | null;
  body_blob_key: string | null;
  created_at: Date | string;
  policy_notes: PolicyNote[] | string | null;
}

// `id = any(array(select id from due))` rather than `from due where e.id = due.id`: the planner
// then looks the claimed rows up by primary key instead of hash-joining a scan of the whole table.

/** {@link GATED_ENDPOINT_PREDICATE} on the endpoint row `g` of the ungated claim's anti-join. */
const GATED_BY_G = sql.raw(GATED_ENDPOINT_PREDICATE.replaceAll("deleted_at", "g.deleted_at"));

/**
 * Claims up to `limit` due events (`pending`/`retry`, `next_attempt_at <= now`, no live lease),
 * oldest due first, and leases them to `owner`. One statement: see the module comment.
 *
 * Events of gated endpoints (paused, circuit not closed, limits set: `GATED_ENDPOINT_PREDICATE`) are
 * left to {@link claimEndpointEvents} (gate.ts). They are left out by an anti-join on the endpoint row
 * (`not exists`), which the planner costs as "keeps nearly every row", so it walks the due index in
 * order and stops at `limit`. An earlier form, `endpoint_id <> all(array(select … gated))`, was
 * costed as keeping almost nothing whenever most due events share one endpoint (the estimate of `<>`
 * against a column with few distinct values), and the planner then read and sorted EVERY due event
 * on each claim: 25 ms per claim with 20,000 due (0.2 ms now), the cost growing with the backlog.
 *
 * The statement runs with `enable_sort = off` (`set local`), so the only plan left is the due index read
 * in order. Left to the statistics, a mass change of the due set that the statistics do not know of yet —
 * a bulk replay making 100,000 dead events due within a minute, before autovacuum analyzes the table —
 * made the planner expect one due row, read the whole due set through the endpoint index and sort it:
 * 2 s per claim with 22,000 due (tools/bench/bulk-replay.ts), for every claim of every worker.
 *
 * On Postgres the settings and the claim travel as ONE simple-protocol message of several statements,
 * which Postgres runs as one implicit transaction (so `set local` holds for the claim and ends with
 * it): one round trip per claim. The explicit transaction it replaced (`begin`, `set local`, the claim,
 * `commit`) took four, and a worker's claims run one after another on its critical path: in the
 * delivery bench a claim took 10–12 ms that way and takes 4–6 ms now. The simple protocol takes no
 * parameters, so the claim's values are written into the text as literals ({@link sqlLiteral}); the
 * text then differs on every claim and is planned each time (about 0.3 ms), which the round trips
 * saved outweigh.
 *
 * The claim also commits with `synchronous_commit = off`: it does not wait for its WAL to reach the
 * disk (sampled in the delivery bench, about half of a claim's time in the database went to that wait). A lease is worth nothing after a
 * crash of the database: if one is lost with the last moments of WAL, the event is simply due again
 * and claimed anew, as when a worker dies, and the attempt made under the lost lease finds no lease to
 * record against (at-least-once, as always). The attempt's record commits synchronously, and its
 * commit makes every WAL record before it durable, the claim's included.
 */
export async function claimDueEvents(database: Database, opts: ClaimOptions): Promise<ClaimedEvent[]> {
  const now = opts.now.toISOString();
  const until = new Date(opts.now.getTime() + opts.leaseMs).toISOString();
  const limit = claimLimit(opts.limit);
  if (database.kind === "postgres") {
    const results = await database.rows<ClaimedEventRow[]>(
      sql`set local enable_sort = off; set local synchronous_commit = off; ${dueClaim(sqlLiteral(now), sqlLiteral(until), sqlLiteral(opts.owner), sql.raw(String(limit)))}`,
    );
    return (results[1] ?? []).map(toClaimedEvent);
  }
  // PGlite runs in-process (no round trips): an explicit transaction takes parameters.
  const rows = await database.db.transaction(async (tx) => {
    await tx.execute(sql`set local enable_sort = off`);
    return txRows<ClaimedEventRow>(
      tx,
      dueClaim(sql`${now}`, sql`${until}`, sql`${opts.owner}`, sql`${limit}`),
    );
  });
  return rows.map(toClaimedEvent);
}

/** The claim statement of {@link claimDueEvents}, its values given as SQL (parameters or literals). */
function dueClaim(now: SQL, until: SQL, owner: SQL, limit: SQL): SQL {
  return sql`
    with due as (
      select id from events
      where status in ${sql.raw(statusListSql(DUE_STATUSES))}
        and next_attempt_at <= ${now}::timestamptz
        and (lease_owner is null or lease_expires_at < ${now}::timestamptz)
        and not exists (select 1 from endpoints g where g.id = events.endpoint_id and ${GATED_BY_G})
      order by next_attempt_at
      limit ${limit}
      for update of events skip locked
    )
    update events e
    set lease_owner = ${owner}, lease_expires_at = ${until}::timestamptz
    where e.id = any(array(select id from due))
    returning ${CLAIMED_EVENT_COLUMNS}`;
}

/** A claim's row limit as a whole number ≥ 0 (it is written into the statement's text on Postgres). */
function claimLimit(limit: number): number {
  return Number.isFinite(limit) ? Math.max(0, Math.floor(limit)) : 0;
}

/**
 * `value` as an SQL string literal, for statements sent without parameters: an escape string
 * (`E'…'`), whose backslashes and quotes are escaped, so it reads the same whatever the server's
 * `standard_conforming_strings`.
 */
export function sqlLiteral(value: string): SQL {
  return sql.raw(`E'${value.replaceAll("\\", "\\\\").replaceAll("'", "''")}'`);
}

/** A transaction's handle, as far as raw statements go. */
export type Tx = { execute(query: SQL): Promise<unknown> };

/** The rows of a raw query in a transaction, whichever driver (postgres.js: an array; PGlite: `.rows`). */
export async function txRows<T>(tx: Tx, query: SQL): Promise<T[]> {
  const r = (await tx.execute(query)) as unknown;
  return (Array.isArray(r) ? r : (r as { rows: T[] }).rows) as T[];
}

/** The columns a claim returns, as an SQL fragment for `returning`. */
export const CLAIMED_EVENT_COLUMNS = sql.raw(
  "e.id, e.project_id, e.message_pk, e.route_id, e.status, e.attempts, e.budget_start, e.idempotency_key, e.route_snapshot, e.body, e.body_content_type, e.body_encoding, e.body_blob_key, e.created_at, e.policy_notes",
);

/** A claimed row as the worker uses it. */
export function toClaimedEvent(r: ClaimedEventRow): ClaimedEvent {
  return {
    id: r.id,
    projectId: r.project_id,
    messagePk: r.message_pk,
    routeId: r.route_id,
    status: r.status,
    attempts: Number(r.attempts),
    budgetStart: Number(r.budget_start),
    idempotencyKey: r.idempotency_key,
    // postgres.js parses jsonb; a driver that does not would hand back text.
    routeSnapshot: typeof r.route_snapshot === "string" ? JSON.parse(r.route_snapshot) : r.route_snapshot,
    body: r.body,
    bodyContentType: r.body_content_type ?? null,
    bodyEncoding: r.body_encoding ?? null,
    bodyBlobKey: r.body_blob_key ?? null,
    createdAt: new Date(r.created_at),
    policyNotes: typeof r.policy_notes === "string" ? JSON.parse(r.policy_notes) : r.policy_notes,
  };
}

/**
 * Gives back leases of events this owner claimed but did not attempt (shutdown), so another worker
 * can take them at once instead of after the lease expires. Returns how many were released.
 */
export async function releaseEventLeases(database: Database, owner: string, ids: string[]): Promise<number> {
  if (ids.length === 0) return 0;
  const rows = await database.rows<{ id: string }>(sql`
    update events set lease_owner = null, lease_expires_at = null
    where lease_owner = ${owner} and id in (${sql.join(
      ids.map((id) => sql`${id}::uuid`),
      sql`, `,
    )})
    returning id`);
  return rows.length;
}

/**
 * The stale-lock sweeper (graphile's `resetLockedAt`): clears leases that expired before `now`, on
 * events and jobs, left by workers that crashed or lost their connection. Claims already ignore
 * expired leases; sweeping keeps the lease columns truthful. Returns the number of rows freed.
 */
export async function releaseExpiredLeases(database: Database, now: Date): Promise<number> {
  const at = now.toISOString();
  const ev = await database.rows<{ id: string }>(sql`
    update events set lease_owner = null, lease_expires_at = null
    where lease_owner is not null and lease_expires_at < ${at}::timestamptz
    returning id`);
  const jb = await database.rows<{ id: string }>(sql`
    update jobs set lease_owner = null, lease_expires_at = null
    where lease_owner is not null and lease_expires_at < ${at}::timestamptz
    returning id`);
  return ev.length + jb.length;
}

/** A claimed background job (replays). */
export interface ClaimedJob {
  id: string;
  kind: string;
  projectId: string;
  payload: Record<string, unknown>;
  attempts: number;
}

/** Claims due jobs exactly like {@link claimDueEvents}; `attempts` counts runs of the job. */
export async function claimDueJobs(database: Database, opts: ClaimOptions): Promise<ClaimedJob[]> {
  const now = opts.now.toISOString();
  const until = new Date(opts.now.getTime() + opts.leaseMs).toISOString();
  const rows = await database.rows<{
    id: string;
    kind: string;
    project_id: string;
    payload: Record<string, unknown> | string;
    attempts: number;
  }>(sql`
    with due as (
      select id from jobs
      where run_at <= ${now}::timestamptz and status in ('queued', 'running')
        and (lease_owner is null or lease_expires_at < ${now}::timestamptz)
      order by run_at
      limit ${opts.limit}
      for update skip locked
    )
    update jobs j
    set lease_owner = ${opts.owner}, lease_expires_at = ${until}::timestamptz, attempts = j.attempts + 1
    where j.id = any(array(select id from due))
    returning j.id, j.kind, j.project_id, j.payload, j.attempts`);
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    projectId: r.project_id,
    payload: typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload,
    attempts: Number(r.attempts),
  }));
}
