/**
 * Hashing of configs for the compile caches. Key order is part of a config: an output template's keys come
 * out in the order written, so `{a, b}` and `{b, a}` are different configs (a key-sorted hash made the
 * second reuse the first's compilation and its key order).
 */
import { createHash } from "node:crypto";
import { MapperRuntimeError } from "./errors.ts";

/**
 * Nesting beyond which a config is refused before hashing. Far above anything valid (expressions and
 * `meta` stop at 50 levels; validation reports those with paths), and far below the call stack's depth:
 * a 10,000-level `meta` was a RangeError here instead of an invalid config.
 */
export const MAX_HASH_DEPTH = 1_000;

function tooDeep(): never {
  const message = `the config is nested deeper than ${MAX_HASH_DEPTH} levels`;
  throw new MapperRuntimeError("mapper.invalid_config", message, [
    { path: "", message, code: "mapper.depth_exceeded" },
  ]);
}

/** The JSON of `value` with keys in their order; throws `mapper.invalid_config` past MAX_HASH_DEPTH levels. */
export function configJson(value: unknown, depth = 0): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (depth >= MAX_HASH_DEPTH) tooDeep();
  if (Array.isArray(value)) return `[${value.map((x) => configJson(x, depth + 1)).join(",")}]`;
  const obj = value as Record<string, unknown>;
  return `{${Object.keys(obj)
    .map((k) => `${JSON.stringify(k)}:${configJson(obj[k], depth + 1)}`)
    .join(",")}}`;
}

const byObject = new WeakMap<object, string>();

/** SHA-256 (hex) of the JSON of `value` (key order included); memoised per object identity. */
export function configHash(value: unknown): string {
  if (typeof value === "object" && value !== null) {
    const hit = byObject.get(value);
    if (hit !== undefined) return hit;
    const h = createHash("sha256").update(configJson(value)).digest("hex");
    byObject.set(value, h);
    return h;
  }
  return createHash("sha256").update(configJson(value)).digest("hex");
}
