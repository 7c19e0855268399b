/**
 * The hold queue (docs/delivery.md, "Held events"): events the project's intake policy stored as `held`
 * wait here until a person releases them (they become `pending` and get a normal first attempt) or
 * discards them (`discarded`, `last_error` `held:discarded`). Each change is one guarded update, so two
 * people acting on the same event at once cannot both succeed: the second gets `events.not_held`.
 */
import { and, eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { events } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { isUuid } from "../lib/ids.ts";
import { type EventView, eventView } from "./events.ts";

/** `last_error` of an event discarded from the hold queue. */
export const HELD_DISCARDED = "held:discarded";

async function notHeld(ctx: AppContext, projectId: string, id: string): Promise<never> {
  const [row] = await ctx.database.db
    .select({ status: events.status })
    .from(events)
    .where(and(eq(events.id, id), eq(events.projectId, projectId)));
  if (!row) throw new AppError("events.not_found", "event not found");
  throw new AppError("events.not_held", `the event is ${row.status}, not held`);
}

function heldEvent(projectId: string, id: string) {
  return and(eq(events.id, id), eq(events.projectId, projectId), eq(events.status, "held"));
}

/** Releases a held event: `pending`, due now. Throws `events.not_found` or `events.not_held`. */
export async function releaseHeldEvent(ctx: AppContext, projectId: string, id: string): Promise<EventView> {
  if (!isUuid(id)) throw new AppError("events.not_found", "event not found");
  const now = ctx.clock.now();
  const [row] = await ctx.database.db
    .update(events)
    .set({ status: "pending", nextAttemptAt: now, updatedAt: now })
    .where(heldEvent(projectId, id))
    .returning();
  if (!row) return notHeld(ctx, projectId, id);
  return eventView(row);
}

/** Discards a held event: `discarded`, `last_error` `held:discarded`. Throws as {@link releaseHeldEvent}. */
export async function discardHeldEvent(ctx: AppContext, projectId: string, id: string): Promise<EventView> {
  if (!isUuid(id)) throw new AppError("events.not_found", "event not found");
  const [row] = await ctx.database.db
    .update(events)
    .set({ status: "discarded", lastError: HELD_DISCARDED, nextAttemptAt: null, updatedAt: ctx.clock.now() })
    .where(heldEvent(projectId, id))
    .returning();
  if (!row) return notHeld(ctx, projectId, id);
  return eventView(row);
}
