/**
 * Validation issues as the API reports them: `{path, message}` with `path` a JSON Pointer (RFC 6901)
 * into the request body, e.g. `/pipeline/steps/0/args/output/x` (docs/api.md).
 */

/** One problem found in a rule or pipeline. An empty list means valid. */
export interface ValidationIssue {
  path: string;
  message: string;
  /** A machine-readable reason where one exists (a mapper guard's code, e.g. `mapper.depth_exceeded`). */
  code?: string;
}

/** Appends reference tokens to a JSON Pointer, escaping `~` and `/` as RFC 6901 section 3 requires. */
export function pointer(base: string, ...tokens: (string | number)[]): string {
  let out = base;
  for (const token of tokens) out += `/${String(token).replaceAll("~", "~0").replaceAll("/", "~1")}`;
  return out;
}

/** A JSON object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** RFC 5322 section 3.6.8 field-name: printable US-ASCII except the colon. */
export const HEADER_NAME = /^[!-9;-~]+$/;
