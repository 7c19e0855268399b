/**
 * Where a message's raw bytes are kept. A message up to {@link INLINE_RAW_MAX_BYTES} keeps them in its
 * own row (`messages.raw_bytes`), written by the same statement as the row: one commit makes the
 * message durable, with no file to create, fsync and rename into place. On a 2 KB message that file
 * work was most of the intake's cost (an inode allocation, two fsyncs, a directory entry, per
 * message). A larger message keeps them in the blob store (`raw_blob_key`), where they are streamed
 * and never loaded into the database. Exactly one of the two is set (a check constraint says so).
 */
import { eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { messages } from "../db/schema/index.ts";

/** Largest raw message kept in its row instead of the blob store. */
export const INLINE_RAW_MAX_BYTES = 256 * 1024;

/** True when a raw message of `size` bytes is kept in its row. */
export function keepsRawInline(size: number): boolean {
  return size <= INLINE_RAW_MAX_BYTES;
}

/** The raw bytes of a stored message (by primary key), or null when there is no such message. */
export async function readRawMessage(ctx: AppContext, messagePk: string): Promise<Uint8Array | null> {
  const [row] = await ctx.database.db
    .select({ key: messages.rawBlobKey, bytes: messages.rawBytes })
    .from(messages)
    .where(eq(messages.id, messagePk))
    .limit(1);
  if (!row) return null;
  if (row.bytes !== null) return new Uint8Array(row.bytes);
  const blob = await ctx.blobs.read(row.key as string);
  return new Uint8Array(await new Response(blob).arrayBuffer());
}
