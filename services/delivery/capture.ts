/**
 * Attempt captures (docs/api.md, Attempt): what was sent and what came back, safe to show in the
 * API and dashboard. Secrets are replaced by `***`: both signature headers (a signature over a
 * known body is an offline-guessing oracle for the secret), credentials headers, every endpoint
 * header the route marked secret, and the credentials an endpoint URL carries (its userinfo and every
 * query parameter's value, lib/redact-url.ts). Body previews are capped at 16 KiB. The capture shapes
 * are the attempt log's columns (db/schema/attempts.ts); captures are stored already redacted.
 */
import type { RequestCapture, ResponseCapture } from "../db/schema/attempts.ts";
import { REDACTED, redactUrl } from "../lib/redact-url.ts";
import { BODY_PREVIEW_BYTES, type DispatchResult } from "./dispatch.ts";

/** The placeholder shown instead of a secret header value or URL credential. */
export { REDACTED };

/** Headers redacted in every request capture, lowercase. */
export const ALWAYS_SECRET_HEADERS: readonly string[] = [
  "x-service-signature",
  "webhook-signature",
  "authorization",
  "proxy-authorization",
  "cookie",
];

/**
 * Captures an outbound request. Header names keep their spelling; `secretHeaderNames` (the
 * endpoint's headers marked secret) match case-insensitively; the URL keeps its scheme, host, path and
 * query parameter names.
 */
export function requestCapture(
  request: { url: string; headers: Readonly<Record<string, string>>; body: string | Uint8Array },
  options: { secretHeaderNames?: readonly string[] } = {},
): RequestCapture {
  const secret = new Set([...ALWAYS_SECRET_HEADERS, ...(options.secretHeaderNames ?? []).map(lower)]);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    headers[name] = secret.has(lower(name)) ? REDACTED : value;
  }
  return { method: "POST", url: redactUrl(request.url), headers, body_preview: bodyPreview(request.body) };
}

/** Captures a {@link DispatchResult}; the response body preview is re-capped defensively. */
export function responseCapture(
  result: Pick<DispatchResult, "status" | "headers" | "bodyPreview" | "networkError">,
): ResponseCapture {
  return {
    status: result.status,
    headers: { ...result.headers },
    body_preview: bodyPreview(result.bodyPreview),
    network_error: result.networkError,
  };
}

/**
 * The first 16 KiB of a body as UTF-8 text; invalid sequences become U+FFFD and a character cut by
 * the cap is dropped. For a string the cap counts its UTF-8 bytes.
 */
export function bodyPreview(body: string | Uint8Array): string {
  if (typeof body === "string" && Buffer.byteLength(body) <= BODY_PREVIEW_BYTES) return body;
  // A character is at least one UTF-8 byte: the first BODY_PREVIEW_BYTES characters hold the preview,
  // so a large body is never encoded whole (a 50 MB body would be copied once more just to be cut).
  const bytes = typeof body === "string" ? new TextEncoder().encode(body.slice(0, BODY_PREVIEW_BYTES)) : body;
  // `stream: true` holds back a trailing incomplete sequence instead of emitting U+FFFD for it.
  return new TextDecoder("utf-8").decode(bytes.subarray(0, BODY_PREVIEW_BYTES), { stream: true });
}

function lower(name: string): string {
  return name.toLowerCase();
}
