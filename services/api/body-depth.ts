/**
 * A nesting bound for parsed request bodies, checked before schema validation. Legitimate bodies are
 * shallow (mapper expressions stop at 50 levels, rules at 8), while a deep body is costly everywhere
 * after the parser: Elysia's ValidationError pretty-prints the whole value into its message, which for
 * 20,000 levels is hundreds of MB and ended in a RangeError and a 500 (found by tools/chaos/fuzz-api.ts).
 */
import { AppError } from "../lib/errors.ts";

/** Deepest array/object nesting accepted in a JSON body (the body itself is level 1). */
export const MAX_BODY_DEPTH = 100;

/** Nesting depth of a parsed JSON value, walked iteratively (no recursion to overflow); stops past `limit`. */
export function jsonDepth(value: unknown, limit = MAX_BODY_DEPTH): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (v === null || typeof v !== "object") continue;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return max;
}

/** Throws `request.invalid` (422) for a body nested deeper than {@link MAX_BODY_DEPTH}. */
export function rejectDeepBody({ body }: { body: unknown }): void {
  if (jsonDepth(body) > MAX_BODY_DEPTH) {
    throw new AppError("request.invalid", "the request body is invalid", [
      { path: "/", message: `the body nests deeper than ${MAX_BODY_DEPTH} levels` },
    ]);
  }
}
