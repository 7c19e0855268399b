/**
 * The dashboard's access to events, attempts and stored messages — the one place that knows where they
 * come from. Events go through the events API's read side (`delivery/event-views.ts`) and replays through
 * `queueReplay`, so the dashboard and `/v1/events` always agree; recent messages for the playground are
 * read here directly (no API lists them).
 */
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { type EventStatus, events, messages } from "../db/schema/index.ts";
import { EVENT_STATUSES } from "../lib/event-status.ts";
import {
  type AttemptView,
  type EventDetailView,
  type EventView,
  getEventDetail,
  listAttempts,
  listEvents,
} from "../resources/events.ts";
import { queueReplay } from "../resources/replay.ts";

export type { AttemptView, EventDetailView, EventView };

/** Every event status, in the order the filter offers them. */
export { EVENT_STATUSES };

/** True when `s` names an event status. */
export function isEventStatus(s: unknown): s is EventStatus {
  return typeof s === "string" && (EVENT_STATUSES as readonly string[]).includes(s);
}

/** One page of the event list, newest first. */
export function eventPage(
  ctx: AppContext,
  projectId: string,
  filter: {
    status?: EventStatus;
    routeId?: string;
    cursor?: string;
    limit?: number;
    since?: string;
    until?: string;
    q?: string;
  },
): Promise<{ items: EventView[]; next_cursor: string | null }> {
  return listEvents(ctx, projectId, {
    ...(filter.status ? { status: filter.status } : {}),
    ...(filter.routeId ? { route_id: filter.routeId } : {}),
    ...(filter.since ? { since: filter.since } : {}),
    ...(filter.until ? { until: filter.until } : {}),
    ...(filter.q ? { q: filter.q } : {}),
    ...(filter.cursor ? { cursor: filter.cursor } : {}),
    limit: filter.limit ?? 25,
  });
}

/** An event with its message summary, route snapshot and attempt log (oldest first). */
export async function eventWithAttempts(
  ctx: AppContext,
  projectId: string,
  eventId: string,
): Promise<{ event: EventDetailView; attempts: AttemptView[] }> {
  const event = await getEventDetail(ctx, projectId, eventId);
  return { event, attempts: await listAttempts(ctx, projectId, eventId) };
}

/** Queues a `replay_event` job exactly as `POST /v1/events/{id}/replay` does. */
export function replayEvent(ctx: AppContext, projectId: string, eventId: string): Promise<void> {
  return queueReplay(ctx, projectId, eventId);
}

/** A stored message as the playground's picker lists it. */
export interface MessageChoice {
  id: string;
  message_id: string;
  subject: string;
  from: string;
  received_at: string;
}

/** The project's most recent stored messages. */
export async function recentMessages(
  ctx: AppContext,
  projectId: string,
  limit = 30,
): Promise<MessageChoice[]> {
  const rows = await ctx.database.db
    .select({
      id: messages.id,
      messageId: messages.messageId,
      parsed: messages.parsed,
      at: messages.receivedAt,
    })
    .from(messages)
    .where(eq(messages.projectId, projectId))
    .orderBy(desc(messages.receivedAt))
    .limit(limit);
  return rows.map((r) => ({
    id: r.id,
    message_id: r.messageId,
    subject: r.parsed.subject,
    from: r.parsed.from[0]?.email ?? "",
    received_at: r.at.toISOString(),
  }));
}

/** Subjects of the messages behind `eventIds` (for the event list), keyed by event id. */
export async function subjectsOf(
  ctx: AppContext,
  projectId: string,
  eventIds: string[],
): Promise<Map<string, string>> {
  if (eventIds.length === 0) return new Map();
  const rows = await ctx.database.db
    .select({ id: events.id, subject: sql<string | null>`${messages.parsed}->>'subject'` })
    .from(events)
    .innerJoin(messages, eq(messages.id, events.messagePk))
    .where(and(eq(events.projectId, projectId), inArray(events.id, eventIds)));
  return new Map(rows.map((r) => [r.id, r.subject ?? ""]));
}
