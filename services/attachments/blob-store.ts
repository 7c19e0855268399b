/**
 * Attachment blob storage: the interface both backends implement (README.md#configuration `BLOB_STORE`).
 *
 * Blobs are content-addressed: the key is derived from the SHA-256 of the bytes, so identical
 * attachments (the same PDF mailed twice) are stored once and a `put` of an existing key writes nothing.
 * Keys carry no project or message id; access control lives in the download-token layer.
 */

/** What a `put` returns; `key` is what the attachment row stores as `blob_key`. */
export interface BlobRef {
  key: string;
  size: number;
  /** lowercase hex SHA-256 of the bytes (the descriptor's `sha256`) */
  sha256: string;
}

/** Inclusive byte range, as in RFC 9110 §14.1.2 `first-pos`/`last-pos`. */
export interface ByteRange {
  start: number;
  /** inclusive */
  end: number;
}

/** Response overrides baked into a presigned storage URL (S3 `response-content-*` parameters). */
export interface PresignOptions {
  expiresInSec: number;
  filename: string;
  contentType: string;
}

/**
 * A place to keep attachment bytes. Implementations: `FsBlobStore`, `S3BlobStore`. The optional
 * methods are capabilities of one backend only; callers test for them instead of for a class.
 */
export interface BlobStore {
  readonly kind: "fs" | "s3";
  /**
   * Store bytes; a no-op (besides hashing) when the same content is already stored. `ref`, when the
   * caller has just hashed these very bytes (`refOfBytes`), spares hashing them again.
   */
  put(bytes: Uint8Array, ref?: BlobRef): Promise<BlobRef>;
  /** Size of a stored blob, or null when the key is absent. */
  stat(key: string): Promise<{ size: number } | null>;
  /**
   * The blob's bytes (or one inclusive range of them) as a stream or a lazy Blob slice, suitable as a
   * `Response` body without buffering. Callers check `stat` first: a missing key may only surface as a
   * stream error.
   */
  read(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array> | Blob>;
  /** Remove a blob; removing an absent key is not an error. */
  delete(key: string): Promise<void>;
  /** A temporary URL served by the storage itself (S3 only). */
  presign?(key: string, options: PresignOptions): string;
  /**
   * Store a file of this store's filesystem by moving it into place instead of copying it (fs only).
   * `ref` must be the file's hash and size; the file is consumed either way.
   */
  adoptFile?(path: string, ref: BlobRef): Promise<BlobRef>;
  /**
   * Store bytes made piece by piece, so they are never held whole (fs only): `chunks` is called for the
   * pieces when they are written (not at all when the content is already stored). `ref` must be their
   * hash and size.
   */
  putChunks?(chunks: () => Iterable<Uint8Array>, ref: BlobRef): Promise<BlobRef>;
  /** Remove what writers that died mid-write left behind (fs only): the number of files removed. */
  sweepTemporaryFiles?(): Promise<number>;
}

/** Raised by stores for a key that is not stored, where they can tell. */
export class BlobNotFoundError extends Error {
  constructor(readonly key: string) {
    super(`blob not found: ${key}`);
    this.name = "BlobNotFoundError";
  }
}

/** Raised for a key that is not of the `sha256/ab/cd/<hex>` form (guards fs paths against traversal). */
export class InvalidBlobKeyError extends Error {
  constructor(readonly key: string) {
    super(`invalid blob key: ${JSON.stringify(key)}`);
    this.name = "InvalidBlobKeyError";
  }
}

const KEY_PATTERN = /^sha256\/([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{64})$/;

/**
 * The key of content with this SHA-256: `sha256/<h0h1>/<h2h3>/<hex>`. Two fan-out levels keep
 * directories (and S3 listing prefixes) small: 65,536 buckets before any directory grows large.
 */
export function blobKeyFor(sha256Hex: string): string {
  if (!/^[0-9a-f]{64}$/.test(sha256Hex)) throw new InvalidBlobKeyError(sha256Hex);
  return `sha256/${sha256Hex.slice(0, 2)}/${sha256Hex.slice(2, 4)}/${sha256Hex}`;
}

/** The SHA-256 hex a key was derived from; throws `InvalidBlobKeyError` for any other string. */
export function sha256OfKey(key: string): string {
  const m = KEY_PATTERN.exec(key);
  const hex = m?.[3];
  if (!m || hex === undefined || m[1] !== hex.slice(0, 2) || m[2] !== hex.slice(2, 4)) {
    throw new InvalidBlobKeyError(key);
  }
  return hex;
}

/** Throws `InvalidBlobKeyError` unless `key` is a well-formed content key. */
export function assertBlobKey(key: string): void {
  sha256OfKey(key);
}

/** The `BlobRef` of content with this SHA-256 (lowercase hex) and size. */
export function refOfHash(sha256: string, size: number): BlobRef {
  return { key: blobKeyFor(sha256), size, sha256 };
}

/** SHA-256 of in-memory bytes as a `BlobRef`. */
export function refOfBytes(bytes: Uint8Array): BlobRef {
  return refOfHash(new Bun.CryptoHasher("sha256").update(bytes).digest("hex"), bytes.byteLength);
}

/**
 * `known` when the caller has just hashed these very bytes (its size must fit), else their hash: what
 * `BlobStore.put` stores them under.
 */
export function refOfBytesKnown(bytes: Uint8Array, known: BlobRef | undefined): BlobRef {
  return known !== undefined && known.size === bytes.byteLength ? known : refOfBytes(bytes);
}

/** SHA-256 of a file on disk, read as a stream (constant memory). */
export async function refOfFile(path: string): Promise<BlobRef> {
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  for await (const chunk of Bun.file(path).stream()) {
    hasher.update(chunk);
    size += chunk.byteLength;
  }
  return refOfHash(hasher.digest("hex"), size);
}
