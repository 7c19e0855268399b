import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { MapperRuntimeError } from "./errors.ts";
import { Deadline } from "./guards.ts";
import { compileRegex, MAX_REGEX_INPUT_BYTES, RegexCompileError, regexReplace, regexTest } from "./regex.ts";

// Patterns whose meaning is the same in RE2 and in a JavaScript `u` regex over the alphabet below (no
// \r or U+2028, where JavaScript's `.` and `(?m)^` differ from RE2's), with the JavaScript spelling.
const PATTERNS: [re2: string, js: string, flags: string][] = [
  ["a", "a", ""],
  ["a*", "a*", ""],
  ["a+?", "a+?", ""],
  ["x*", "x*", ""],
  ["", "", ""],
  ["[ \\t]+", "[ \\t]+", ""],
  ["(a)(b)?", "(a)(b)?", ""],
  ["(?:ab)+", "(?:ab)+", ""],
  ["^", "^", ""],
  ["$", "$", ""],
  ["(?m)^", "^", "m"],
  ["(?m)$", "$", "m"],
  ["é+", "é+", ""],
  [".", ".", ""],
  ["(?s).", ".", "s"],
  ["[^a]", "[^a]", ""],
  ["😀|b", "😀|b", ""],
  ["(?P<w>b+)(😀)?", "(?<w>b+)(😀)?", ""],
  ["\\d+", "\\d+", ""],
  ["(?i)A", "a", "i"],
];
// Replacement templates in our syntax and in String.prototype.replace's.
const TEMPLATES: [ours: string, js: string][] = [
  ["-", "-"],
  ["", ""],
  ["[$&]", "[$&]"],
  ["$$", "$$"],
  ["<$1>", "<$1>"],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: ${1} is the template syntax under test
  ["<${1}>", "<$1>"],
  ["<\\1>", "<$1>"],
  ["<\\g<1>|$2>", "<$1|$2>"],
];
const text = fc.string({
  unit: fc.constantFrom("a", "b", "x", "1", " ", "\t", "\n", "é", "😀", "A"),
  maxLength: 40,
});

describe("regexReplace", () => {
  test("gives String.prototype.replace's result for a /gu regex, on text with multi-byte and astral characters", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...PATTERNS),
        fc.constantFrom(...TEMPLATES),
        text,
        ([re2, js, flags], [ours, theirs], input) => {
          // Group references only where the pattern has groups (JavaScript keeps `$1` literally otherwise).
          const grouped = js.includes("(") && !js.startsWith("(?:");
          const [template, jsTemplate] = grouped || !ours.includes("1") ? [ours, theirs] : ["-", "-"];
          const expected = input.replace(new RegExp(js, `gu${flags}`), jsTemplate);
          expect(regexReplace(re2, input, template)).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test("named groups in the template: $<name> and \\g<name>", () => {
    expect(regexReplace("(?P<w>\\w+)@(?P<d>\\w+)", "ann@example bob@test", "$<d>:\\g<w>")).toBe(
      "example:ann test:bob",
    );
    expect(regexReplace("(?P<w>a)", "a", "[$<missing>]")).toBe("[]");
  });

  test("text outside the matches is copied unchanged, lone surrogates included", () => {
    expect(regexReplace("b", "\uD800ab\uDC00b😀", "_")).toBe("\uD800a_\uDC00_😀");
  });

  test("every match of a large input is replaced (one search per match, not one pass per match)", () => {
    const input = "word ".repeat(40_000);
    expect(regexReplace("\\s+", input, "_")).toBe("word_".repeat(40_000));
  });

  test("checks its deadline between searches and stops at the first failed check", () => {
    let checks = 0;
    const stop = new Error("out of time");
    const deadline = {
      check() {
        checks++;
        if (checks === 5) throw stop;
      },
    };
    // "a|x" is searched for match by match ("a" alone would be scanned, see below).
    expect(() => regexReplace("a|x", "a".repeat(1_000), "b", deadline)).toThrow(stop);
    expect(checks).toBe(5);
  });

  test("a hostile input raises mapper.regex_timeout at the limit instead of running to the end", () => {
    // 1,000,000 matches take seconds; the 5 ms budget is spent within the first few thousand.
    let caught: unknown;
    try {
      regexReplace("a|x", "a".repeat(1_000_000), "b", new Deadline("mapper.regex_timeout", 5));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(MapperRuntimeError);
    expect((caught as MapperRuntimeError).code).toBe("mapper.regex_timeout");
  });
});

describe("regexReplace of one repeated character class (a scan instead of a search per match)", () => {
  const atoms = [
    ".",
    "\\s",
    "\\S",
    "\\d",
    "\\w",
    "\\W",
    "\\.",
    "[^a-z]",
    "[a-c]",
    "[[:alpha:]]",
    "[\\p{L}]",
    "é",
    "a",
    "k",
    "😀",
    "[]a]",
    "[^]a]",
    "[\\s\\d]",
  ];
  const unit = fc.constantFrom(
    "a",
    "b",
    "c",
    "k",
    "K",
    "\u212A",
    " ",
    "\t",
    "\n",
    "é",
    "É",
    "😀",
    "1",
    ".",
    "]",
    "ß",
    "\uD800",
    "-",
  );
  test("gives the result of one RE2 search per match, on random text", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("", "(?i)", "(?s)", "(?m)", "(?is)"),
        fc.constantFrom(...atoms),
        fc.constantFrom("", "+"),
        fc.constantFrom("-", "", "[$&]", "<$1>", "$$"),
        fc.string({ unit, maxLength: 30 }),
        (flags, atom, quantifier, template, input) => {
          const pattern = `${flags}${atom}${quantifier}`;
          expect(regexReplace(pattern, input, template)).toBe(
            regexReplace(pattern, input, template, undefined, false),
          );
        },
      ),
      { numRuns: 3000 },
    );
  });

  test("squeezing whitespace in a 1 MB text is one pass", () => {
    const input = "word \t\n".repeat(130_000);
    expect(regexReplace("\\s+", input, " ")).toBe("word ".repeat(130_000));
  });

  test("checks its deadline while it scans", () => {
    let checks = 0;
    regexReplace("\\s+", "a ".repeat(10_000), "", {
      check() {
        checks++;
      },
    });
    expect(checks).toBeGreaterThan(3);
  });
});

describe("input size", () => {
  test("the whole of a long text is searched (1.2 M characters), not a prefix", () => {
    const text = `${"word ".repeat(240_000)}To manage notifications`;
    expect(regexTest("manage notif", text)).toBe(true);
    expect(regexReplace("notif\\w+", text, "N")?.endsWith("To manage N")).toBe(true);
  });

  test("over MAX_REGEX_INPUT_BYTES of UTF-8 is null (an operator error), not a silently cut text", () => {
    const ascii = "a".repeat(MAX_REGEX_INPUT_BYTES + 1);
    const cjk = "語".repeat(Math.ceil(MAX_REGEX_INPUT_BYTES / 3) + 1); // fewer characters, more bytes
    for (const text of [ascii, cjk]) {
      expect(regexTest("a", text)).toBeNull();
      expect(regexReplace("\\s+", text, " ")).toBeNull();
      expect(regexReplace("a|b", text, "")).toBeNull();
    }
    expect(regexTest("a", "a".repeat(MAX_REGEX_INPUT_BYTES))).toBe(true);
  });
});

describe("compileRegex", () => {
  test("refuses \\C (one byte), which could end a match inside a character", () => {
    const refused = compileRegex("a\\Cb");
    expect(refused).toBeInstanceOf(RegexCompileError);
    expect((refused as RegexCompileError).message).toContain("\\C");
    expect(compileRegex("\\\\C")).not.toBeInstanceOf(RegexCompileError); // a backslash, then C
    expect(regexReplace("\\C", "ab", "x")).toBeNull();
  });
});
