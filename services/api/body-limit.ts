/**
 * The JSON request body of every `/v1` operation except the raw upload (`POST /v1/messages`), read by
 * the service itself instead of Elysia's default parser, for two reasons:
 * - Credentials come first. Elysia parses a body before `derive`, so the auth plugins (auth.ts) run
 *   their check inside the parse hook and only then call {@link readJsonBody}; a request without valid
 *   credentials is a 401 and its body is never read.
 * - Size. A JSON body is at most {@link MAX_JSON_BODY_BYTES}: a larger `Content-Length` is refused before
 *   reading, and a body without one (chunked) is counted while it is read and cut off at the limit, so
 *   no more than the limit is ever held. Both are 413 `request.too_large` with the usual error body.
 *
 * Invariants: nothing here reads more than the limit plus one network chunk; a body that is not JSON
 * (`application/json` or a `+json` type) is 415 `request.unsupported_media_type` before it is read when
 * its length is declared; an empty body is `null` (an absent body for Elysia's optional-body check).
 * A body that is not valid JSON throws a `SyntaxError`, which the error handler (errors.ts) renders as
 * 400 `request.invalid` like Elysia's own parse failures.
 */
import { AppError } from "../lib/errors.ts";
import { readStreamAtMost } from "../lib/read-at-most.ts";

/**
 * Default largest JSON request body, in bytes (1 MiB; `API_MAX_JSON_BYTES`). Legitimate bodies (configs,
 * pipelines) are far smaller.
 */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;

function tooLarge(limit: number): AppError {
  return new AppError("request.too_large", `the request body is over the ${limit}-byte limit for JSON`);
}

/** The media type of a `Content-Type` value, lower-case and without parameters ("" when absent). */
function mediaType(header: string | null): string {
  return (header?.split(";")[0] ?? "").trim().toLowerCase();
}

/** True for `application/json` and structured-syntax `+json` types (RFC 6839). */
export function isJsonMediaType(type: string): boolean {
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

function unsupported(type: string): AppError {
  return new AppError(
    "request.unsupported_media_type",
    `send the body as JSON with Content-Type: application/json (got ${type || "none"})`,
  );
}

/**
 * Reads a stream to its end, or throws `request.too_large` as soon as it has delivered more than
 * `limit` bytes (the rest is cancelled, never read).
 */
export function readAtMost(stream: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array> {
  return readStreamAtMost(stream, limit, () => tooLarge(limit));
}

/**
 * The parsed JSON body of `request` (`null` when it has none), within `limit` bytes. Call it only after
 * the request's credentials are checked.
 */
export async function readJsonBody(request: Request, limit = MAX_JSON_BODY_BYTES): Promise<unknown> {
  const type = mediaType(request.headers.get("content-type"));
  const lengthHeader = request.headers.get("content-length");
  const declared = lengthHeader === null ? null : Number(lengthHeader);
  if (declared === 0 || !request.body) return null;
  if (declared !== null && declared > limit) throw tooLarge(limit);
  if (declared !== null && !isJsonMediaType(type)) throw unsupported(type);
  const bytes = await readAtMost(request.body, limit);
  if (bytes.byteLength === 0) return null;
  if (!isJsonMediaType(type)) throw unsupported(type);
  return JSON.parse(new TextDecoder().decode(bytes));
}
