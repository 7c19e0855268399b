/**
 * The one place user-supplied regular expressions are compiled.
 *
 * Every user pattern runs on RE2 (re2-wasm): linear time, no catastrophic backtracking. Bun's native
 * RegExp (JavaScriptCore) silently returns `false` after ~300 ms of backtracking, so it must never see a
 * user pattern. re2-wasm's heap is fixed at 16 MiB and compiled programs are not garbage collected, so
 * compiled patterns are cached (bounded LRU) and inputs are capped.
 */
import { RE2 } from "re2-wasm";

/** Largest input string a user regex is run against; longer inputs are truncated by callers or refused. */
export const MAX_REGEX_INPUT_CHARS = 1_000_000;
/** Longest accepted pattern source. */
export const MAX_REGEX_PATTERN_CHARS = 2_000;

const CACHE_LIMIT = 256;
const cache = new Map<string, RE2 | RegexCompileError>();

export class RegexCompileError extends Error {
  override name = "RegexCompileError";
}

type Re2Internal = { wrapper?: { delete?: () => void } };

/**
 * Compiles `pattern` (RE2 syntax, inline flags such as `(?i)` allowed) with the given JS-style flags
 * (`g` for global). Returns the cached program or a `RegexCompileError` (never throws).
 */
export function compileRegex(pattern: string, flags = ""): RE2 | RegexCompileError {
  const key = `${flags}/${pattern}`;
  const hit = cache.get(key);
  if (hit !== undefined) {
    // refresh LRU position
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  let compiled: RE2 | RegexCompileError;
  if (pattern.length > MAX_REGEX_PATTERN_CHARS) {
    compiled = new RegexCompileError(`pattern longer than ${MAX_REGEX_PATTERN_CHARS} characters`);
  } else {
    try {
      compiled = new RE2(pattern, `${flags.replace("u", "")}u`);
      // The first exec of a program pays one-off setup inside re2-wasm; pay it here, at compile time,
      // so time-bounded callers measure matching only.
      compiled.test("");
      compiled.lastIndex = 0;
    } catch (err) {
      compiled = new RegexCompileError(err instanceof Error ? err.message : String(err));
    }
  }
  cache.set(key, compiled);
  if (cache.size > CACHE_LIMIT) {
    const oldestKey = cache.keys().next().value as string;
    const oldest = cache.get(oldestKey);
    cache.delete(oldestKey);
    if (oldest instanceof RE2) (oldest as unknown as Re2Internal).wrapper?.delete?.();
  }
  return compiled;
}

/** Validates a pattern; returns null when it compiles, else the reason. */
export function regexError(pattern: string): string | null {
  const r = compileRegex(pattern);
  return r instanceof RegexCompileError ? r.message : null;
}

/** Tests `input` against `pattern`; invalid pattern → null. Input is capped at MAX_REGEX_INPUT_CHARS. */
export function regexTest(pattern: string, input: string): boolean | null {
  const r = compileRegex(pattern);
  if (r instanceof RegexCompileError) return null;
  r.lastIndex = 0;
  return r.test(input.length > MAX_REGEX_INPUT_CHARS ? input.slice(0, MAX_REGEX_INPUT_CHARS) : input);
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** One group reference of a replacement template: group number or name. */
type ReplacementPart = string | { group: number } | { name: string };

/**
 * Parses a replacement template once. Accepts `$1`, `${1}`, `$<name>`, `\1`, `\g<name>`, `\g<1>`,
 * `$&`/`$0` (whole match) and `$$` (a literal `$`), so both JavaScript- and Python/sed-style templates work
 * (contract section 6). An unknown reference is kept literally.
 */
export function parseReplacement(template: string): ReplacementPart[] {
  const parts: ReplacementPart[] = [];
  const re =
    /\$\$|\$&|\$(\d{1,2})|\$\{(\d{1,2})\}|\$<([A-Za-z_][A-Za-z0-9_]*)>|\\(\d{1,2})|\\g<([A-Za-z_][A-Za-z0-9_]*|\d{1,2})>|\\\\/g;
  let last = 0;
  for (let m = re.exec(template); m !== null; m = re.exec(template)) {
    if (m.index > last) parts.push(template.slice(last, m.index));
    last = m.index + m[0].length;
    const num = m[1] ?? m[2] ?? m[4];
    const named = m[3] ?? m[5];
    if (m[0] === "$$") parts.push("$");
    else if (m[0] === "\\\\") parts.push("\\");
    else if (m[0] === "$&") parts.push({ group: 0 });
    else if (num !== undefined) parts.push({ group: Number(num) });
    else if (named !== undefined)
      parts.push(/^\d+$/.test(named) ? { group: Number(named) } : { name: named });
  }
  if (last < template.length) parts.push(template.slice(last));
  return parts;
}

/**
 * Replaces every match of `pattern` in `input` with the expanded `template` (see `parseReplacement`).
 * Returns null for an invalid pattern. Written here rather than using re2-wasm's `replace`, which loops
 * forever on empty matches and mixes code-point match indices with UTF-16 string offsets.
 */
export function regexReplace(pattern: string, input: string, template: string): string | null {
  const r = compileRegex(pattern, "g");
  if (r instanceof RegexCompileError) return null;
  const text = input.length > MAX_REGEX_INPUT_CHARS ? input.slice(0, MAX_REGEX_INPUT_CHARS) : input;
  // re2-wasm reports indices in code points; for BMP-only text those equal UTF-16 offsets.
  const points: string[] | null = SURROGATE.test(text) ? Array.from(text) : null;
  const length = points === null ? text.length : points.length;
  const slice = (a: number, b: number) => (points === null ? text.slice(a, b) : points.slice(a, b).join(""));
  const parts = parseReplacement(template);
  let out = "";
  let last = 0;
  r.lastIndex = 0;
  while (r.lastIndex <= length) {
    const m = r.exec(text);
    if (m === null) break;
    const start = m.index;
    const matched = m[0] ?? "";
    const matchLength = points === null ? matched.length : Array.from(matched).length;
    out += slice(last, start);
    for (const p of parts) {
      if (typeof p === "string") out += p;
      else if ("group" in p) out += m[p.group] ?? "";
      else out += m.groups?.[p.name] ?? "";
    }
    last = start + matchLength;
    // An empty match must still make progress, exactly like String.prototype.replace with /g.
    if (matchLength === 0) r.lastIndex = start + 1;
  }
  r.lastIndex = 0;
  return out + slice(last, length);
}

// Warm up: the first RE2 compile instantiates the WASM module (tens of ms), which must not be charged to
// the first user operation's 50 ms regex budget.
compileRegex("warm-up");
