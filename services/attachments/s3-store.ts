/**
 * S3-compatible blob store (README.md#configuration `BLOB_STORE=s3`) on Bun's built-in `S3Client`, which signs with
 * SigV4, streams ranged GETs and uploads large bodies as multipart uploads.
 *
 * Objects are immutable and content-addressed, so a PUT is atomic by S3's own semantics (an object is
 * visible only once complete) and a `put` of an existing key is skipped after a HEAD.
 */
import { S3Client } from "bun";
import type { S3Config } from "../config.ts";
import {
  assertBlobKey,
  type BlobRef,
  type BlobStore,
  type ByteRange,
  type PresignOptions,
  refOfBytesKnown,
} from "./blob-store.ts";
import { attachmentDisposition } from "./disposition.ts";

/** Objects are stored opaque; the download layer decides the type shown to the recipient. */
const STORED_TYPE = "application/octet-stream";

/** Blob store in an S3 bucket; keys are the content keys as-is (`sha256/ab/cd/<hex>`). */
export class S3BlobStore implements BlobStore {
  readonly kind = "s3" as const;
  private readonly client: S3Client;

  constructor(config: S3Config) {
    this.client = new S3Client({
      bucket: config.bucket,
      accessKeyId: config.accessKeyId,
      secretAccessKey: config.secretAccessKey,
      ...(config.endpoint !== undefined ? { endpoint: config.endpoint } : {}),
      ...(config.region !== undefined ? { region: config.region } : {}),
    });
  }

  async put(bytes: Uint8Array, known?: BlobRef): Promise<BlobRef> {
    const ref = refOfBytesKnown(bytes, known);
    if (await this.hasComplete(ref)) return ref;
    await this.client.write(ref.key, bytes, { type: STORED_TYPE });
    return ref;
  }

  async stat(key: string): Promise<{ size: number } | null> {
    assertBlobKey(key);
    try {
      const s = await this.client.stat(key);
      return { size: s.size };
    } catch (err) {
      if (isNoSuchKey(err)) return null;
      throw err;
    }
  }

  /**
   * A ranged GET (`Range: bytes=start-end`, RFC 9110 §14.1.2) streamed as it arrives. A ranged read is
   * cut at the requested length and a short one errors, so a lax S3-compatible server (s3rver answers
   * `bytes=0-0` with the whole object) cannot make the body disagree with `Content-Length`.
   *
   * Known Bun limitation (oven-sh/bun#10507, open in 1.4.5): Bun.serve drops a handler-set
   * `Content-Length` for a stream body that takes more than one chunk and frames it chunked instead, so
   * large S3-backed proxy downloads arrive without a length. The fs store is unaffected (sendfile).
   */
  async read(key: string, range?: ByteRange): Promise<ReadableStream<Uint8Array>> {
    assertBlobKey(key);
    const file = this.client.file(key);
    if (!range) return relay(file.stream(), null);
    // S3File.slice takes an exclusive end, like Blob.slice.
    return relay(file.slice(range.start, range.end + 1).stream(), range.end - range.start + 1);
  }

  async delete(key: string): Promise<void> {
    assertBlobKey(key);
    // S3 DeleteObject of an absent key succeeds, matching the interface.
    await this.client.delete(key);
  }

  /**
   * A presigned GET whose response carries our `Content-Disposition` and `Content-Type` via the signed
   * `response-content-disposition` / `response-content-type` query parameters (Bun adds them from
   * `contentDisposition` / `type`). `X-Content-Type-Options` cannot be set this way; the attachment
   * disposition is what keeps browsers from rendering the content.
   */
  presign(key: string, options: PresignOptions): string {
    assertBlobKey(key);
    return this.client.presign(key, {
      method: "GET",
      expiresIn: options.expiresInSec,
      contentDisposition: attachmentDisposition(options.filename),
      type: options.contentType,
    });
  }

  private async hasComplete(ref: BlobRef): Promise<boolean> {
    const existing = await this.stat(ref.key);
    return existing !== null && existing.size === ref.size;
  }
}

function isNoSuchKey(err: unknown): boolean {
  if (typeof err !== "object" || err === null || !("code" in err)) return false;
  return err.code === "NoSuchKey" || err.code === "NotFound";
}

/** Pass `source` through a plain JS stream; with `length`, deliver exactly that many bytes or error. */
function relay(source: ReadableStream<Uint8Array>, length: number | null): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let remaining = length ?? Number.POSITIVE_INFINITY;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        if (length !== null && remaining > 0)
          controller.error(new Error(`short read from S3: ${remaining} bytes missing`));
        else controller.close();
        return;
      }
      if (value.byteLength < remaining) {
        remaining -= value.byteLength;
        controller.enqueue(value);
        return;
      }
      controller.enqueue(value.subarray(0, remaining));
      remaining = 0;
      controller.close();
      await reader.cancel();
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
