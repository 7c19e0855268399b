/**
 * Claims of gated endpoints: an endpoint that is paused, whose circuit is not closed or is counting
 * failures, or that has `rate_limit_per_s` / `max_in_flight` set (docs/delivery.md, "Endpoint circuit
 * and limits"). The ordinary claim (claim.ts) skips their events; here each such endpoint is claimed
 * on its own, in a transaction that first locks the endpoint's row, so every worker process sharing the
 * database sees one state and one budget:
 *
 * - paused: due events are parked (`retry`, `last_error` `endpoint_paused`, due again in a minute);
 *   resuming makes them due at once (circuit.ts).
 * - open: due events are parked until the next probe time; at that time ONE due event is claimed as
 *   the probe and the circuit goes `half_open`. Its 2xx closes the circuit (circuit.ts).
 * - half_open: nothing is claimed while the probe is out; a probe whose worker died is given up
 *   after a lease length and another one goes.
 * - closed: the claim takes at most `max_in_flight` minus the endpoint's events now leased, at most
 *   what its rate allows over the next {@link RATE_AHEAD_MS} (`rate_limit_per_s`: each event then waits
 *   for its send time, 1/rate after the one before), and — while failures
 *   are being counted — at most what is left of the failure threshold, so an endpoint that went down
 *   gets no more attempts than the threshold before its circuit opens.
 *
 * In flight is counted from the leases themselves (events of the endpoint with a live lease), so a
 * worker that dies frees its share when its leases expire; no counter can drift. Parking pushes
 * `next_attempt_at` forward so the parked backlog does not sit at the head of the due index.
 */
import { sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { GATED_ENDPOINT_PREDICATE } from "../db/schema/endpoints.ts";
import { DUE_STATUSES, statusListSql } from "../lib/event-status.ts";
import { ENDPOINT_PAUSED } from "../resources/endpoint-circuit.ts";
import {
  CLAIMED_EVENT_COLUMNS,
  type ClaimedEvent,
  type ClaimedEventRow,
  type Tx,
  toClaimedEvent,
  txRows,
} from "./claim.ts";

export { ENDPOINT_PAUSED };

/**
 * How far ahead a rate-limited endpoint's events are claimed. The bucket (`rate_tokens`,
 * `rate_refilled_at`) holds at most one token, so no second ever gets more than the limit + 1 sends;
 * a claim may take events up to this far ahead of their turn, each with its own send time
 * (`ClaimedEvent.notBeforeMs`, 1/rate apart) that the worker waits for. So the limit is kept however
 * slowly claims come (a claim may take up to this long and the rate is still reached), and a worker
 * that fell behind gets no catch-up burst. A bucket of a whole second's worth let a worker that fell
 * behind send twice the limit in the next second: tools/bench/rate-limit.ts measured seconds of 126
 * at a limit of 50 across four processes.
 */
export const RATE_AHEAD_MS = 1000;

/** How long a paused endpoint's due events are parked before they are looked at again. */
export const PAUSED_RECHECK_MS = 60_000;

/** Options of {@link claimGatedEvents}. */
export interface GateClaimOptions {
  owner: string;
  /** most events to claim over all gated endpoints */
  limit: number;
  leaseMs: number;
  now: Date;
}

/** What the gated claim took, and when it should be tried again (a rate limit's next token). */
export interface GateClaim {
  events: ClaimedEvent[];
  /** whether any endpoint is gated (the worker looks again soon when one is) */
  gated: boolean;
  /** epoch ms of the earliest moment a limited endpoint can take more, when it has more due */
  wakeAtMs: number | null;
}

interface EndpointGateRow {
  id: string;
  paused: boolean;
  circuit_state: "closed" | "open" | "half_open";
  consecutive_failures: number;
  circuit_probe_at: Date | string | null;
  circuit_interval_ms: number;
  rate_limit_per_s: number | null;
  rate_tokens: number | null;
  rate_refilled_at: Date | string | null;
  max_in_flight: number | null;
}

const ms = (d: Date | string | null): number | null => (d === null ? null : new Date(d).getTime());

/** Claims due events of gated endpoints; see the module comment. */
export async function claimGatedEvents(ctx: AppContext, opts: GateClaimOptions): Promise<GateClaim> {
  const ids = await ctx.database.rows<{ id: string }>(
    sql`select id from endpoints where ${sql.raw(GATED_ENDPOINT_PREDICATE)}`,
  );
  const out: GateClaim = { events: [], gated: ids.length > 0, wakeAtMs: null };
  let left = opts.limit;
  for (const { id } of ids) {
    if (left <= 0) break;
    const got = await claimEndpointEvents(ctx, id, { ...opts, limit: left });
    out.events.push(...got.events);
    left -= got.events.length;
    if (got.wakeAtMs !== null) out.wakeAtMs = Math.min(out.wakeAtMs ?? got.wakeAtMs, got.wakeAtMs);
  }
  return out;
}

/** The gate of one endpoint, in one transaction under the endpoint's row lock. */
export async function claimEndpointEvents(
  ctx: AppContext,
  endpointId: string,
  opts: GateClaimOptions,
): Promise<{ events: ClaimedEvent[]; wakeAtMs: number | null }> {
  const threshold = ctx.config.endpointFailureThreshold;
  const nowMs = opts.now.getTime();
  const now = opts.now.toISOString();
  return ctx.database.db.transaction(async (tx) => {
    // The endpoint's due events in order from its index, whatever the statistics say (claim.ts).
    await tx.execute(sql`set local enable_sort = off`);
    const [ep] = await txRows<EndpointGateRow>(
      tx,
      sql`select id, paused, circuit_state, consecutive_failures, circuit_probe_at, circuit_interval_ms,
            rate_limit_per_s, rate_tokens, rate_refilled_at, max_in_flight
          from endpoints where id = ${endpointId} and deleted_at is null for update`,
    );
    if (!ep) return { events: [], wakeAtMs: null };
    const park = (untilMs: number) =>
      tx.execute(sql`
        update events set status = 'retry', last_error = ${ENDPOINT_PAUSED},
          next_attempt_at = ${new Date(untilMs).toISOString()}::timestamptz, updated_at = ${now}::timestamptz
        where endpoint_id = ${endpointId} and status in ${sql.raw(statusListSql(DUE_STATUSES))}
          and next_attempt_at <= ${now}::timestamptz
          and (lease_owner is null or lease_expires_at < ${now}::timestamptz)`);

    if (ep.paused) {
      await park(nowMs + PAUSED_RECHECK_MS);
      return { events: [], wakeAtMs: null };
    }
    const probeAt = ms(ep.circuit_probe_at) ?? 0;
    if (ep.circuit_state !== "closed") {
      if (nowMs < probeAt) {
        await park(probeAt);
        return { events: [], wakeAtMs: null };
      }
      // Time for a probe (or the last probe's worker is gone): one real due event goes.
      // The due event with the fewest attempts: probes rotate over the backlog instead of spending
      // one event's budget until it dies.
      const events = await claim(tx, endpointId, 1, opts, "probe");
      if (events.length === 0) return { events, wakeAtMs: null };
      await tx.execute(sql`
        update endpoints set circuit_state = 'half_open',
          circuit_probe_at = ${new Date(nowMs + opts.leaseMs).toISOString()}::timestamptz
        where id = ${endpointId}`);
      await park(nowMs + Number(ep.circuit_interval_ms));
      return { events, wakeAtMs: null };
    }

    let allowance = opts.limit;
    const failures = Number(ep.consecutive_failures);
    if (ep.max_in_flight !== null || failures > 0) {
      const [row] = await txRows<{ n: number | string }>(
        tx,
        sql`select count(*) as n from events
            where lease_owner is not null and lease_expires_at > ${now}::timestamptz
              and endpoint_id = ${endpointId}`,
      );
      const inFlight = Number(row?.n ?? 0);
      if (ep.max_in_flight !== null) allowance = Math.min(allowance, Number(ep.max_in_flight) - inFlight);
      if (failures > 0) allowance = Math.min(allowance, threshold - failures - inFlight);
    }
    const rate = ep.rate_limit_per_s === null ? null : Number(ep.rate_limit_per_s);
    // The bucket holds at most one token; it may go below zero by up to RATE_AHEAD_MS worth, each event
    // taken on credit waiting for its own send time (`notBeforeMs`) in the worker.
    let tokens = 0;
    // The bucket's time: a claim that waited for the row lock carries a `now` older than the last
    // claim's; counted from that older time, its events' start times would crowd the ones handed out
    // just before (measured: 52.4/s over a minute at a limit of 50 with four processes).
    let at = nowMs;
    if (rate !== null) {
      const last = ms(ep.rate_refilled_at);
      at = Math.max(nowMs, last ?? nowMs);
      const before = ep.rate_tokens === null || last === null ? 1 : Number(ep.rate_tokens);
      tokens = Math.min(1, before + (last === null ? 0 : ((at - last) / 1000) * rate));
      allowance = Math.min(allowance, Math.floor(tokens + (RATE_AHEAD_MS / 1000) * rate));
    }
    const events = allowance > 0 ? await claim(tx, endpointId, allowance, opts) : [];
    let wakeAtMs: number | null = null;
    if (rate !== null) {
      // Event i goes when its token is there: at once for a whole token, else 1/rate apart.
      events.forEach((e, i) => {
        e.notBeforeMs = at + Math.max(0, Math.ceil(((i + 1 - tokens) * 1000) / rate));
      });
      tokens -= events.length;
      await tx.execute(sql`
        update endpoints set rate_tokens = ${tokens}, rate_refilled_at = ${new Date(at).toISOString()}::timestamptz
        where id = ${endpointId}`);
      // All the credit taken: come back when the next event could be claimed (more may be due by then).
      if (events.length > 0 && events.length === allowance)
        wakeAtMs = at + Math.max(1, Math.ceil(((1 - tokens) * 1000) / rate - RATE_AHEAD_MS));
    }
    return { events, wakeAtMs };
  });
}

async function claim(
  tx: Tx,
  endpointId: string,
  limit: number,
  opts: GateClaimOptions,
  order: "due" | "probe" = "due",
): Promise<ClaimedEvent[]> {
  const now = opts.now.toISOString();
  const until = new Date(opts.now.getTime() + opts.leaseMs).toISOString();
  const rows = await txRows<ClaimedEventRow>(
    tx,
    sql`
    with due as (
      select id from events
      where endpoint_id = ${endpointId} and status in ${sql.raw(statusListSql(DUE_STATUSES))}
        and next_attempt_at <= ${now}::timestamptz
        and (lease_owner is null or lease_expires_at < ${now}::timestamptz)
      order by ${order === "probe" ? sql.raw("attempts - budget_start, next_attempt_at") : sql.raw("next_attempt_at")}
      limit ${limit}
      for update skip locked
    )
    update events e
    set lease_owner = ${opts.owner}, lease_expires_at = ${until}::timestamptz
    where e.id = any(array(select id from due))
    returning ${CLAIMED_EVENT_COLUMNS}`,
  );
  return rows.map(toClaimedEvent);
}
