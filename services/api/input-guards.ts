/**
 * Guards on request input, checked before schema validation (Elysia's transform phase), that turn two
 * kinds of input the lower layers cannot take into a 422 `request.invalid` instead of a 500. Both were
 * found by tools/chaos/fuzz-api.ts:
 * - Nesting deeper than {@link MAX_BODY_DEPTH}. Legitimate bodies are bounded (mapper expressions stop
 *   at 50 levels, rules at 8), while Elysia's ValidationError pretty-prints the whole value into its
 *   message, which for 20,000 levels is hundreds of MB and ended in a RangeError.
 * - U+0000 in a path parameter, query value, or body string or key. Postgres `text` and `jsonb` cannot
 *   hold it (SQLSTATE 22021 / 22P05), so any lookup or insert carrying one failed in the database.
 * - A body object with an own `toString` key. Its value (JSON data, never a function) makes string
 *   conversion of the object throw "TypeError: No default value", which Elysia's ValidationError does
 *   when it formats a failing value (`found: ${value}`), so an invalid body holding one was a 500.
 */
import { MAX_DEPTH } from "../../mapper/guards.ts";
import { AppError } from "../lib/errors.ts";

/**
 * Deepest array/object nesting accepted in a JSON body (the body itself is level 1). Every mapper config
 * the mapper's validator accepts must fit, wherever a body carries one (`/v1/mapper/*` at `/config`, a
 * route at `/pipeline/steps/N/args`): one expression level can take three JSON levels
 * (`{"call": {"fn", "args": {"html": …}}}`), so a 50-level expression is 150 JSON levels deep, and the
 * body's own levels come on top.
 */
export const MAX_BODY_DEPTH = 3 * MAX_DEPTH + 50;

/** The first problem found in a parsed JSON value (walked iteratively, no recursion to overflow). */
export function inspectJson(
  value: unknown,
  limit = MAX_BODY_DEPTH,
): { path: string; message: string } | null {
  const stack: [unknown, string, number][] = [[value, "", 1]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop() as [unknown, string, number];
    if (typeof v === "string") {
      if (v.includes("\u0000")) return { path: path || "/", message: "text must not contain U+0000" };
      continue;
    }
    if (v === null || typeof v !== "object") continue;
    if (depth > limit) return { path: "/", message: `the body nests deeper than ${limit} levels` };
    for (const [k, child] of Object.entries(v)) {
      if (k.includes("\u0000")) return { path: path || "/", message: "keys must not contain U+0000" };
      if (k === "toString") return { path: path || "/", message: 'a key named "toString" is not accepted' };
      stack.push([child, `${path}/${k.replaceAll("~", "~0").replaceAll("/", "~1")}`, depth + 1]);
    }
  }
  return null;
}

function hasNul(values: unknown): string | null {
  if (!values || typeof values !== "object") return null;
  for (const [k, v] of Object.entries(values)) {
    if (k.includes("\u0000") || (Array.isArray(v) ? v : [v]).some((x) => String(x).includes("\u0000")))
      return k;
  }
  return null;
}

/** Throws `request.invalid` (422) for a too-deep body or a U+0000 anywhere in params, query or body. */
export function rejectUnusableInput(c: { body: unknown; params?: unknown; query?: unknown }): void {
  const param = hasNul(c.params);
  if (param !== null) {
    throw new AppError("request.invalid", "the request path is invalid", [
      { path: `/${param}`, message: "text must not contain U+0000" },
    ]);
  }
  const q = hasNul(c.query);
  if (q !== null) {
    throw new AppError("request.invalid", "the request query is invalid", [
      { path: `/${q}`, message: "text must not contain U+0000" },
    ]);
  }
  const problem = inspectJson(c.body);
  if (problem) throw new AppError("request.invalid", "the request body is invalid", [problem]);
}
