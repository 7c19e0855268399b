/** Stable hashing of configs: key order does not change the hash, so equal configs share a compilation. */
import { createHash } from "node:crypto";

/** JSON with object keys sorted recursively. */
export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(",")}]`;
  const keys = Object.keys(value).sort();
  const obj = value as Record<string, unknown>;
  return `{${keys.map((k) => `${JSON.stringify(k)}:${stableStringify(obj[k])}`).join(",")}}`;
}

const byObject = new WeakMap<object, string>();

/** SHA-256 (hex) of the stable JSON of `value`; memoised per object identity. */
export function configHash(value: unknown): string {
  if (typeof value === "object" && value !== null) {
    const hit = byObject.get(value);
    if (hit !== undefined) return hit;
    const h = createHash("sha256").update(stableStringify(value)).digest("hex");
    byObject.set(value, h);
    return h;
  }
  return createHash("sha256").update(stableStringify(value)).digest("hex");
}
