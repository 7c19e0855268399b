/**
 * Read side of the events API (docs/api.md): the Event, event detail and Attempt shapes, and the list
 * with filters and an opaque cursor. Every query is scoped to the key's project; an event of another
 * project, or an id that is not a UUID, is simply not found.
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, desc, eq, gte, lt, or, type SQL, sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { RequestCaptureSchema, ResponseCaptureSchema } from "../db/schema/attempts.ts";
import { attempts, type EventStatus, events, messages } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { EventStatusSchema } from "../lib/event-status.ts";
import { isUuid } from "../lib/ids.ts";
import { redactUrl } from "../lib/redact-url.ts";
import { Integer, Nullable, Timestamp } from "../lib/schema.ts";
import { understandingOf } from "../lib/understanding.ts";
import { orderedPipeline } from "../routing/pipeline.ts";
import { MessageUnderstandingSchema } from "../routing/schemas/generic.ts";
import { PipelineViewSchema } from "./routes.ts";

/** An event as listed: its status and delivery progress (docs/delivery.md, "Events API"). */
export const EventViewSchema = Type.Object({
  id: Type.String({ format: "uuid" }),
  route_id: Type.String(),
  status: EventStatusSchema,
  attempts: Integer(),
  last_error: Nullable(Type.String()),
  next_attempt_at: Nullable(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** See {@link EventViewSchema}. */
export type EventView = Static<typeof EventViewSchema>;

/** An address in the message summary: the message model's `Person` (lib/message.ts). */
const PersonSchema = Type.Object({ email: Type.String(), name: Type.String() });

/** A page of {@link listEvents}: `next_cursor` is null on the last page. */
export const EventPageSchema = Type.Object({
  items: Type.Array(EventViewSchema),
  next_cursor: Nullable(Type.String()),
});
/** See {@link EventPageSchema}. */
export type EventPage = Static<typeof EventPageSchema>;

/** Event plus message summary and route snapshot (`GET /v1/events/{id}`). */
export const EventDetailViewSchema = Type.Composite([
  EventViewSchema,
  Type.Object({
    /** null once the message was erased (`DELETE /v1/messages/{message_id}`) */
    message: Nullable(
      Type.Object({
        message_id: Type.String(),
        subject: Type.String(),
        from: Type.Array(PersonSchema),
        to: Type.Array(PersonSchema),
        /** what the service understands about the message (docs/parsing.md) */
        mail: Nullable(MessageUnderstandingSchema),
      }),
    ),
    /** attachments the route's attachment policy stripped or let through, and why (docs/routing.md) */
    policy_notes: Type.Array(
      Type.Object({
        attachment_id: Type.String(),
        filename: Type.String(),
        reason: Type.Union([
          Type.Literal("disallowed_attachment_type"),
          Type.Literal("content_type_mismatch"),
        ]),
        action: Type.Union([Type.Literal("strip"), Type.Literal("deliver")]),
        detail: Type.String(),
      }),
    ),
    routing: Type.Object({
      route_id: Type.String(),
      name: Type.String(),
      endpoint_id: Type.String(),
      endpoint_url: Type.String(),
      kid: Type.String(),
      pipeline: PipelineViewSchema,
    }),
  }),
]);
/** See {@link EventDetailViewSchema}. */
export type EventDetailView = Static<typeof EventDetailViewSchema>;

/** One delivery attempt with its captures, as stored (secrets already redacted). */
export const AttemptViewSchema = Type.Object({
  id: Type.String(),
  number: Integer(),
  trigger: Type.Union([Type.Literal("auto"), Type.Literal("replay")]),
  status: Type.Union([Type.Literal("success"), Type.Literal("failed")]),
  http_status: Integer(),
  latency_ms: Integer(),
  created_at: Timestamp,
  request_capture: RequestCaptureSchema,
  response_capture: ResponseCaptureSchema,
});
/** See {@link AttemptViewSchema}. */
export type AttemptView = Static<typeof AttemptViewSchema>;

type EventRow = typeof events.$inferSelect;

export function eventView(r: EventRow): EventView {
  return {
    id: r.id,
    route_id: r.routeId,
    status: r.status,
    attempts: r.attempts,
    last_error: r.lastError,
    next_attempt_at: r.nextAttemptAt?.toISOString() ?? null,
    created_at: r.createdAt.toISOString(),
    updated_at: r.updatedAt.toISOString(),
  };
}

/** Filters of the event list. */
export interface ListEventsQuery {
  status?: EventStatus;
  route_id?: string;
  /** created at or after (RFC 3339) */
  since?: string;
  /** created before (RFC 3339) */
  until?: string;
  /** words that must all occur (case-insensitively) in the message's subject, a From address or its Message-ID */
  q?: string;
  /** 1..200, default 50 */
  limit?: number;
  cursor?: string;
}

/** Newest first; `next_cursor` is null on the last page. */
export async function listEvents(ctx: AppContext, projectId: string, q: ListEventsQuery): Promise<EventPage> {
  const limit = q.limit ?? 50;
  const where: SQL[] = [eq(events.projectId, projectId)];
  if (q.status) where.push(eq(events.status, q.status));
  if (q.route_id) where.push(eq(events.routeId, q.route_id));
  if (q.since) where.push(gte(events.createdAt, timeParam("since", q.since)));
  if (q.until) where.push(lt(events.createdAt, timeParam("until", q.until)));
  for (const word of searchWords(q.q)) {
    // each word in the subject, a From address or display name, or the Message-ID of the event's message
    const pattern = `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    where.push(
      sql`exists (select 1 from ${messages} m where m.id = ${events.messagePk} and (
        m.parsed ->> 'subject' ilike ${pattern}
        or (m.parsed -> 'from')::text ilike ${pattern}
        or m.message_id ilike ${pattern}))`,
    );
  }
  if (q.cursor) {
    const c = decodeCursor(q.cursor);
    // Row-value comparison spelled out: (created_at, id) < (c.at, c.id) in the descending order.
    const before = or(lt(events.createdAt, c.at), and(eq(events.createdAt, c.at), lt(events.id, c.id)));
    if (before) where.push(before);
  }
  const rows = await ctx.database.db
    .select()
    .from(events)
    .where(and(...where))
    .orderBy(desc(events.createdAt), desc(events.id))
    .limit(limit + 1);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: page.map(eventView),
    next_cursor: rows.length > limit && last ? encodeCursor(last.createdAt, last.id) : null,
  };
}

/** The words of a search, at most 8, each at most 100 characters; empty for no search. */
function searchWords(q: string | undefined): string[] {
  return (q ?? "")
    .split(/\s+/)
    .filter(Boolean)
    .slice(0, 8)
    .map((w) => w.slice(0, 100));
}

/** A `since`/`until` query value as a date, or `request.invalid` naming the parameter. */
function timeParam(name: string, value: string): Date {
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(date.getTime())) {
    throw new AppError("request.invalid", "the request query is invalid", [
      { path: `/${name}`, message: `'${name}' must be an RFC 3339 date-time such as 2026-11-25T09:30:00Z` },
    ]);
  }
  return date;
}

/** Opaque to clients: base64url of the last row's (created_at, id). */
function encodeCursor(at: Date, id: string): string {
  return Buffer.from(`${at.toISOString()}|${id}`, "utf8").toString("base64url");
}

function decodeCursor(cursor: string): { at: Date; id: string } {
  const [at, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const date = new Date(at ?? "");
  if (!id || !isUuid(id) || Number.isNaN(date.getTime())) {
    throw new AppError("request.invalid", "cursor is not valid; pass next_cursor from a previous page", [
      { path: "/cursor", message: "not a cursor returned by this API" },
    ]);
  }
  return { at: date, id };
}

async function findEvent(ctx: AppContext, projectId: string, id: string): Promise<EventRow> {
  if (!isUuid(id)) throw new AppError("events.not_found", "event not found");
  const [row] = await ctx.database.db
    .select()
    .from(events)
    .where(and(eq(events.id, id), eq(events.projectId, projectId)));
  if (!row) throw new AppError("events.not_found", "event not found");
  return row;
}

/** The event with its message summary and route snapshot. */
export async function getEventDetail(
  ctx: AppContext,
  projectId: string,
  id: string,
): Promise<EventDetailView> {
  const row = await findEvent(ctx, projectId, id);
  const [msg] =
    row.messagePk === null
      ? []
      : await ctx.database.db
          .select({ parsed: messages.parsed })
          .from(messages)
          .where(eq(messages.id, row.messagePk));
  const snap = row.routeSnapshot;
  return {
    ...eventView(row),
    message: msg
      ? {
          message_id: msg.parsed.message_id,
          subject: msg.parsed.subject,
          from: msg.parsed.from,
          to: msg.parsed.to,
          mail: understandingOf(msg.parsed),
        }
      : null,
    policy_notes: row.policyNotes ?? [],
    routing: {
      route_id: snap.route_id,
      name: snap.name,
      endpoint_id: snap.endpoint_id,
      // A record of where it went, like the captures: credentials in the URL are masked.
      endpoint_url: redactUrl(snap.endpoint_url),
      kid: snap.kid,
      pipeline: orderedPipeline(snap),
    },
  };
}

/** The attempt log of an event, oldest first. */
export async function listAttempts(ctx: AppContext, projectId: string, id: string): Promise<AttemptView[]> {
  const row = await findEvent(ctx, projectId, id);
  const rows = await ctx.database.db
    .select()
    .from(attempts)
    .where(eq(attempts.eventId, row.id))
    .orderBy(asc(attempts.number));
  return rows.map((a) => ({
    id: a.id,
    number: a.number,
    trigger: a.trigger,
    status: a.status,
    http_status: a.httpStatus,
    latency_ms: a.latencyMs,
    created_at: a.createdAt.toISOString(),
    // Stored redacted; masked again so captures recorded before URL masking existed are safe too.
    request_capture: { ...a.requestCapture, url: redactUrl(a.requestCapture.url) },
    response_capture: a.responseCapture,
  }));
}
