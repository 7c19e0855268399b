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
