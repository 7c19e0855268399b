/**
 * The one place user-supplied regular expressions are compiled.
 *
 * Every user pattern runs on RE2 (re2-wasm): linear time, no catastrophic backtracking. Bun's native
 * RegExp (JavaScriptCore) silently returns `false` after ~300 ms of backtracking, so it must never see a
 * user pattern. re2-wasm's heap is fixed at 16 MiB and compiled programs are not garbage collected, so
 * compiled patterns are cached (bounded LRU) and inputs are capped.
 */
import { RE2 } from "re2-wasm";

/**
 * Largest input a user regex runs on, in UTF-8 bytes; a longer one is an error (the operation gives null)
 * rather than silently cut. A search holds two copies of its input in re2-wasm's fixed 16 MiB heap (6 MiB
 * of input exhausts it), next to the cached programs.
 */
export const MAX_REGEX_INPUT_BYTES = 2 * 1024 * 1024;

/** Whether `input` is over MAX_REGEX_INPUT_BYTES (a UTF-16 unit is 1 to 3 UTF-8 bytes). */
function tooLong(input: string): boolean {
  if (input.length > MAX_REGEX_INPUT_BYTES) return true;
  return input.length * 3 > MAX_REGEX_INPUT_BYTES && Buffer.byteLength(input, "utf8") > MAX_REGEX_INPUT_BYTES;
}
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
  } else if (/(?:^|[^\\])(?:\\\\)*\\C/.test(pattern)) {
    // `\C` matches one byte, so a match could end inside a character's UTF-8 sequence.
    compiled = new RegexCompileError("\\C (any single byte) is not supported; use . for any character");
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

/** Tests `input` against `pattern`; an invalid pattern or an input over MAX_REGEX_INPUT_BYTES → null. */
export function regexTest(pattern: string, input: string): boolean | null {
  const r = compileRegex(pattern);
  if (r instanceof RegexCompileError) return null;
  r.lastIndex = 0;
  if (tooLong(input)) return null;
  return r.test(input);
}

/** One group reference of a replacement template: group number or name. */
type ReplacementPart = string | { group: number } | { name: string };

/**
 * Parses a replacement template once. Accepts `$1`, `${1}`, `$<name>`, `\1`, `\g<name>`, `\g<1>`,
 * `$&`/`$0` (whole match) and `$$` (a literal `$`), so both JavaScript- and Python/sed-style templates work
 * (docs/mapper.md, "Regex operators (RE2)"). An unknown reference is kept literally.
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

/** re2-wasm's compiled program: `match` searches `input` from code point `start` (see `regexReplace`). */
type Re2Wrapper = {
  match(
    input: Uint8Array,
    start: number,
    captures: boolean,
  ): { match: string; index: number; groups: (string | undefined)[] };
};

/** Something that throws when the operation has run out of time (guards.ts `Deadline`). */
export type TimeCheck = { check(): void };

const encoder = new TextEncoder();

/** Bytes of the UTF-8 sequence led by `lead` (input is always valid UTF-8 from TextEncoder). */
function sequenceLength(lead: number): number {
  return lead < 0x80 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
}

/**
 * Replaces every match of `pattern` in `input` with the expanded `template` (see `parseReplacement`),
 * with the semantics of `String.prototype.replace` and a `/gu` regex: leftmost-first matches, no
 * overlap, an empty match advances by one code point. Returns null for an invalid pattern or an input
 * over MAX_REGEX_INPUT_BYTES. A pattern that is one character class (`classRunOf`) is scanned; any other
 * is searched match by match (`replaceBySearch`); `scan: false` forces the search (tests compare the two).
 */
export function regexReplace(
  pattern: string,
  input: string,
  template: string,
  deadline?: TimeCheck,
  scan = true,
): string | null {
  const r = compileRegex(pattern);
  if (r instanceof RegexCompileError || tooLong(input)) return null;
  const run = scan ? classRunOf(pattern) : null;
  return run !== null
    ? replaceRuns(run, input, template, deadline)
    : replaceBySearch(r, input, template, deadline);
}

/**
 * `regexReplace` by one RE2 search per match. Linear in the input, where re2-wasm's own `replace`/`exec`
 * loop is quadratic: each of their searches converts the whole string to UTF-8 again and walks it from
 * the start to turn code-point indices into byte offsets (20 KB with 3,000 matches took 0.5 s, 120 KB of
 * `a` replaced by `a` took 108 s). Here the input is encoded once and every search is given the rest of
 * the bytes from one code point before the search position (the context that `^`, `\b` and `(?m)^` look
 * at; RE2 has no lookbehind), so index conversion only walks the bytes between two matches, and the UTF-16
 * offsets of the original string are tracked along the same walk, so the text between matches is copied
 * from `input` unchanged. Copying the rest of the bytes into the WASM heap is still one memcpy per search
 * (patches/re2-wasm: the stock binding copied byte by byte in JavaScript); `deadline.check()` runs
 * between searches so a hostile input stops at the time limit instead of after it.
 */
function replaceBySearch(r: RE2, text: string, template: string, deadline?: TimeCheck): string {
  const wrapper = (r as unknown as { wrapper: Re2Wrapper }).wrapper;
  const named = (r as unknown as { namedGroups: Record<string, number> }).namedGroups;
  const bytes = encoder.encode(text);
  const parts = parseReplacement(template);
  // Capture groups cost a third of a search's time; only ask for them when the template uses them.
  const captures = parts.some((p) => typeof p !== "string" && !("group" in p && p.group === 0));
  let out = "";
  // Where the next search starts, in bytes and in UTF-16 units of `text`.
  let byte = 0;
  let unit = 0;
  // The end of the previous match (UTF-16): text from here to the next match is kept as it is.
  let kept = 0;
  for (;;) {
    deadline?.check();
    // One code point of context before the search position.
    let from = byte;
    if (byte > 0) {
      from--;
      while (from > 0 && ((bytes[from] as number) & 0xc0) === 0x80) from--;
    }
    const m = wrapper.match(bytes.subarray(from), byte > 0 ? 1 : 0, captures);
    if (m.index < 0) break;
    // Walk from the search position to the match start, then over the match.
    for (let k = m.index - (byte > 0 ? 1 : 0); k > 0; k--) {
      const size = sequenceLength(bytes[byte] as number);
      byte += size;
      unit += size === 4 ? 2 : 1;
    }
    const startUnit = unit;
    const startByte = byte;
    for (let i = 0; i < m.match.length; i++) {
      const size = sequenceLength(bytes[byte] as number);
      byte += size;
      unit += size === 4 ? 2 : 1;
      if (size === 4) i++; // a surrogate pair in the decoded match
    }
    out += text.slice(kept, startUnit);
    for (const p of parts) {
      if (typeof p === "string") out += p;
      else if ("group" in p)
        out += p.group === 0 ? text.slice(startUnit, unit) : (m.groups[p.group - 1] ?? "");
      else {
        const index = named[p.name];
        out += index === undefined ? "" : (m.groups[index - 1] ?? "");
      }
    }
    kept = unit;
    if (byte === startByte) {
      // An empty match: the next search starts one code point further on.
      if (byte >= bytes.length) break;
      const size = sequenceLength(bytes[byte] as number);
      byte += size;
      unit += size === 4 ? 2 : 1;
    }
  }
  return out + text.slice(kept);
}

/** A pattern that is one character class, optionally repeated: see `classRunOf`. */
interface ClassRun {
  /** Whether RE2 matches the one character `cp` (memoised per code point). */
  member(cp: number): boolean;
  /** `C+` (maximal runs) rather than `C` (one character per match). */
  plus: boolean;
  /** Frees the RE2 program behind `member` (re2-wasm's heap is fixed at 16 MiB). */
  release(): void;
}
const RUN_CACHE_LIMIT = 64;
const runs = new Map<string, ClassRun | null>();

/** Inline flags RE2 accepts at the start (`U`, which makes `+` lazy, is left to the general path). */
const FLAGS = /^\(\?[ims]*(?:-[ims]*)?\)/;
/** Escapes that stand for one character or a class of them. */
const ONE_CHAR_ESCAPE = /^\\(?:[sSdDwWntrfv]|[^\p{L}\p{N}\s])/u;
const META = new Set([..."\\^$.|?*+()[]{}"]);

/**
 * Recognises `[flags]C+` and `[flags]C`, where C matches exactly one character: `.`, a one-character
 * escape (`\s`, `\d`, `\.`, …), a bracket class (`[^\w@.-]`) or a literal character. These are the usual
 * `regex.replace` patterns (`\s+` → " " squeezes whitespace) and the ones with the most matches, and
 * their matches are simply the maximal runs of C (or each C): a scan finds them in one pass, where RE2
 * costs 2–3 µs per match through re2-wasm's binding (the 50 ms budget covered about 15,000 matches: ordinary
 * 120 KB newsletter text failed). Which characters C matches is still RE2's answer, asked once per
 * distinct code point, so flags, classes and case folding mean exactly what they mean to RE2.
 */
function classRunOf(pattern: string): ClassRun | null {
  const hit = runs.get(pattern);
  if (hit !== undefined) return hit;
  let run: ClassRun | null = null;
  const flags = FLAGS.exec(pattern)?.[0] ?? "";
  const rest = pattern.slice(flags.length);
  const atom = oneCharacterAtom(rest);
  if (atom !== null) {
    const tail = rest.slice(atom.length);
    if (tail === "" || tail === "+") {
      // Its own program, outside compileRegex's cache: that cache deletes the programs it evicts, and
      // this one lives as long as the run.
      let probe: RE2 | null = null;
      try {
        probe = new RE2(`${flags}\\A(?:${atom})\\z`, "u");
      } catch {
        probe = null;
      }
      if (probe !== null) {
        // Memo of RE2's answers: 64 KiB for the whole BMP (0 unknown, 1 no, 2 yes); astral code points in a
        // map cleared when it reaches 4,096 (a memo per code point grew to 57 MB on hostile text).
        const bmp = new Uint8Array(0x10000);
        const astral = new Map<number, boolean>();
        const program = probe;
        run = {
          plus: tail === "+",
          release: () => (program as unknown as Re2Internal).wrapper?.delete?.(),
          member(cp) {
            if (cp < 0x10000) {
              const known = bmp[cp];
              if (known !== 0) return known === 2;
            } else {
              const known = astral.get(cp);
              if (known !== undefined) return known;
            }
            program.lastIndex = 0;
            // A lone surrogate reaches RE2 as U+FFFD (TextEncoder), as in the general path.
            const m = program.test(String.fromCodePoint(cp >= 0xd800 && cp <= 0xdfff ? 0xfffd : cp));
            if (cp < 0x10000) bmp[cp] = m ? 2 : 1;
            else {
              if (astral.size >= 4096) astral.clear();
              astral.set(cp, m);
            }
            return m;
          },
        };
      }
    }
  }
  runs.set(pattern, run);
  if (runs.size > RUN_CACHE_LIMIT) {
    const oldest = runs.keys().next().value as string;
    runs.get(oldest)?.release();
    runs.delete(oldest);
  }
  return run;
}

/** The leading atom of `s` when it matches exactly one character, else null. */
function oneCharacterAtom(s: string): string | null {
  if (s.startsWith(".")) return ".";
  if (s.startsWith("\\")) return ONE_CHAR_ESCAPE.exec(s)?.[0] ?? null;
  if (s.startsWith("[")) {
    let i = 1;
    if (s[i] === "^") i++;
    if (s[i] === "]") i++; // a leading ] is literal
    for (; i < s.length; i++) {
      const c = s[i];
      if (c === "\\") i++;
      else if (c === "[") {
        if (s[i + 1] !== ":") return null;
        const close = s.indexOf(":]", i + 2);
        if (close < 0) return null;
        i = close + 1;
      } else if (c === "]") return s.slice(0, i + 1);
    }
    return null;
  }
  const cp = s.codePointAt(0);
  if (cp === undefined) return null;
  const ch = String.fromCodePoint(cp);
  return META.has(ch) ? null : ch;
}

/** `regexReplace` for a `ClassRun` pattern: one scan over the code points of the input. */
function replaceRuns(run: ClassRun, text: string, template: string, deadline?: TimeCheck): string {
  const parts = parseReplacement(template);
  let out = "";
  let kept = 0;
  let i = 0;
  let steps = 0;
  while (i < text.length) {
    if ((++steps & 4095) === 0) deadline?.check();
    const cp = text.codePointAt(i) as number;
    const size = cp > 0xffff ? 2 : 1;
    if (!run.member(cp)) {
      i += size;
      continue;
    }
    const start = i;
    i += size;
    if (run.plus) {
      while (i < text.length) {
        if ((++steps & 4095) === 0) deadline?.check();
        const next = text.codePointAt(i) as number;
        if (!run.member(next)) break;
        i += next > 0xffff ? 2 : 1;
      }
    }
    out += text.slice(kept, start);
    // The pattern has no groups: $& is the match, any other reference is empty (as in the general path).
    for (const p of parts) {
      if (typeof p === "string") out += p;
      else if ("group" in p && p.group === 0) out += text.slice(start, i);
    }
    kept = i;
  }
  return out + text.slice(kept);
}

// Warm up: the first RE2 compile instantiates the WASM module (tens of ms), which must not be charged to
// the first user operation's 50 ms regex budget.
compileRegex("warm-up");
