/**
 * What the endpoints resource and the delivery worker share about events held behind an endpoint: the
 * `last_error` they wait with, and making them due again when the endpoint is resumed or its circuit
 * closes (delivery/gate.ts parks them, delivery/circuit.ts closes circuits).
 */
import { sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { DUE_STATUSES, statusListSql } from "../lib/event-status.ts";

/** `last_error` of an event waiting behind a paused endpoint or an open circuit. */
export const ENDPOINT_PAUSED = "endpoint_paused";

/**
 * Makes the events parked behind a paused endpoint or an open circuit due now and wakes the workers.
 * Returns how many.
 */
export async function releaseParkedEvents(ctx: AppContext, endpointId: string): Promise<number> {
  const now = ctx.clock.now().toISOString();
  const rows = await ctx.database.rows<{ id: string }>(sql`
    update events set next_attempt_at = ${now}::timestamptz, updated_at = ${now}::timestamptz
    where endpoint_id = ${endpointId} and status in ${sql.raw(statusListSql(DUE_STATUSES))}
      and last_error = ${ENDPOINT_PAUSED} and next_attempt_at > ${now}::timestamptz
    returning id`);
  if (rows.length > 0) await ctx.wakeWorkers();
  return rows.length;
}
