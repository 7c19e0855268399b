/**
 * Stored messages as a preview runs on them: the normalised model with its raw size and source, found
 * by primary key (the dashboard's picker) or by Message-ID (the API). Always scoped to one project.
 */
import { and, desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { messages } from "../db/schema/index.ts";
import type { NormalizedMessage, SourceType } from "../lib/message.ts";

/** A message to preview on, with what the mapper's `ctx` and `meta` report about it. */
export interface PreviewMessage {
  message: NormalizedMessage;
  rawSize: number;
  source: SourceType;
}

const columns = { parsed: messages.parsed, size: messages.rawSizeBytes, source: messages.sourceType };

/**
 * The project's stored message with primary key `id`, or its newest one with Message-ID `messageId`
 * (angle brackets optional, surrounding space ignored); null when there is none.
 */
export async function findStoredMessage(
  ctx: AppContext,
  projectId: string,
  key: { id: string } | { messageId: string },
): Promise<PreviewMessage | null> {
  const db = ctx.database.db;
  if ("id" in key) {
    const [row] = await db
      .select(columns)
      .from(messages)
      .where(and(eq(messages.projectId, projectId), eq(messages.id, key.id)));
    return row ? { message: row.parsed, rawSize: row.size, source: row.source } : null;
  }
  const id = key.messageId.trim();
  // Message-IDs are stored with their angle brackets (RFC 5322 section 3.6.4 msg-id).
  for (const messageId of id.startsWith("<") ? [id] : [id, `<${id}>`]) {
    const [row] = await db
      .select(columns)
      .from(messages)
      .where(and(eq(messages.projectId, projectId), eq(messages.messageId, messageId)))
      .orderBy(desc(messages.receivedAt))
      .limit(1);
    if (row) return { message: row.parsed, rawSize: row.size, source: row.source };
  }
  return null;
}
