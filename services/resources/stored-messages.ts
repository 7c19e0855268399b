/**
 * Stored messages as a preview runs on them: the normalised model with its raw size and source, found
 * by primary key (the dashboard's picker) or by Message-ID (the API). Always scoped to one project.
 *
 * A lookup by Message-ID resolves to one stored message or to none: a Message-ID is not secret and
 * anyone can send a message reusing one, so when several stored messages share it the answer is
 * "ambiguous" with their `msg_…` ids (any of which may be asked for instead), never the newest.
 */
import { and, asc, eq, inArray } from "drizzle-orm";
import { withFullBodies } from "../attachments/body-blobs.ts";
import { isMessagePk, MAX_AMBIGUOUS_LISTED, messageIdCandidates } from "../attachments/tokens.ts";
import type { AppContext } from "../context.ts";
import { messages } from "../db/schema/index.ts";
import type { Envelope, NormalizedMessage, SourceType } from "../lib/message.ts";

/** A message to preview on, with what the mapper's `ctx` and `meta` report about it. */
export interface PreviewMessage {
  message: NormalizedMessage;
  rawSize: number;
  source: SourceType;
  /** the SMTP envelope it was stored with (the mapper's `ctx.envelope`); absent or null otherwise */
  envelope?: Envelope | null;
}

/** A Message-ID shared by several stored messages of the project: their ids, oldest first. */
export interface AmbiguousMessageId {
  ambiguous: string[];
}

const columns = {
  id: messages.id,
  parsed: messages.parsed,
  size: messages.rawSizeBytes,
  source: messages.sourceType,
  envelope: messages.envelope,
  textBlobKey: messages.textBlobKey,
  htmlBlobKey: messages.htmlBlobKey,
};

type Row = {
  parsed: NormalizedMessage;
  size: number;
  source: SourceType;
  envelope: Envelope | null;
  textBlobKey: string | null;
  htmlBlobKey: string | null;
};

/** The message to preview on, its blob-stored bodies read back whole (attachments/body-blobs.ts). */
async function previewMessage(ctx: AppContext, row: Row): Promise<PreviewMessage> {
  const message = await withFullBodies(ctx, row.parsed, row);
  return { message, rawSize: row.size, source: row.source, envelope: row.envelope };
}

/**
 * The project's stored message with primary key `id`, or the one with Message-ID `messageId` (angle
 * brackets optional, surrounding space ignored; a `msg_…` id is taken as the primary key first); null
 * when there is none, {@link AmbiguousMessageId} when the Message-ID names several.
 */
export async function findStoredMessage(
  ctx: AppContext,
  projectId: string,
  key: { id: string } | { messageId: string },
): Promise<PreviewMessage | AmbiguousMessageId | null> {
  const db = ctx.database.db;
  const byPk = async (id: string) => {
    const [row] = await db
      .select(columns)
      .from(messages)
      .where(and(eq(messages.projectId, projectId), eq(messages.id, id)));
    return row ? previewMessage(ctx, row) : null;
  };
  if ("id" in key) return byPk(key.id);
  if (isMessagePk(key.messageId)) {
    const own = await byPk(key.messageId.trim());
    if (own) return own;
  }
  const sameId = and(
    eq(messages.projectId, projectId),
    inArray(messages.messageId, messageIdCandidates(key.messageId)),
  );
  const order = [asc(messages.receivedAt), asc(messages.id)];
  const [only, second] = await db
    .select(columns)
    .from(messages)
    .where(sameId)
    .orderBy(...order)
    .limit(2);
  if (!only) return null;
  if (!second) return previewMessage(ctx, only);
  const shared = await db
    .select({ id: messages.id })
    .from(messages)
    .where(sameId)
    .orderBy(...order)
    .limit(MAX_AMBIGUOUS_LISTED + 1);
  return { ambiguous: shared.map((r) => r.id) };
}
