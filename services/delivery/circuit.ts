/**
 * The endpoint circuit breaker's transitions (docs/delivery.md, "Endpoint circuit and limits"), written
 * after each recorded attempt; gate.ts decides what may be claimed in each state.
 *
 * - closed: a retryable failure counts (`consecutive_failures`); at `ENDPOINT_FAILURE_THRESHOLD` the
 *   circuit opens and the first probe is due a minute later.
 * - open / half_open: a failed probe (any failure while half_open) re-opens with the wait doubled, at
 *   most 30 minutes. A 2xx in any state closes the circuit, resets the count, and makes the events
 *   parked behind it (`endpoint_paused`) due at once.
 *
 * Success costs no write when the endpoint had nothing to reset as far as this process knows: not as
 * loaded for the attempt, nor since (a failure this process counted after the attempt's batch was
 * loaded, while the attempt was waiting or in flight) — the common case, so a healthy endpoint's
 * delivery path is unchanged. Without the second part, an endpoint failing now and then under load
 * (the successes' views loaded before the failures) never had its count reset, and its "consecutive"
 * failures added up until the circuit opened. A failure counted by another process is seen by this
 * one's next batch load.
 *
 * Each transition is one `update` that reads and writes the row under its lock, so workers racing on
 * one endpoint cannot lose a count; the same statement queues the `endpoint.circuit_opened` / `_closed`
 * notification, so it exists if and only if the transition committed.
 */
import { type SQL, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { newId } from "../lib/ids.ts";
import { redactUrl } from "../lib/redact-url.ts";
import { releaseParkedEvents } from "../resources/endpoint-circuit.ts";
import { notificationJobsInsert, wakeForNotifications } from "../resources/notifications.ts";

/** The first wait before a probe, then doubled after each failed probe up to {@link PROBE_MAX_MS}. */
export const PROBE_FIRST_MS = 60_000;
/** The longest wait between probes. */
export const PROBE_MAX_MS = 30 * 60_000;

/** What the endpoint looked like when the attempt's batch was loaded. */
export interface EndpointCircuitView {
  id: string;
  /** shown, redacted, in the circuit notifications */
  url: string;
  circuitState: string;
  consecutiveFailures: number;
}

/** An attempt's effect on its endpoint's circuit. */
export type CircuitSignal = "success" | "retryable" | "terminal";

/** A circuit transition, for logs and notifications. */
export interface CircuitChange {
  endpointId: string;
  from: string;
  to: string;
}

/** The transition as the statement returns it. */
interface CircuitRow {
  from_state: string;
  to_state: string;
  notified: boolean;
}

/**
 * Per database (one per process outside tests): the endpoints with a failure this process counted and
 * no reset since, each with the number of such failures; an endpoint leaves the map when a success of
 * this process resets its count and no failure was counted while that reset was being written.
 */
const countedHere = new WeakMap<object, Map<string, number>>();

function countedFailures(ctx: AppContext): Map<string, number> {
  let ids = countedHere.get(ctx.database);
  if (!ids) {
    ids = new Map();
    countedHere.set(ctx.database, ids);
  }
  return ids;
}

/** RFC 3339 text of a timestamptz expression, as `Date.toISOString` writes it. */
const isoText = (expr: SQL): SQL => sql`to_char(${expr} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * Runs the transition `update` (of `endpoints e` joined to its locked prior row `old`, returning
 * nothing yet) with the circuit notification queued by the same statement: opening (from closed) and
 * closing notify, a failed probe re-opening an open circuit does not.
 */
async function transition(
  ctx: AppContext,
  endpoint: EndpointCircuitView,
  update: SQL,
  at: string,
): Promise<CircuitRow[]> {
  const body = sql`jsonb_build_object('id', ${newId("ntf")}::text,
    'type', case when u.to_state = 'closed' then 'endpoint.circuit_closed' else 'endpoint.circuit_opened' end,
    'created_at', ${at}::text,
    'data', jsonb_build_object('endpoint_id', ${endpoint.id}::text, 'url', ${redactUrl(endpoint.url)}::text,
      'consecutive_failures', u.consecutive_failures,
      'since', coalesce(${isoText(sql`u.since`)}, ${at}::text)))`;
  return ctx.database.rows<CircuitRow>(sql`
    with upd as (
      ${update}
      returning old.circuit_state as from_state, e.circuit_state as to_state, e.project_id,
        e.consecutive_failures, e.circuit_since as since
    ), ntf as (
      ${notificationJobsInsert(sql`select ${newId("job")}::text, u.project_id, ${body} from upd u
        where u.from_state <> u.to_state and (u.to_state = 'closed' or u.from_state = 'closed')`)}
    )
    select from_state, to_state, exists (select 1 from ntf) as notified from upd`);
}

/** Applies one attempt's outcome to its endpoint's circuit; returns the transition, if any. */
export async function recordCircuitOutcome(
  ctx: AppContext,
  endpoint: EndpointCircuitView,
  signal: CircuitSignal,
): Promise<CircuitChange | null> {
  const now = ctx.clock.now();
  const at = now.toISOString();
  let rows: CircuitRow[];
  const counted = countedFailures(ctx);
  if (signal === "success") {
    const fresh = endpoint.circuitState === "closed" && endpoint.consecutiveFailures === 0;
    const seen = counted.get(endpoint.id);
    if (fresh && seen === undefined) return null;
    rows = await transition(
      ctx,
      endpoint,
      sql`
      update endpoints e set circuit_state = 'closed', consecutive_failures = 0, circuit_probe_at = null,
        circuit_interval_ms = ${PROBE_FIRST_MS},
        circuit_since = case when e.circuit_state = 'closed' then e.circuit_since else ${at}::timestamptz end
      from (select id, circuit_state from endpoints where id = ${endpoint.id} for update) old
      where e.id = old.id and (e.circuit_state <> 'closed' or e.consecutive_failures > 0)`,
      at,
    );
    if (counted.get(endpoint.id) === seen) counted.delete(endpoint.id);
  } else if (signal === "retryable") {
    const threshold = ctx.config.endpointFailureThreshold;
    rows = await transition(
      ctx,
      endpoint,
      sql`
      update endpoints e set
        consecutive_failures = e.consecutive_failures + 1,
        circuit_state = case
          when e.circuit_state = 'half_open' then 'open'
          when e.circuit_state = 'closed' and e.consecutive_failures + 1 >= ${threshold} then 'open'
          else e.circuit_state end,
        circuit_interval_ms = case
          when e.circuit_state = 'half_open' then least(e.circuit_interval_ms * 2, ${PROBE_MAX_MS})
          when e.circuit_state = 'closed' then ${PROBE_FIRST_MS}
          else e.circuit_interval_ms end,
        circuit_probe_at = case
          when e.circuit_state = 'half_open'
            then ${at}::timestamptz + least(e.circuit_interval_ms * 2, ${PROBE_MAX_MS}) * interval '1 millisecond'
          when e.circuit_state = 'closed' and e.consecutive_failures + 1 >= ${threshold}
            then ${at}::timestamptz + ${PROBE_FIRST_MS} * interval '1 millisecond'
          else e.circuit_probe_at end,
        circuit_since = case
          when e.circuit_state = 'closed' and e.consecutive_failures + 1 >= ${threshold} then ${at}::timestamptz
          else e.circuit_since end
      from (select id, circuit_state from endpoints where id = ${endpoint.id} for update) old
      where e.id = old.id`,
      at,
    );
    counted.set(endpoint.id, (counted.get(endpoint.id) ?? 0) + 1);
  } else {
    // The endpoint answered, but not with a 2xx: a probe that got one does not close the circuit.
    if (endpoint.circuitState === "closed") return null;
    rows = await transition(
      ctx,
      endpoint,
      sql`
      update endpoints e set circuit_state = 'open',
        circuit_probe_at = ${at}::timestamptz + e.circuit_interval_ms * interval '1 millisecond'
      from (select id, circuit_state from endpoints where id = ${endpoint.id} for update) old
      where e.id = old.id and e.circuit_state = 'half_open'`,
      at,
    );
  }
  const row = rows[0];
  if (!row || row.from_state === row.to_state) return null;
  const change = { endpointId: endpoint.id, from: row.from_state, to: row.to_state };
  // After the commit (the statement's own): queued notifications are due now.
  if (row.notified) await wakeForNotifications(ctx.database);
  if (row.to_state === "closed") await releaseParkedEvents(ctx, endpoint.id);
  ctx.logger.info(row.to_state === "closed" ? "endpoint circuit closed" : "endpoint circuit opened", {
    endpoint_id: endpoint.id,
    from: row.from_state,
    to: row.to_state,
  });
  return change;
}
