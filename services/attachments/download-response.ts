/**
 * The app-proxy download response (spec "Download response headers", docs/attachments.md): headers, single byte
 * ranges (RFC 9110 §14) and a streamed body. Knows nothing about tokens; the proxy endpoint resolves the
 * token, then calls `planDownload` (pure, to reject a bad `Range` before consuming a single-use token)
 * and `buildDownloadResponse`. Refusals are `AppError`s from the one error table (lib/errors.ts), so
 * the API's error handler renders them like any other.
 */
import { AppError } from "../lib/errors.ts";
import { type BlobStore, type ByteRange, sha256OfKey } from "./blob-store.ts";
import { attachmentDisposition } from "./disposition.ts";
import { parseRange } from "./range.ts";

/** What the proxy knows about the attachment being downloaded. */
export interface DownloadRequest {
  store: BlobStore;
  /** content key (`sha256/ab/cd/<hex>`); also yields the strong ETag */
  key: string;
  /** size recorded at ingest; checked against the store */
  size: number;
  filename: string;
  /** declared MIME type; null → `application/octet-stream` */
  contentType: string | null;
  method: "GET" | "HEAD";
  rangeHeader: string | null;
  /** `If-Range` request header (RFC 9110 §13.1.5); absent → Range is evaluated unconditionally */
  ifRangeHeader?: string | null;
}

/** Status, headers and selected range of a download, decided without any IO. */
export interface DownloadPlan {
  status: 200 | 206;
  headers: Headers;
  range: ByteRange | null;
}

/** A `type/subtype[; params]` without CR/LF; anything else is served as opaque bytes. */
const MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[\u0020-\u007e]*)?$/;

/**
 * Decide status and headers for a download. Throws `AppError` (`attachments.range_invalid` 400, or
 * `attachments.range_not_satisfiable` 416 carrying `Content-Range: bytes *\/<size>`, RFC 9110 §15.5.17)
 * for a `Range` that cannot be honoured.
 */
export function planDownload(req: Omit<DownloadRequest, "store" | "method">): DownloadPlan {
  // Content addressing gives a strong validator for free: the ETag is the SHA-256 (RFC 9110 §8.8.3).
  const etag = `"${sha256OfKey(req.key)}"`;
  const headers = new Headers({
    "Content-Type":
      req.contentType && MEDIA_TYPE.test(req.contentType) ? req.contentType : "application/octet-stream",
    "Content-Disposition": attachmentDisposition(req.filename),
    "Accept-Ranges": "bytes",
    ETag: etag,
    "X-Content-Type-Options": "nosniff",
    // Download URLs are temporary credentials (spec, Authentication rule 6): keep copies out of caches.
    "Cache-Control": "no-store",
  });

  // If-Range: evaluate Range only when the validator is our strong ETag; a date or other tag never
  // matches (we send no Last-Modified), so the whole representation is sent (§13.1.5).
  const ifRange = req.ifRangeHeader ?? null;
  const rangeHeader = ifRange !== null && ifRange.trim() !== etag ? null : req.rangeHeader;

  const range = parseRange(rangeHeader, req.size);
  switch (range.kind) {
    case "none":
      headers.set("Content-Length", String(req.size));
      return { status: 200, headers, range: null };
    case "range":
      headers.set("Content-Length", String(range.end - range.start + 1));
      headers.set("Content-Range", `bytes ${range.start}-${range.end}/${req.size}`);
      return { status: 206, headers, range: { start: range.start, end: range.end } };
    case "invalid":
      throw new AppError("attachments.range_invalid", "The Range header is not a valid byte range.");
    case "unsatisfiable":
      throw new AppError(
        "attachments.range_not_satisfiable",
        `The requested range is outside the attachment (${req.size} bytes).`,
        undefined,
        { "Content-Range": `bytes */${req.size}` },
      );
  }
}

/**
 * The download `Response`: 200 or 206 with a streamed body (a lazy Blob slice or a store stream, so a
 * 25 MB attachment is never buffered), or headers only for HEAD. Throws `AppError` for a bad range, a
 * blob missing from the store (404 `attachments.not_found`) or one whose size disagrees (500 `internal`).
 */
export async function buildDownloadResponse(req: DownloadRequest): Promise<Response> {
  const plan = planDownload(req);
  const stored = await req.store.stat(req.key);
  if (stored === null) throw new AppError("attachments.not_found", "The attachment is no longer stored.");
  // Serving a truncated or corrupt blob under the recorded Content-Length would break the framing.
  if (stored.size !== req.size) throw new AppError("internal", "The attachment could not be read.");

  if (req.method === "HEAD") return new Response(null, { status: plan.status, headers: plan.headers });
  const body = await req.store.read(req.key, plan.range ?? undefined);
  return new Response(body, { status: plan.status, headers: plan.headers });
}
