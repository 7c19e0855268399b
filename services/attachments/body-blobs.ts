/**
 * Message bodies too large for the stored model (docs/ingest.md, "Memory and concurrency"). A text or
 * HTML body of {@link BODY_INLINE_MAX_CHARS} characters or more is kept in the blob store as its UTF-8
 * bytes (`messages.text_blob_key`, `messages.html_blob_key`), and `messages.parsed` holds only its
 * first {@link BODY_PREFIX_CHARS} characters: what the full-text search reads of a body, and all the
 * message list needs. Every reader of a whole body (delivery, the messages API, previews) puts the
 * full body back with {@link withFullBodies}.
 *
 * Why: a body in `parsed` travels as JSON text through the database driver (several copies of it on
 * the way in and again on the way out), and on PGlite through the embedded database's own memory. A
 * 49 MB body raised the service's peak memory by 8× its size; written to a blob it is one encoding,
 * written out and dropped.
 *
 * Blobs are content-addressed and shared like attachments: retention and erasure check these keys
 * before deleting a blob (retention.ts, resources/message-erasure.ts). The bytes count against the
 * project's quota with the message (ingest/quota.ts).
 */
import type { AppContext } from "../context.ts";
import { type BlobRef, refOfHash } from "./blob-store.ts";

/** Bodies from this many characters on are kept in the blob store. */
export const BODY_INLINE_MAX_CHARS = 1024 * 1024;

/** The beginning of a blob-stored body kept in `parsed` (the search index reads 200,000 characters). */
export const BODY_PREFIX_CHARS = 200_000;

/** The bodies a stored model can have in the blob store. */
export type BodyKind = "text" | "html";

/** The blob keys of a message's blob-stored bodies (null: the body is whole in `parsed`). */
export interface BodyBlobKeys {
  textBlobKey: string | null;
  htmlBlobKey: string | null;
}

/** What a model needs for its bodies to be split off. */
interface WithBodies {
  text: string;
  html: string;
}

/** The bodies of `message` to keep in the blob store (none for nearly every message). */
export function largeBodies(message: WithBodies): BodyKind[] {
  const kinds: BodyKind[] = [];
  if (message.text.length >= BODY_INLINE_MAX_CHARS) kinds.push("text");
  if (message.html.length >= BODY_INLINE_MAX_CHARS) kinds.push("html");
  return kinds;
}

/** The first {@link BODY_PREFIX_CHARS} characters of `body`, never ending in half a surrogate pair. */
export function bodyPrefix(body: string): string {
  if (body.length <= BODY_PREFIX_CHARS) return body;
  const last = body.charCodeAt(BODY_PREFIX_CHARS - 1);
  const end = last >= 0xd800 && last <= 0xdbff ? BODY_PREFIX_CHARS - 1 : BODY_PREFIX_CHARS;
  return body.slice(0, end);
}

/** The model as `messages.parsed` stores it: the bodies of `kinds` cut to their beginning (a shallow copy). */
export function storedModel<T extends WithBodies>(message: T, kinds: readonly BodyKind[]): T {
  if (kinds.length === 0) return message;
  const out = { ...message };
  for (const kind of kinds) out[kind] = bodyPrefix(message[kind]);
  return out;
}

/** The UTF-8 size of each body of `kinds` (what they add to the quota). */
export function bodyBytes(message: WithBodies, kinds: readonly BodyKind[]): number {
  let n = 0;
  for (const kind of kinds) n += Buffer.byteLength(message[kind], "utf8");
  return n;
}

/** The UTF-8 bytes of a body, as its blob holds them. */
export function bodyBlobBytes(body: string): Uint8Array {
  const b = Buffer.from(body, "utf8");
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

/** Characters of a body encoded at a time when it is written piece by piece. */
const BODY_CHUNK_CHARS = 1024 * 1024;

/**
 * The UTF-8 bytes of `body` in pieces of at most {@link BODY_CHUNK_CHARS} characters, never cut inside
 * a surrogate pair: together exactly {@link bodyBlobBytes}. Every piece is encoded into the same buffer
 * when it is asked for, so a piece is valid only until the next one is asked for (nothing is left
 * behind for the collector, however large the body).
 */
export function* bodyBlobChunks(body: string): Generator<Uint8Array> {
  // A UTF-16 code unit takes at most 3 UTF-8 bytes.
  const scratch = Buffer.allocUnsafe(Math.min(body.length, BODY_CHUNK_CHARS) * 3);
  for (let start = 0; start < body.length; ) {
    let end = Math.min(start + BODY_CHUNK_CHARS, body.length);
    const last = body.charCodeAt(end - 1);
    if (end < body.length && last >= 0xd800 && last <= 0xdbff) end--;
    const n = scratch.write(body.slice(start, end), 0, "utf8");
    yield new Uint8Array(scratch.buffer, scratch.byteOffset, n);
    start = end;
  }
}

/**
 * Stores one body in the blob store. A store that takes bytes piece by piece gets the body encoded a
 * piece at a time (hashed in one pass, written in a second): a 49 MB body is never held as bytes
 * beside its text, which, with the raw message still in hand, made the intake's peak memory 3× the
 * message. Other stores get the bytes encoded at once and dropped when the put returns.
 */
export async function putBody(ctx: Pick<AppContext, "blobs">, body: string): Promise<BlobRef> {
  if (ctx.blobs.putChunks === undefined || body.length <= BODY_CHUNK_CHARS) {
    return ctx.blobs.put(bodyBlobBytes(body));
  }
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  for (const chunk of bodyBlobChunks(body)) {
    hasher.update(chunk);
    size += chunk.byteLength;
  }
  return ctx.blobs.putChunks(() => bodyBlobChunks(body), refOfHash(hasher.digest("hex"), size));
}

/** The UTF-8 byte-order mark, which `Blob.text()` drops from the start of a text. */
const BOM = [0xef, 0xbb, 0xbf];

/**
 * Reads a blob-stored body back (the exact text: no byte-order mark is dropped). A body the store gives
 * as a file-backed Blob is read as text at once: the runtime then makes one copy of an ASCII body,
 * where reading its bytes and decoding them held two (on top of what delivery builds from it). A body
 * that starts with a byte-order mark, or comes as a stream, is read as bytes and decoded keeping it.
 */
export async function readBody(ctx: Pick<AppContext, "blobs">, key: string): Promise<string> {
  const source = await ctx.blobs.read(key);
  if (source instanceof Blob) {
    const head = new Uint8Array(await source.slice(0, BOM.length).arrayBuffer());
    if (!BOM.every((b, i) => head[i] === b)) return source.text();
  }
  const bytes = new Uint8Array(await new Response(source).arrayBuffer());
  return new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
}

/**
 * The model with its blob-stored bodies read back in full (the same object, its `text` and `html`
 * replaced); as it is when `keys` names no blob. Throws when a blob is missing (a message whose body
 * was deleted under it is not silently cut).
 */
export async function withFullBodies<T extends WithBodies>(
  ctx: Pick<AppContext, "blobs">,
  message: T,
  keys: Partial<BodyBlobKeys>,
): Promise<T> {
  if (keys.textBlobKey) message.text = await readBody(ctx, keys.textBlobKey);
  if (keys.htmlBlobKey) message.html = await readBody(ctx, keys.htmlBlobKey);
  return message;
}
