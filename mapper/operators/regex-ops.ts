/**
 * `regex.match` / `regex.replace` on RE2 (mapper/regex.ts; docs/mapper.md, "Regex operators (RE2)"): an
 * invalid pattern yields null; an operation slower than 50 ms raises `mapper.regex_timeout`. RE2 runs in
 * linear time and inputs are capped at MAX_REGEX_INPUT_BYTES (longer → null); `regex.replace` also checks
 * its deadline between matches, so it stops at the limit rather than being measured after it has
 * finished.
 */
import { checkLength, REGEX_TIMEOUT_MS, timed } from "../guards.ts";
import { compileRegex, regexReplace, regexTest } from "../regex.ts";
import type { Compiler, Node, OperatorSpec, Scope } from "./types.ts";
import { isPlainObject } from "./types.ts";

function compileNamed(value: unknown, names: readonly string[], c: Compiler, scope: Scope): (Node | null)[] {
  const obj = isPlainObject(value) ? value : {};
  return names.map((n) => (Object.hasOwn(obj, n) ? c.compile(obj[n], scope) : null));
}

function text(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return null;
}

export const regexOperators: Record<string, OperatorSpec> = {
  "regex.match": {
    shape: { kind: "named", props: ["value", "pattern"], required: ["value", "pattern"] },
    compile(value, c, scope) {
      const [v = null, p = null] = compileNamed(value, ["value", "pattern"], c, scope);
      return (d, s) => {
        const input = text(v?.(d, s));
        const pattern = p?.(d, s);
        if (typeof pattern !== "string") return null;
        if (input === null) return false;
        compileRegex(pattern); // compiled (and cached) outside the timed section: the timeout bounds matching only
        return timed(
          "mapper.regex_timeout",
          REGEX_TIMEOUT_MS,
          () => regexTest(pattern, input),
          "regex.match",
        );
      };
    },
  },
  "regex.replace": {
    shape: { kind: "named", props: ["value", "pattern", "with"], required: ["value", "pattern"] },
    compile(value, c, scope) {
      const [v = null, p = null, w = null] = compileNamed(value, ["value", "pattern", "with"], c, scope);
      return (d, s) => {
        const input = text(v?.(d, s));
        const pattern = p?.(d, s);
        const replacement = w === null ? "" : text(w(d, s));
        if (input === null || typeof pattern !== "string" || replacement === null) return null;
        compileRegex(pattern); // compiled (and cached) outside the timed section
        const out = timed(
          "mapper.regex_timeout",
          REGEX_TIMEOUT_MS,
          (deadline) => regexReplace(pattern, input, replacement, deadline),
          "regex.replace",
        );
        return out === null ? null : checkLength(out);
      };
    },
  },
};
