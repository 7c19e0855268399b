/**
 * A message's raw bytes: where they come from (in memory, or a spool file the intake wrote) and where
 * they are kept. A message up to {@link INLINE_RAW_MAX_BYTES} keeps them in its own row
 * (`messages.raw_bytes`), written by the same statement as the row: one commit makes the message
 * durable, with no file to create, fsync and rename into place. On a 2 KB message that file work was
 * most of the intake's cost (an inode allocation, two fsyncs, a directory entry, per message). A larger
 * message keeps them in the blob store (`raw_blob_key`), where they are streamed and never loaded into
 * the database. Exactly one of the two is set (a check constraint says so).
 */
import { eq } from "drizzle-orm";
import { type BlobRef, refOfBytes, refOfHash } from "../attachments/blob-store.ts";
import type { AppContext } from "../context.ts";
import { messages } from "../db/schema/index.ts";

/** Largest raw message kept in its row instead of the blob store. */
export const INLINE_RAW_MAX_BYTES = 256 * 1024;

/**
 * A spooled raw message. With `sha256` (hashed while spooling) the file may be moved into the blob
 * store instead of copied (it is then gone: callers remove it afterwards ignoring ENOENT); `bytes`
 * are its contents when the spool kept them, sparing a read.
 */
export interface SpooledRaw {
  path: string;
  size: number;
  sha256?: string;
  bytes?: Uint8Array;
}

/** A raw message as an intake hands it over: its bytes, or a spool file the caller owns. */
export type RawSource = Uint8Array | SpooledRaw;

/** True when a raw message of `size` bytes is kept in its row. */
export function keepsRawInline(size: number): boolean {
  return size <= INLINE_RAW_MAX_BYTES;
}

/** The size the intake was told of, before reading anything. */
export function declaredSize(source: RawSource): number {
  return source instanceof Uint8Array ? source.byteLength : source.size;
}

/** The raw bytes, read from the spool file unless they are in hand. */
export async function readRawSource(source: RawSource): Promise<Uint8Array> {
  if (source instanceof Uint8Array) return source;
  if (source.bytes !== undefined) return source.bytes;
  return new Uint8Array(await Bun.file(source.path).arrayBuffer());
}

/** The blob ref of the raw bytes, from the hash the spool computed when it covers exactly these bytes. */
export function rawRefOf(source: RawSource, raw: Uint8Array): BlobRef {
  return !(source instanceof Uint8Array) && source.sha256 !== undefined && source.size === raw.byteLength
    ? refOfHash(source.sha256, raw.byteLength)
    : refOfBytes(raw);
}

/**
 * Stores the raw message in the blob store. A spool file hashed on the way in is moved into a store
 * that can adopt files (the fs store: one write, one fsync) when its hash is the bytes being ingested;
 * else the bytes are put.
 */
export function putRawBlob(
  ctx: AppContext,
  source: RawSource,
  raw: Uint8Array,
  ref: BlobRef,
): Promise<BlobRef> {
  if (
    !(source instanceof Uint8Array) &&
    source.sha256 === ref.sha256 &&
    source.size === ref.size &&
    ctx.blobs.adoptFile
  ) {
    return ctx.blobs.adoptFile(source.path, ref);
  }
  return ctx.blobs.put(raw);
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
