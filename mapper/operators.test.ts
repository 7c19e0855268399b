import { describe, expect, test } from "bun:test";
import { evaluateExpression } from "./index.ts";

type Row = [string, unknown, unknown, unknown];

function table(name: string, rows: Row[]): void {
  describe(name, () => {
    test.each(rows)("%s", (_name, expr, data, expected) => {
      expect({ expr, got: evaluateExpression(expr, data) }).toEqual({ expr, got: expected });
    });
  });
}

table("logic and control", [
  ["if picks the first truthy branch", { if: [false, 1, true, 2, 3] }, null, 2],
  ["if without else yields null", { if: [false, 1] }, null, null],
  ["if with no arguments yields null", { if: [] }, null, null],
  ["and returns the first falsy value", { and: [1, "", 3] }, null, ""],
  ["and of nothing yields null", { and: [] }, null, null],
  ["or returns the first truthy value", { or: [0, "x"] }, null, "x"],
  ["! negates truthiness", { "!": [[]] }, null, true],
  ["an empty object is falsy (docs/mapper.md)", { "!": [{}] }, null, true],
  ["a non-empty object is truthy", { if: [{ var: "o" }, "yes", "no"] }, { o: { a: 1 } }, "yes"],
]);

table("comparisons", [
  ["== is loose", { "==": [1, "1"] }, null, true],
  ["== null matches only null", { "==": [null, 0] }, null, false],
  ["!= is loose", { "!=": [0, ""] }, null, false],
  ["=== is strict", { "===": [1, "1"] }, null, false],
  ["!== is strict", { "!==": [1, "1"] }, null, true],
  ["> compares numbers", { ">": [3, 2] }, null, true],
  [">= coerces strings", { ">=": ["3", 3] }, null, true],
  ["< with three arguments is between (exclusive)", { "<": [1, 2, 3] }, null, true],
  ["<= with three arguments is between (inclusive)", { "<=": [1, 1, 3] }, null, true],
  ["in finds a substring", { in: ["ell", "hello"] }, null, true],
  ["in finds an array item strictly", { in: [1, ["1", 2]] }, null, false],
  ["in on a non-container is false", { in: ["a", null] }, null, false],
]);

table("var", [
  ["reads dotted paths", { var: "a.b" }, { a: { b: 2 } }, 2],
  ["reads bracket indexes", { var: "a[1].c" }, { a: [{}, { c: "x" }] }, "x"],
  ["reads quoted bracket keys with dots", { var: 'h["x.y"]' }, { h: { "x.y": 5 } }, 5],
  ["reads numeric dotted indexes", { var: "a.0" }, { a: ["z"] }, "z"],
  ["returns the default when missing", { var: ["a.b", "dflt"] }, { a: {} }, "dflt"],
  ["returns null when missing without default", { var: "nope" }, {}, null],
  ["keeps a present null instead of the default", { var: ["a", 1] }, { a: null }, null],
  ["an empty path is the whole data", { var: "" }, 7, 7],
  ["takes a computed path", { var: { cat: ["a", ".b"] } }, { a: { b: 3 } }, 3],
  ["never reads inherited properties", { var: "constructor" }, {}, null],
  ["never reads __proto__", { var: "a.__proto__" }, { a: {} }, null],
  ["reads the length of a string", { var: "s.length" }, { s: "abc" }, 3],
]);

table("strings and arrays (JsonLogic)", [
  ["cat joins with nulls as empty", { cat: ["a", null, 1] }, null, "a1"],
  ["substr with start", { substr: ["jsonlogic", 4] }, null, "logic"],
  ["substr with negative start", { substr: ["jsonlogic", -5] }, null, "logic"],
  ["substr with length", { substr: ["jsonlogic", 0, 4] }, null, "json"],
  ["substr with negative length", { substr: ["jsonlogic", 1, -5] }, null, "son"],
  ["merge flattens one level", { merge: [1, [2, [3]]] }, null, [1, 2, [3]]],
  ["merge of nothing is []", { merge: [] }, null, []],
  [
    "merge of objects is a shallow merge, later keys win",
    { merge: [{ a: 1, b: 1 }, { b: 2 }] },
    null,
    { a: 1, b: 2 },
  ],
  ["merge mixing objects and arrays flattens", { merge: [{ a: 1 }, [2]] }, null, [{ a: 1 }, 2]],
  ["map over items", { map: [[1, 2], { cat: [{ var: "" }, "!"] }] }, null, ["1!", "2!"]],
  ["map of a non-array is []", { map: [null, 1] }, null, []],
  ["filter keeps truthy", { filter: [[0, 1, 2], { var: "" }] }, null, [1, 2]],
  [
    "reduce sums with the JsonLogic scope",
    { reduce: [[1, 2, 3], { cat: [{ var: "accumulator" }, { var: "current" }] }, ""] },
    null,
    "123",
  ],
  ["reduce of a non-array is the initial value", { reduce: [null, 1, "init"] }, null, "init"],
  ["some is false on []", { some: [[], true] }, null, false],
  ["all is false on []", { all: [[], true] }, null, false],
  ["none is true on []", { none: [[], true] }, null, true],
  ["all checks every item", { all: [[1, 2], { ">": [{ var: "" }, 0] }] }, null, true],
  ["find returns the first match", { find: [[1, 5, 7], { ">": [{ var: "" }, 4] }] }, null, 5],
  ["find returns null when nothing matches", { find: [[1], false] }, null, null],
]);

const people = {
  people: [
    { n: "Ann", age: 30 },
    { n: "Bob", age: 17 },
  ],
  min: 18,
};
table("object forms and scoping (docs/mapper.md)", [
  [
    "map {over, as, do} reads the alias",
    { map: { over: { var: "people" }, as: "p", do: { var: "p.n" } } },
    people,
    ["Ann", "Bob"],
  ],
  [
    "the alias sees the outer scope",
    { filter: { over: { var: "people" }, as: "p", where: { ">=": [{ var: "p.age" }, { var: "min" }] } } },
    people,
    [{ n: "Ann", age: 30 }],
  ],
  [
    "find {over, as, where}",
    { find: { over: { var: "people" }, as: "p", where: { "==": [{ var: "p.n" }, "Bob"] } } },
    people,
    { n: "Bob", age: 17 },
  ],
  [
    "some {over, as, where}",
    { some: { over: { var: "people" }, as: "p", where: { "<": [{ var: "p.age" }, 18] } } },
    people,
    true,
  ],
  [
    "all {over, as, where}",
    { all: { over: { var: "people" }, as: "p", where: { "<": [{ var: "p.age" }, 18] } } },
    people,
    false,
  ],
  [
    "none {over, as, where}",
    { none: { over: { var: "people" }, as: "p", where: { ">": [{ var: "p.age" }, 99] } } },
    people,
    true,
  ],
  [
    "reduce {over, do, start} binds current and accumulator",
    {
      reduce: {
        over: { var: "people" },
        do: { cat: [{ var: "accumulator" }, { var: "current.n" }, { var: "min" }] },
        start: ">",
      },
    },
    people,
    ">Ann18Bob18",
  ],
  [
    "nested aliases shadow and see each other",
    {
      map: {
        over: [1, 2],
        as: "x",
        do: { map: { over: [10], as: "y", do: { cat: [{ var: "x" }, "-", { var: "y" }] } } },
      },
    },
    null,
    [["1-10"], ["2-10"]],
  ],
  [
    "array-form map inside an alias loop still sees the alias",
    { map: { over: [1], as: "x", do: { map: [["a"], { cat: [{ var: "" }, { var: "x" }] }] } } },
    null,
    [["a1"]],
  ],
]);

table("templates", [
  [
    "a multi-key object is a literal with evaluated values",
    { a: { var: "x" }, b: 2 },
    { x: 1 },
    { a: 1, b: 2 },
  ],
  ["a single non-operator key is a literal", { total: { var: "x" } }, { x: 3 }, { total: 3 }],
  ["templates nest inside operator arguments", { map: [[1], { v: { var: "" } }] }, null, [{ v: 1 }]],
  [
    "a __proto__ key stays an own property",
    JSON.parse('{"__proto__": 1, "a": 2}'),
    null,
    JSON.parse('{"__proto__": 1, "a": 2}'),
  ],
]);

table("string helpers", [
  ["string.lower", { "string.lower": "ÄbC" }, null, "äbc"],
  ["string.upper", { "string.upper": { var: "s" } }, { s: "abc" }, "ABC"],
  ["string.trim", { "string.trim": "  x \n" }, null, "x"],
  ["string helpers stringify numbers", { "string.upper": 12 }, null, "12"],
  ["string helpers yield null for non-text", { "string.lower": { var: "o" } }, { o: { a: 1 } }, null],
  ["string.slice with start and end", { "string.slice": { value: "abcdef", start: 1, end: 3 } }, null, "bc"],
  ["string.slice with negative start", { "string.slice": { value: "abcdef", start: -2 } }, null, "ef"],
  [
    "string.slice with a non-numeric start is null",
    { "string.slice": { value: "abc", start: "x" } },
    null,
    null,
  ],
  ["string.split on a separator", { "string.split": { value: "a,b", sep: "," } }, null, ["a", "b"]],
  [
    "string.split on empty separator splits characters",
    { "string.split": { value: "ab", sep: "" } },
    null,
    ["a", "b"],
  ],
  ["string.join with a separator", { "string.join": { items: ["a", 1, null], sep: "-" } }, null, "a-1-"],
  ["string.join of a non-array is null", { "string.join": { items: "x", sep: "-" } }, null, null],
  [
    "string.replace replaces all by default",
    { "string.replace": { value: "a.a.a", find: ".", with: "-" } },
    null,
    "a-a-a",
  ],
  [
    "string.replace honours count",
    { "string.replace": { value: "aaa", find: "a", with: "b", count: 2 } },
    null,
    "bba",
  ],
  [
    "string.replace is exact, not a regex",
    { "string.replace": { value: "a+b", find: "+", with: " plus " } },
    null,
    "a plus b",
  ],
]);

table("regex helpers", [
  ["regex.match finds a match", { "regex.match": { value: "Invoice 42", pattern: "\\d+" } }, null, true],
  ["regex.match honours (?i)", { "regex.match": { value: "HELLO", pattern: "(?i)hello" } }, null, true],
  ["regex.match without match is false", { "regex.match": { value: "abc", pattern: "^b" } }, null, false],
  [
    "regex.match with an invalid computed pattern is null",
    { "regex.match": { value: "abc", pattern: { cat: ["("] } } },
    null,
    null,
  ],
  [
    "regex.match rejects backreferences (RE2) → null",
    { "regex.match": { value: "aa", pattern: { cat: ["(a)\\1"] } } },
    null,
    null,
  ],
  [
    "regex.replace with $1",
    { "regex.replace": { value: "2024-05", pattern: "(\\d+)-(\\d+)", with: "$2/$1" } },
    null,
    "05/2024",
  ],
  [
    "regex.replace with $<name>",
    { "regex.replace": { value: "2024-05", pattern: "(?P<y>\\d+)-(?P<m>\\d+)", with: "$<m>.$<y>" } },
    null,
    "05.2024",
  ],
  [
    "regex.replace with \\1",
    { "regex.replace": { value: "ab", pattern: "(a)(b)", with: "\\2\\1" } },
    null,
    "ba",
  ],
  [
    "regex.replace with \\g<name>",
    { "regex.replace": { value: "ab", pattern: "(?P<x>a)", with: "[\\g<x>]" } },
    null,
    "[a]b",
  ],
  [
    "regex.replace replaces every match",
    { "regex.replace": { value: "a1b22", pattern: "\\d", with: "#" } },
    null,
    "a#b##",
  ],
  [
    "regex.replace handles empty matches",
    { "regex.replace": { value: "ab", pattern: "x*", with: "-" } },
    null,
    "-a-b-",
  ],
  [
    "regex.replace keeps astral characters intact",
    { "regex.replace": { value: "😀a😀", pattern: "a", with: "b" } },
    null,
    "😀b😀",
  ],
  [
    "regex.replace with an invalid computed pattern is null",
    { "regex.replace": { value: "a", pattern: { cat: ["["] }, with: "" } },
    null,
    null,
  ],
]);
