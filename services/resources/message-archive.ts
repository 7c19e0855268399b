/**
 * The stored messages of a project, read back (docs/api.md, "Messages"): a list newest first with
 * full-text search and filters, one message in full, its raw bytes. Always scoped to one project.
 *
 * Full-text search (`q`) runs over the subject, the From, To and Cc addresses and names, and the text
 * body, through `mh_message_search(parsed)`, an immutable SQL function whose results are stored and
 * GIN-indexed in `message_search` by a background indexer (message-search-index.ts; same SQL on
 * Postgres and on the embedded PGlite). The `simple` configuration is used: no language stemming,
 * so any language and any address matches word for word; words are ANDed (`websearch_to_tsquery`:
 * quotes for phrases, `-word` to exclude).
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, desc, eq, gte, inArray, lt, lte, or, type SQL, sql } from "drizzle-orm";
import type { AnyPgColumn } from "drizzle-orm/pg-core";
import { withFullBodies } from "../attachments/body-blobs.ts";
import { ambiguousMessageId, isMessagePk, messageIdCandidates } from "../attachments/tokens.ts";
import type { AppContext } from "../context.ts";
import { attachments, events, messageSearch, messageSearchQueue, messages } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { EventStatusSchema } from "../lib/event-status.ts";
import { Integer, Nullable, Timestamp } from "../lib/schema.ts";

const Person = Type.Object({ email: Type.String(), name: Type.String() });

export const MessageSummarySchema = Type.Object({
  id: Type.String({ description: "the stored message's `msg_…` id" }),
  message_id: Type.String({ description: "the Message-ID header value with angle brackets" }),
  subject: Type.String(),
  from: Type.Array(Person),
  to: Type.Array(Person),
  received_at: Timestamp,
  source_type: Type.String(),
  size_bytes: Integer(),
  attachments_count: Integer(),
  events: Type.Array(Type.Object({ id: Type.String(), route_id: Type.String(), status: EventStatusSchema })),
});
export type MessageSummary = Static<typeof MessageSummarySchema>;

export const MessagePageSchema = Type.Object({
  items: Type.Array(MessageSummarySchema),
  next_cursor: Nullable(Type.String()),
});
export type MessagePage = Static<typeof MessagePageSchema>;

export const MessageDetailSchema = Type.Intersect([
  MessageSummarySchema,
  Type.Object({
    headers: Type.Record(Type.String(), Type.String()),
    text: Type.String(),
    html: Type.String(),
    attachments: Type.Array(Type.Unknown()),
    mail: Type.Record(Type.String(), Type.Unknown(), {
      description: "what the service understands about the message (thread, reply text, automated mail, …)",
    }),
  }),
]);
export type MessageDetail = Static<typeof MessageDetailSchema>;

/** Filters of the message list. */
export interface ListMessagesQuery {
  q?: string;
  from?: string;
  to?: string;
  subject?: string;
  since?: string;
  until?: string;
  /** 1..200, default 50 */
  limit?: number;
  cursor?: string;
}

type Row = typeof messages.$inferSelect;

const SUMMARY = {
  id: messages.id,
  messageId: messages.messageId,
  parsed: messages.parsed,
  receivedAt: messages.receivedAt,
  sourceType: messages.sourceType,
  rawSizeBytes: messages.rawSizeBytes,
  textBlobKey: messages.textBlobKey,
  htmlBlobKey: messages.htmlBlobKey,
};
type SummaryRow = Pick<
  Row,
  "id" | "messageId" | "parsed" | "receivedAt" | "sourceType" | "rawSizeBytes" | "textBlobKey" | "htmlBlobKey"
>;

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
function likeEscape(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function parseTime(value: string, path: string): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new AppError("request.invalid", `${path.slice(1)} is not an RFC 3339 date-time`, [
      { path, message: "expected an RFC 3339 date-time" },
    ]);
  return date;
}

/** Newest first (received_at, then id); `next_cursor` is null on the last page. */
export async function listMessages(
  ctx: AppContext,
  projectId: string,
  q: ListMessagesQuery,
): Promise<MessagePage> {
  const limit = q.limit ?? 50;
  const where: SQL[] = [];
  const person = (field: "from" | "to", value: string) =>
    sql`exists (select 1 from jsonb_array_elements(${messages.parsed} -> ${field}) p
          where lower(p ->> 'email') like ${`%${likeEscape(value.trim().toLowerCase())}%`}
             or lower(p ->> 'name') like ${`%${likeEscape(value.trim().toLowerCase())}%`})`;
  if (q.from?.trim()) where.push(person("from", q.from));
  if (q.to?.trim()) {
    const to = person("to", q.to);
    const cc = sql`exists (select 1 from jsonb_array_elements(coalesce(${messages.parsed} -> 'cc', '[]'::jsonb)) p
          where lower(p ->> 'email') like ${`%${likeEscape(q.to.trim().toLowerCase())}%`})`;
    where.push(sql`(${to} or ${cc})`);
  }
  if (q.subject?.trim())
    where.push(sql`(${messages.parsed} ->> 'subject') ilike ${`%${likeEscape(q.subject.trim())}%`}`);
  const since = q.since ? parseTime(q.since, "/since") : null;
  const until = q.until ? parseTime(q.until, "/until") : null;
  const cursor = q.cursor ? decodeCursor(q.cursor) : null;
  /** the time range and the cursor, on the given (received_at, id) columns */
  const window = (at: AnyPgColumn, id: AnyPgColumn): SQL[] => {
    const w: SQL[] = [];
    if (since) w.push(gte(at, since));
    if (until) w.push(lte(at, until));
    if (cursor) {
      const before = or(lt(at, cursor.at), and(eq(at, cursor.at), lt(id, cursor.id)));
      if (before) w.push(before);
    }
    return w;
  };
  const db = ctx.database.db;
  const text = q.q?.trim();
  let rows: SummaryRow[];
  if (!text) {
    rows = await db
      .select(SUMMARY)
      .from(messages)
      .where(and(eq(messages.projectId, projectId), ...where, ...window(messages.receivedAt, messages.id)))
      .orderBy(desc(messages.receivedAt), desc(messages.id))
      .limit(limit + 1);
  } else {
    // Indexed messages through `message_search` (searchIndexed), and the project's messages not
    // indexed yet by evaluating their documents; merged newest first.
    const query = sql`websearch_to_tsquery('simple', ${text})`;
    const [indexed, queued] = await Promise.all([
      searchIndexed(
        ctx,
        projectId,
        query,
        where,
        window(messageSearch.receivedAt, messageSearch.messagePk),
        limit,
        PHRASE.test(text),
      ),
      db
        .select(SUMMARY)
        .from(messageSearchQueue)
        .innerJoin(messages, eq(messages.id, messageSearchQueue.messagePk))
        .where(
          and(
            eq(messages.projectId, projectId),
            sql`mh_message_search(${messages.parsed}) @@ ${query}`,
            ...where,
            ...window(messages.receivedAt, messages.id),
          ),
        )
        .orderBy(desc(messages.receivedAt), desc(messages.id))
        .limit(limit + 1),
    ]);
    // A message indexed while the two reads ran may be in both.
    const seen = new Set<string>();
    rows = [...indexed, ...queued]
      .filter((r) => !seen.has(r.id) && seen.add(r.id))
      .sort((x, y) => newestFirst(x.receivedAt, x.id, y.receivedAt, y.id))
      .slice(0, limit + 1);
  }
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    items: await summaries(ctx, page),
    next_cursor: rows.length > limit && last ? encodeCursor(last.receivedAt, last.id) : null,
  };
}

/** The order of the list, as its SQL sorts it: received_at descending, then id descending. */
function newestFirst(xAt: Date, xId: string, yAt: Date, yId: string): number {
  return yAt.getTime() - xAt.getTime() || (xId < yId ? 1 : xId > yId ? -1 : 0);
}

/** Matches counted through the GIN index before a search walks newest first instead. */
const GIN_CANDIDATES = 2000;
/** A quoted phrase of two words or more in a `q` (websearch syntax). */
const PHRASE = /"[^"]*\S\s+\S[^"]*"/;
/** The newest documents a phrase search tests before it turns to the GIN index. */
const PHRASE_WALK = 4000;

/**
 * The project's indexed messages matching `query` (and the other filters), newest first. Two plans,
 * each good where the other is poor, chosen by how many documents match (the planner's own guess from
 * the statistics is often far off for one word): up to {@link GIN_CANDIDATES} matches are read through
 * the GIN index and sorted; a query with more (a word most messages have) walks the project's
 * messages newest first on the (project, received_at) index and tests each document, stopping at a
 * page. Either costs a few milliseconds at 100,000 messages where the other would cost seconds.
 */
async function searchIndexed(
  ctx: AppContext,
  projectId: string,
  query: SQL,
  where: SQL[],
  window: SQL[],
  limit: number,
  phrase: boolean,
): Promise<SummaryRow[]> {
  const db = ctx.database.db;
  // A phrase is the one query the GIN index cannot answer alone: every document with all its words
  // is read again to check their positions, thousands for a phrase of common words. Such a phrase is
  // usually common itself, so the newest few thousand documents are tested first; a page found there
  // is the answer (they are the newest), and only a rarer phrase goes on to the index.
  if (phrase && where.length === 0) {
    const recent = await ctx.database.rows<{ id: string }>(sql`
      select r.id from (
        select ${messageSearch.messagePk} as id, ${messageSearch.receivedAt} as at, ${messageSearch.document} as document
        from ${messageSearch}
        where ${and(eq(messageSearch.projectId, projectId), ...window)}
        order by ${messageSearch.receivedAt} desc, ${messageSearch.messagePk} desc
        limit ${PHRASE_WALK}
      ) r
      where r.document @@ ${query}
      order by r.at desc, r.id desc
      limit ${limit + 1}`);
    if (recent.length === limit + 1) {
      return db
        .select(SUMMARY)
        .from(messages)
        .where(
          inArray(
            messages.id,
            recent.map((r) => r.id),
          ),
        )
        .orderBy(desc(messages.receivedAt), desc(messages.id))
        .limit(limit + 1);
    }
  }
  const candidates = await db
    .select({ id: messageSearch.messagePk, at: messageSearch.receivedAt })
    .from(messageSearch)
    .where(and(eq(messageSearch.projectId, projectId), sql`${messageSearch.document} @@ ${query}`, ...window))
    .limit(GIN_CANDIDATES + 1);
  if (candidates.length <= GIN_CANDIDATES) {
    if (candidates.length === 0) return [];
    // Without other filters only the page's rows are read from `messages`: the candidates are
    // ordered here, from the narrow rows of the index's table.
    const ids =
      where.length > 0
        ? candidates.map((c) => c.id)
        : candidates
            .sort((x, y) => newestFirst(x.at, x.id, y.at, y.id))
            .slice(0, limit + 1)
            .map((c) => c.id);
    return db
      .select(SUMMARY)
      .from(messages)
      .where(and(inArray(messages.id, ids), ...where))
      .orderBy(desc(messages.receivedAt), desc(messages.id))
      .limit(limit + 1);
  }
  // `is true` keeps the match out of the GIN index's reach: the walk is the plan wanted here.
  return db
    .select(SUMMARY)
    .from(messageSearch)
    .innerJoin(messages, eq(messages.id, messageSearch.messagePk))
    .where(
      and(
        eq(messageSearch.projectId, projectId),
        sql`(${messageSearch.document} @@ ${query}) is true`,
        ...where,
        ...window,
      ),
    )
    .orderBy(desc(messageSearch.receivedAt), desc(messageSearch.messagePk))
    .limit(limit + 1);
}

async function summaries(ctx: AppContext, rows: SummaryRow[]): Promise<MessageSummary[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const db = ctx.database.db;
  const [counts, evs] = await Promise.all([
    db
      .select({ pk: attachments.messagePk, n: sql<number>`count(*)::int` })
      .from(attachments)
      .where(inArray(attachments.messagePk, ids))
      .groupBy(attachments.messagePk),
    db
      .select({ pk: events.messagePk, id: events.id, routeId: events.routeId, status: events.status })
      .from(events)
      .where(inArray(events.messagePk, ids))
      .orderBy(asc(events.createdAt), asc(events.id)),
  ]);
  const countOf = new Map(counts.map((c) => [c.pk, Number(c.n)]));
  const eventsOf = new Map<string, MessageSummary["events"]>();
  for (const e of evs) {
    if (e.pk === null) continue;
    const list = eventsOf.get(e.pk) ?? [];
    list.push({ id: e.id, route_id: e.routeId, status: e.status });
    eventsOf.set(e.pk, list);
  }
  return rows.map((r) => ({
    id: r.id,
    message_id: r.messageId,
    subject: r.parsed.subject,
    from: r.parsed.from.map((p) => ({ email: p.email, name: p.name })),
    to: r.parsed.to.map((p) => ({ email: p.email, name: p.name })),
    received_at: r.receivedAt.toISOString(),
    source_type: r.sourceType,
    size_bytes: r.rawSizeBytes,
    attachments_count: countOf.get(r.id) ?? 0,
    events: eventsOf.get(r.id) ?? [],
  }));
}

/** The understanding fields of a stored message (those it was stored with). */
const MAIL_FIELDS = [
  "thread_id",
  "reply_text",
  "text_source",
  "forwarded",
  "auto",
  "auth",
  "spam",
  "message_id_conflict",
] as const;

/**
 * The project's message named by `key`: a `msg_…` id, or a Message-ID (URL-decoded, brackets optional).
 * `messages.not_found` when there is none; `messages.ambiguous` (with their `msg_…` ids) when the
 * Message-ID names several stored messages.
 */
export async function resolveMessage(ctx: AppContext, projectId: string, key: string): Promise<SummaryRow> {
  const db = ctx.database.db;
  if (isMessagePk(key)) {
    const [own] = await db
      .select(SUMMARY)
      .from(messages)
      .where(and(eq(messages.projectId, projectId), eq(messages.id, key.trim())));
    if (own) return own;
  }
  const rows = await db
    .select(SUMMARY)
    .from(messages)
    .where(and(eq(messages.projectId, projectId), inArray(messages.messageId, messageIdCandidates(key))))
    .orderBy(asc(messages.receivedAt), asc(messages.id))
    .limit(21);
  const [only, second] = rows;
  if (!only)
    throw new AppError("messages.not_found", "no stored message with that id or Message-ID in this project");
  if (second)
    throw ambiguousMessageId(
      key,
      rows.map((r) => r.id),
    );
  return only;
}

export async function getMessage(ctx: AppContext, projectId: string, key: string): Promise<MessageDetail> {
  const row = await resolveMessage(ctx, projectId, key);
  const [summary] = await summaries(ctx, [row]);
  // A body kept in the blob store is read back whole (attachments/body-blobs.ts).
  const p = await withFullBodies(ctx, row.parsed, row);
  const mail: Record<string, unknown> = {};
  for (const f of MAIL_FIELDS) if (p[f] !== undefined) mail[f] = p[f];
  return {
    ...(summary as MessageSummary),
    headers: p.headers,
    text: p.text,
    html: p.html,
    attachments: p.attachments,
    mail,
  };
}

/** Opaque to clients: base64url of the last row's (received_at, id). */
function encodeCursor(at: Date, id: string): string {
  return Buffer.from(`${at.toISOString()}|${id}`, "utf8").toString("base64url");
}

function decodeCursor(cursor: string): { at: Date; id: string } {
  const [at, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  const date = new Date(at ?? "");
  if (!id || !isMessagePk(id) || Number.isNaN(date.getTime()))
    throw new AppError("request.invalid", "cursor is not valid; pass next_cursor from a previous page", [
      { path: "/cursor", message: "not a cursor returned by this API" },
    ]);
  return { at: date, id };
}

/**
 * The raw bytes of the project's message named by `key` (as in {@link resolveMessage}), with its
 * `msg_…` id: from the row for a small message, from the blob store for a larger one.
 */
export async function rawMessageOf(
  ctx: AppContext,
  projectId: string,
  key: string,
): Promise<{ id: string; bytes: Uint8Array }> {
  const { id } = await resolveMessage(ctx, projectId, key);
  const [row] = await ctx.database.db
    .select({ key: messages.rawBlobKey, bytes: messages.rawBytes })
    .from(messages)
    .where(eq(messages.id, id))
    .limit(1);
  if (!row) throw new AppError("messages.not_found", "the message is no longer stored");
  if (row.bytes !== null) return { id, bytes: new Uint8Array(row.bytes) };
  const blob = await ctx.blobs.read(row.key as string);
  return { id, bytes: new Uint8Array(await new Response(blob).arrayBuffer()) };
}
