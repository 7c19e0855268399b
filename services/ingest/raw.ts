/**
 * A message's raw bytes: where they come from (in memory, or a spool file the intake wrote) and where
 * they are kept. A message up to {@link INLINE_RAW_MAX_BYTES} keeps them in its own row
 * (`messages.raw_bytes`), written by the same statement as the row: one commit makes the message
 * durable, with no file to create, fsync and rename into place. On a 2 KB message that file work was
 * most of the intake's cost (an inode allocation, two fsyncs, a directory entry, per message). A larger
 * message keeps them in the blob store (`raw_blob_key`), where they are streamed and never loaded into
 * the database. Exactly one of the two is set (a check constraint says so).
 */
import { link, unlink } from "node:fs/promises";
import { eq } from "drizzle-orm";
import { type BlobRef, type BlobStore, refOfBytes, refOfHash } from "../attachments/blob-store.ts";
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

/** The raw message stored in the blob store ({@link storeRawBlob}). */
export interface StoredRaw {
  ref: BlobRef;
  /**
   * Stores it again, for a blob removed between the put and the commit (ingest.ts, restoreSweptBlobs):
   * from the spool file, or from bytes the caller holds anyway; from the bytes read for the parse only
   * when neither is there. Either way the intake need not hold those through the store statement.
   */
  again(): Promise<BlobRef>;
  /** Lets go of what {@link again} reads (a second link to an adopted spool file). Call it once, at the end. */
  release(): Promise<void>;
}

/** The name of the second link an adopted spool file keeps until the intake is done (swept like it). */
function keptPath(path: string): string {
  return `${path.endsWith(".eml") ? path.slice(0, -".eml".length) : path}-kept.eml`;
}

/**
 * {@link putRawBlob}, keeping a way to store the raw message again that does not need `raw`: a spool
 * file that is adopted (moved into the store) first gets a second link, from which it is adopted again
 * if need be; a spool file that is copied is still there to be read again. The bytes of a large
 * message need not be held through the store statement: on PGlite, whose memory is the service's own,
 * they made the peak of a plain-text message over 3× its size.
 */
export async function storeRawBlob(
  ctx: AppContext,
  source: RawSource,
  raw: Uint8Array,
  ref: BlobRef,
): Promise<StoredRaw> {
  // No function is made here: a closure made in an async function keeps its whole frame, `raw`
  // included, alive for as long as the closure lives.
  if (source instanceof Uint8Array)
    return stored(await ctx.blobs.put(raw, ref), againFromBytes(ctx, source, ref));
  if (!adopts(ctx, source, ref))
    return stored(await ctx.blobs.put(raw, ref), againFromSpool(ctx, source, ref));
  const kept = keptPath(source.path);
  const linked = await link(source.path, kept).then(
    () => true,
    () => false,
  );
  let adopted: BlobRef;
  try {
    adopted = await putRawBlob(ctx, source, raw, ref);
  } catch (err) {
    if (linked) await unlink(kept).catch(() => undefined);
    throw err;
  }
  // Without a second link (a filesystem without hard links) only the bytes can store it again.
  return linked ? againFromLink(ctx, adopted, kept) : stored(adopted, againFromBytes(ctx, raw, ref));
}

function stored(ref: BlobRef, again: () => Promise<BlobRef>, release = async () => {}): StoredRaw {
  return { ref, again, release };
}

/** Stores `bytes` again when called (bytes the caller holds anyway, or the only copy there is). */
function againFromBytes(ctx: AppContext, bytes: Uint8Array, ref: BlobRef): () => Promise<BlobRef> {
  return () => ctx.blobs.put(bytes, ref);
}

/** Stores the spool file's contents again when called (the caller removes the file only afterwards). */
function againFromSpool(ctx: AppContext, source: SpooledRaw, ref: BlobRef): () => Promise<BlobRef> {
  return async () => ctx.blobs.put(await readRawSource(source), ref);
}

/** Adopts the second link of an adopted spool file when called; `release` removes that link. */
function againFromLink(ctx: AppContext, ref: BlobRef, kept: string): StoredRaw {
  const adopt = ctx.blobs.adoptFile as NonNullable<BlobStore["adoptFile"]>;
  return stored(
    ref,
    () => adopt.call(ctx.blobs, kept, ref),
    () => unlink(kept).catch(() => undefined),
  );
}

/** True when the spool file holds exactly these bytes and the store can adopt it. */
function adopts(ctx: AppContext, source: SpooledRaw, ref: BlobRef): boolean {
  return source.sha256 === ref.sha256 && source.size === ref.size && ctx.blobs.adoptFile !== undefined;
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
  if (!(source instanceof Uint8Array) && adopts(ctx, source, ref) && ctx.blobs.adoptFile) {
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
