/**
 * The compiler specialises operators on the shape of their arguments (constant operands, arity, literal
 * arrays, unobserved `vars`). Each specialised path must behave exactly like the generic one: these tests
 * evaluate the same operation through both (a constant vs the same value read from data) and, where
 * JsonLogic defines the result, against json-logic-js itself.
 */

import { describe, expect, test } from "bun:test";
import { createRequire } from "node:module";
import fc from "fast-check";
import { compileMapper, evaluateExpression, registerFunction } from "./index.ts";

const jsonLogic = createRequire(import.meta.url)("json-logic-js") as {
  apply(rule: unknown, data: unknown): unknown;
};

const COMPARISONS = ["==", "!=", "===", "!==", ">", ">=", "<", "<="] as const;
/** Values where JS coercion differs: numbers vs numeric strings, null, booleans, arrays, objects. */
const EDGE: unknown[] = [
  0,
  1,
  -1,
  2.5,
  "",
  "0",
  "1",
  "01",
  "a",
  "abc",
  "Re:",
  null,
  true,
  false,
  [],
  [1],
  ["a"],
  {},
];
const HOSTILE: unknown[] = [{ toString: 1 }, { valueOf: 2 }];

/** `op` on (a, b) through the generic path (both read from data) and with each side a literal. */
function forms(op: string, a: unknown, b: unknown) {
  const data = { a, b, list: [a] };
  return {
    generic: evaluateExpression({ [op]: [{ var: "a" }, { var: "b" }] }, data),
    constRight: evaluateExpression({ [op]: [{ var: "a" }, b] }, data),
    // A computed left operand (not a one-key read, which is fused): the `withRight` closures.
    nestedRight: evaluateExpression({ [op]: [{ var: "w.a" }, b] }, { w: { a } }),
    constLeft: evaluateExpression({ [op]: [a, { var: "b" }] }, data),
    missing: evaluateExpression({ [op]: [{ var: "nope" }, b] }, data),
    missingGeneric: evaluateExpression({ [op]: [{ var: "nope" }, { var: "b" }] }, data),
    inLoop: evaluateExpression({ map: [{ var: "list" }, { [op]: [{ var: "" }, b] }] }, data),
  };
}

/** json-logic-js reads missing data as null; a literal array in a rule is itself a rule there. */
const scalar = (v: unknown) => v === null || typeof v !== "object";

describe("comparisons specialised on a constant operand", () => {
  test.each(COMPARISONS)("%s: constant left/right and in-loop forms equal the generic path", (op) => {
    for (const a of EDGE) {
      for (const b of EDGE.filter(scalar)) {
        const f = forms(op, a, b);
        const row = { op, a, b };
        expect({ ...row, v: f.constRight }).toEqual({ ...row, v: f.generic });
        expect({ ...row, v: f.nestedRight }).toEqual({ ...row, v: f.generic });
        expect({ ...row, v: f.missing }).toEqual({ ...row, v: f.missingGeneric });
        expect({ ...row, v: f.inLoop }).toEqual({ ...row, v: [f.generic] });
        if (scalar(a)) {
          const swapped = forms(op, b, a);
          expect({ ...row, v: swapped.constLeft }).toEqual({ ...row, v: swapped.generic });
        }
      }
    }
  });

  test.each(COMPARISONS)("%s agrees with json-logic-js on JSON values", (op) => {
    for (const a of EDGE) {
      for (const b of EDGE.filter(scalar)) {
        const rule = { [op]: [{ var: "a" }, b] };
        const row = { op, a, b };
        expect({ ...row, v: evaluateExpression(rule, { a }) }).toEqual({
          ...row,
          v: jsonLogic.apply(rule, { a }),
        });
      }
    }
  });

  test("a hostile structure yields null on every path, never an exception", () => {
    // `{"toString": 1}` makes ToPrimitive throw; `{"valueOf": 2}` falls back to Object.prototype.toString.
    for (const op of ["==", "!=", ">", ">=", "<", "<="]) {
      const f = forms(op, HOSTILE[0], 1);
      expect({ op, f }).toEqual({ op, f: { ...f, generic: null, constRight: null, inLoop: [null] } });
      for (const hostile of HOSTILE) {
        const h = forms(op, hostile, "1");
        expect({ op, hostile, v: h.nestedRight }).toEqual({ op, hostile, v: h.generic });
      }
      const g = forms(op, HOSTILE[1], 1);
      expect({ op, v: g.constRight, loop: g.inLoop }).toEqual({ op, v: g.generic, loop: [g.generic] });
      expect(typeof g.generic).toBe("boolean");
    }
  });

  test('a computed operand against "" (a nested path, a cat result) equals the generic path and json-logic-js', () => {
    for (const op of [">", ">=", "<", "<="]) {
      for (const a of [...EDGE, ...HOSTILE]) {
        const row = { op, a };
        const generic = evaluateExpression({ [op]: [{ var: "a" }, { var: "b" }] }, { a, b: "" });
        const nested = { [op]: [{ var: "w.a" }, ""] };
        expect({ ...row, v: evaluateExpression(nested, { w: { a } }) }).toEqual({ ...row, v: generic });
        if (!HOSTILE.includes(a)) {
          expect({ ...row, v: generic }).toEqual({ ...row, v: jsonLogic.apply(nested, { w: { a } }) });
        }
      }
      // `cat` (and a string-building reduce) leave ropes: the answer must not depend on it.
      for (const parts of [[], [""], ["", ""], ["a"], ["a", "b"], ["", "b"]]) {
        const rule = { [op]: [{ cat: parts.map((_, i) => ({ var: `p.${i}` })) }, ""] };
        expect({ op, parts, v: evaluateExpression(rule, { p: parts }) }).toEqual({
          op,
          parts,
          v: jsonLogic.apply(rule, { p: parts }),
        });
      }
    }
  });

  test("between (three arguments) keeps its evaluation order and null on hostile input", () => {
    expect(evaluateExpression({ "<": [1, { var: "x" }, 3] }, { x: 2 })).toBe(true);
    expect(evaluateExpression({ "<=": [1, { var: "x" }, 3] }, { x: 3 })).toBe(true);
    expect(evaluateExpression({ "<": [1, { var: "x" }, 3] }, { x: 3 })).toBe(false);
    expect(evaluateExpression({ "<": [1, { var: "x" }, 3] }, { x: HOSTILE[0] })).toBe(null);
  });
});

describe("in with a constant needle", () => {
  const HAYSTACKS: unknown[] = [
    "Re: hi",
    "re:",
    "",
    "a1b",
    null,
    5,
    ["Re:", 1],
    [1, "1"],
    [],
    {},
    { "Re:": 1 },
  ];
  test("equals the generic path and json-logic-js for strings, numbers, null and arrays", () => {
    for (const needle of ["Re:", "1", 1, "", null, true]) {
      for (const h of HAYSTACKS) {
        const rule = { in: [needle, { var: "h" }] };
        const generic = evaluateExpression({ in: [{ var: "n" }, { var: "h" }] }, { n: needle, h });
        const row = { needle, h };
        expect({ ...row, v: evaluateExpression(rule, { h }) }).toEqual({ ...row, v: generic });
        // json-logic-js answers false for an empty haystack (`!b`); the mapper always did `"".includes`.
        if (h !== "" && !(typeof h === "object" && h !== null && !Array.isArray(h))) {
          expect({ ...row, v: generic }).toEqual({ ...row, v: jsonLogic.apply(rule, { h }) });
        }
      }
    }
  });

  test("a hostile needle in a string is null (its text cannot be computed)", () => {
    expect(evaluateExpression({ in: [{ var: "n" }, "abc"] }, { n: HOSTILE[0] })).toBe(null);
  });
});

describe("cat rendered as a string expression", () => {
  const arb = fc.oneof(
    fc.string({ maxLength: 3 }),
    fc.integer({ min: -9, max: 9 }),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.oneof(fc.string({ maxLength: 2 }), fc.integer()), { maxLength: 2 }),
  );
  test("any mix of constant and data arguments equals json-logic-js", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(arb, fc.boolean()), { maxLength: 6 }), (args) => {
        const data = Object.fromEntries(args.map(([v], i) => [`k${i}`, v]));
        const rule = { cat: args.map(([v, fromData], i) => (fromData || !scalar(v) ? { var: `k${i}` } : v)) };
        expect({ rule, v: evaluateExpression(rule, data) }).toEqual({ rule, v: jsonLogic.apply(rule, data) });
      }),
      { numRuns: 500 },
    );
  });

  test("a hostile argument makes the whole cat null, constant or not", () => {
    expect(evaluateExpression({ cat: ["a", { var: "h" }, "b"] }, { h: HOSTILE[0] })).toBe(null);
    expect(evaluateExpression({ cat: ["a", { var: "x" }, { toString: 1 }] }, { x: 1 })).toBe(null);
  });
});

describe("substr and merge catch their own errors", () => {
  test("substr with constant and data bounds agree with json-logic-js", () => {
    for (const text of ["jsonlogic", "", 12345, null, true]) {
      for (const [start, len] of [
        [0, 4],
        [4, undefined],
        [-5, undefined],
        [1, -5],
        ["2", "3"],
        [null, null],
      ] as const) {
        const args = len === undefined ? [{ var: "t" }, start] : [{ var: "t" }, start, len];
        const viaData =
          len === undefined ? [{ var: "t" }, { var: "s" }] : [{ var: "t" }, { var: "s" }, { var: "l" }];
        const data = { t: text, s: start, l: len };
        const row = { text, start, len };
        const want = jsonLogic.apply({ substr: args }, data);
        expect({ ...row, v: evaluateExpression({ substr: args }, data) }).toEqual({ ...row, v: want });
        expect({ ...row, v: evaluateExpression({ substr: viaData }, data) }).toEqual({ ...row, v: want });
      }
    }
  });

  test("substr of a hostile value or bound is null", () => {
    expect(evaluateExpression({ substr: [{ var: "h" }, 0, 2] }, { h: HOSTILE[0] })).toBe(null);
    expect(evaluateExpression({ substr: ["abc", { var: "h" }] }, { h: HOSTILE[0] })).toBe(null);
    expect(evaluateExpression({ substr: ["abc", { var: "h" }, { var: "h" }] }, { h: HOSTILE[0] })).toBe(null);
  });

  test("merge with literal array arguments equals merge of the built arrays", () => {
    const data = { a: [1, [2]], s: "x", o: { k: 1 }, n: null };
    const rules = [
      { merge: [[{ var: "s" }], { var: "a" }] },
      { merge: [[], [{ var: "a" }], { var: "n" }] },
      { merge: [{ var: "o" }, [{ var: "o" }]] },
      { merge: [[[1, 2]], 3, [{ var: "nope" }]] },
    ];
    const expected = [
      ["x", 1, [2]],
      [[1, [2]], null],
      [{ k: 1 }, { k: 1 }],
      [[1, 2], 3, null],
    ];
    expect(rules.map((r) => evaluateExpression(r, data))).toEqual(expected);
  });
});

describe("a mapper whose vars are only read by name does not build the vars object", () => {
  const input = { message: { subject: "Re: hi" }, ctx: {}, meta: { m: 1 } };
  const vars = [
    { name: "a", expr: { var: "message.subject" } },
    { name: "b", expr: { var: "vars.c" } }, // a forward reference reads null
    { name: "c", expr: { cat: [{ var: "vars.a" }, "!"] } },
  ];
  test("slot reads, forward references and defaults behave as before", () => {
    const out = compileMapper({
      version: "v1",
      vars,
      output: {
        a: { var: "vars.a" },
        b: { var: "vars.b" },
        c: { var: ["vars.c", 0] },
        d: { var: ["vars.zz", 7] },
      },
    })(input);
    expect(out).toEqual({ a: "Re: hi", b: null, c: "Re: hi!", d: 7 });
  });

  test.each([
    ["the whole vars object", { var: "vars" }, { a: "Re: hi", b: null, c: "Re: hi!" }],
    ["a computed path", { var: { cat: ["vars", ".c"] } }, "Re: hi!"],
    [
      "an object-form loop body",
      { map: { over: [1], as: "i", do: { var: "vars" } } },
      [{ a: "Re: hi", b: null, c: "Re: hi!" }],
    ],
  ])("%s still sees every var", (_name, output, expected) => {
    expect(compileMapper({ version: "v1", vars, output })(input)).toEqual(expected);
  });

  test("a call.* helper is handed a root whose vars object is complete", () => {
    registerFunction("test.vars_seen", {
      description: "returns root.vars",
      args: {},
      run: (_a, root) => (root as { vars: unknown }).vars,
    });
    const out = compileMapper({ version: "v1", vars, output: { "call.test.vars_seen": {} } })(input);
    expect(out).toEqual({ a: "Re: hi", b: null, c: "Re: hi!" });
  });

  test("reading the root with an empty path exposes the vars object", () => {
    const out = compileMapper({ version: "v1", vars, output: { var: "" } })(input) as { vars: unknown };
    expect(out.vars).toEqual({ a: "Re: hi", b: null, c: "Re: hi!" });
  });
});

describe("message, ctx and meta reads in a mapper start from a slot", () => {
  const message = {
    subject: "s",
    from: [{ email: "a@b", name: "" }],
    headers: { "x-a": "1" },
    deep: { a: { b: { c: { d: 1 } } } },
  };
  const run = (output: unknown, meta?: Record<string, unknown>) =>
    compileMapper({ version: "v1", output })({ message, ctx: { now: "n" }, ...(meta ? { meta } : {}) });
  test.each([
    ["a whole field", { var: "ctx" }, { now: "n" }],
    ["a nested path", { var: "message.from.0.email" }, "a@b"],
    ["a bracket path", { var: 'message.headers["x-a"]' }, "1"],
    ["a path longer than the slot readers", { var: "message.deep.a.b.c.d" }, 1],
    ["a missing path with a default", { var: ["message.from.1.email", "none"] }, "none"],
    ["meta when none was given", { var: "meta" }, {}],
    ["an inherited member", { var: "message.constructor" }, null],
    ["__proto__", { var: "message.__proto__" }, null],
    [
      "a JsonLogic-form body reading the item, not the message",
      { map: [[{ message: 1 }], { var: "message" }] },
      [1],
    ],
  ])("%s", (_name, output, expected) => {
    expect(run(output)).toEqual(expected);
  });
});

describe("fused reads of one key (map pluck, field comparisons, in over a field)", () => {
  // Items of every kind: the fused read must treat each exactly like the `var` node it replaces.
  const items: unknown[] = [
    { k: 1 },
    { k: "1" },
    { k: null },
    { k: [1] },
    { k: "image/png" },
    {},
    null,
    7,
    "str",
    [5],
    { k: { toString: 1 } },
  ];
  const viaAlias = (op: string, body: unknown) => ({
    [op]: { over: { var: "items" }, as: "it", where: body },
  });
  test.each(["k", "toString", "length", "constructor"])("map plucking %s equals the unfused read", (key) => {
    const fused = evaluateExpression({ map: [{ var: "items" }, { var: key }] }, { items });
    const unfused = evaluateExpression(
      { map: { over: { var: "items" }, as: "it", do: { var: `it.${key}` } } },
      { items },
    );
    expect(fused).toEqual(unfused);
  });

  test.each(COMPARISONS)("filter by {var: k} %s constant equals the object form", (op) => {
    for (const k of [1, "1", null, "image/png", true]) {
      const fused = evaluateExpression(
        { filter: [{ var: "items" }, { [op]: [{ var: "k" }, k] }] },
        { items },
      );
      const unfused = evaluateExpression(viaAlias("filter", { [op]: [{ var: "it.k" }, k] }), { items });
      expect({ op, k, fused }).toEqual({ op, k, fused: unfused });
    }
  });

  test("in over a field equals the object form and a default-carrying read", () => {
    for (const needle of ["image/", "1", 1, null]) {
      const fused = evaluateExpression(
        { filter: [{ var: "items" }, { in: [needle, { var: "k" }] }] },
        { items },
      );
      const unfused = evaluateExpression(viaAlias("filter", { in: [needle, { var: "it.k" }] }), { items });
      const withDefault = evaluateExpression(
        { filter: [{ var: "items" }, { in: [needle, { var: ["k", null] }] }] },
        { items },
      );
      expect({ needle, fused }).toEqual({ needle, fused: unfused });
      expect({ needle, fused }).toEqual({ needle, fused: withDefault });
    }
  });
});

describe("predicate loops run a fused field test themselves", () => {
  const items: unknown[] = [
    { k: 1 },
    { k: "1" },
    { k: null },
    { k: [1] },
    { k: "image/png" },
    {},
    null,
    7,
    "str",
    { k: { toString: 1 } },
  ];
  const tests: unknown[] = [
    ...COMPARISONS.flatMap((op) =>
      [1, "1", null, "image/png", true].map((k) => ({ [op]: [{ var: "k" }, k] })),
    ),
    ...["image/", "1", 1, null].map((needle) => ({ in: [needle, { var: "k" }] })),
    { "==": [{ var: "" }, 7] },
  ];
  test.each(["filter", "find", "some", "all", "none"])(
    "%s equals the same test through a default-carrying read",
    (op) => {
      for (const t of tests) {
        // `{"var": ["k", null]}` is not a fused read: the body is called per item, as before.
        const unfusedBody = JSON.parse(JSON.stringify(t).replace('{"var":"k"}', '{"var":["k",null]}'));
        for (const list of [items, items.slice(0, 1), [], "not a list"]) {
          const fused = evaluateExpression({ [op]: [{ var: "items" }, t] }, { items: list });
          const unfused = evaluateExpression({ [op]: [{ var: "items" }, unfusedBody] }, { items: list });
          expect({ op, t, fused }).toEqual({ op, t, fused: unfused });
        }
      }
    },
  );

  test("each item is still charged to the node budget", () => {
    const many = Array.from({ length: 6000 }, (_, i) => ({ k: i }));
    const run = compileMapper({
      version: "v1",
      vars: [{ name: "n", expr: { all: [{ var: "meta.items" }, { ">=": [{ var: "k" }, 0] }] } }],
      output: { var: "vars.n" },
    });
    const stats = { nodes: 0 };
    expect(run({ message: {}, ctx: {}, meta: { items: many.slice(0, 10) } } as never, stats)).toBe(true);
    // the loop and its `over` read, then per item the test (`>=` and its read) and the iteration; the output
    expect(stats.nodes).toBe(1 + 1 + 10 * 3 + 1);
    expect(() => run({ message: {}, ctx: {}, meta: { items: many } } as never)).toThrow("more than");
  });
});

describe("a JsonLogic reduce keeps current and accumulator in slots", () => {
  const data = { xs: [1, 2, 3], objs: [{ a: 1 }, JSON.parse('{"__proto__": 5, "a": 2}')] };
  test.each([
    ["a merge", { reduce: [{ var: "xs" }, { merge: [{ var: "accumulator" }, { var: "current" }] }, []] }],
    ["a cat", { reduce: [{ var: "xs" }, { cat: [{ var: "accumulator" }, "x"] }, ""] }],
    [
      "a nested path",
      { reduce: [{ var: "objs" }, { cat: [{ var: "accumulator" }, { var: "current.a" }] }, ""] },
    ],
    ["a key the item lacks", { reduce: [{ var: "xs" }, { var: ["xs", "none"] }, 0] }],
  ])("%s equals json-logic-js", (_name, rule) => {
    expect(evaluateExpression(rule, data)).toEqual(jsonLogic.apply(rule, data));
  });

  test.each([
    ["an own __proto__ key", data.objs, { var: "current.__proto__" }, 5],
    ["an inherited member", [1, 2], { var: "toString" }, null],
    [
      "the item itself (empty path)",
      [1, 2],
      { var: "" },
      { current: 2, accumulator: { current: 1, accumulator: 0 } },
    ],
    ["a computed path", [1, 2], { var: { cat: ["curr", "ent"] } }, 2],
    [
      "a nested JsonLogic body reading its own item's current",
      [1, 2],
      { map: [[{ current: 9 }], { var: "current" }] },
      [9],
    ],
  ])("%s reads what the item object would give", (_name, over, body, expected) => {
    expect(evaluateExpression({ reduce: [{ var: "over" }, body, 0] }, { over })).toEqual(expected);
  });

  test.each([
    ["a string start", "", ["a", "b"]],
    ["no start (null)", undefined, [1, 2]],
    ["a number start", 7, [null, 1]],
    ["an array start", [1, [2, 3]], ["x"]],
    ["an object start", { a: 1 }, [1]],
    ["an empty list", "s", []],
    ["not a list", "s", "abc"],
  ])("a string-building body (cat of the accumulator) run inline: %s", (_name, start, xs) => {
    for (const cat of [
      { cat: [{ var: "accumulator" }, "x"] },
      { cat: ["<", { var: "accumulator" }, ">", 1] },
    ]) {
      const rule = { reduce: start === undefined ? [{ var: "xs" }, cat] : [{ var: "xs" }, cat, start] };
      // The same body through the generic path: an extra operand that reads `current` (always "").
      const generic = {
        reduce: [
          { var: "xs" },
          { cat: [...cat.cat, { substr: [{ var: "current" }, 0, 0] }] },
          ...(start === undefined ? [] : [start]),
        ],
      };
      expect(evaluateExpression(rule, { xs })).toEqual(evaluateExpression(generic, { xs }));
      // json-logic-js reads a literal object as an operation: compare only the other starts with it.
      if (typeof start !== "object" || Array.isArray(start)) {
        expect(evaluateExpression(rule, { xs })).toEqual(jsonLogic.apply(rule, { xs }));
      }
    }
  });

  test("a string-building reduce still hits the value-length guard and yields null for a hostile part", () => {
    const grow = { reduce: [{ var: "xs" }, { cat: [{ var: "accumulator" }, { var: "accumulator" }] }, "ab"] };
    expect(() => evaluateExpression(grow, { xs: Array.from({ length: 25 }, () => 0) })).toThrow(
      "longer than",
    );
    const rule = { reduce: [{ var: "xs" }, { cat: [{ var: "accumulator" }, "x"] }, { var: "h" }] };
    expect(evaluateExpression(rule, { xs: [1], h: { toString: 1 } })).toBeNull();
  });

  test("an outer object-form alias named current still wins over the item's key", () => {
    const rule = {
      map: { over: [10], as: "current", do: { reduce: [[1, 2], { var: "current" }, 0] } },
    };
    expect(evaluateExpression(rule, {})).toEqual([10]);
  });
});

describe("whole-slot operands are read inline", () => {
  const input = { message: { subject: "Re: hi", from: [{ email: "a@example.com" }] }, ctx: {} };
  const vars = [
    { name: "early", expr: { var: "vars.late" } }, // forward reference: unset slot
    { name: "subject", expr: { var: "message.subject" } },
    { name: "flag", expr: { in: ["Re:", { var: "vars.subject" }] } },
    { name: "late", expr: "x" },
  ];
  const output = {
    in: { in: ["Re:", { var: "vars.subject" }] },
    inUnset: { in: ["x", { var: "vars.nope" }] },
    not: { "!": { var: "vars.flag" } },
    and: { and: [{ var: "vars.subject" }, 1] },
    andFalsy: { and: [{ var: "vars.early" }, 1] },
    or: { or: [{ var: "vars.early" }, 2] },
    if: { if: [{ var: "vars.flag" }, "y", "n"] },
    ifCall: { if: [{ var: "vars.early" }, { var: "vars.subject" }, { var: "vars.late" }] },
    cat1: { cat: [{ var: "vars.subject" }, "!"] },
    cat2: { cat: [{ var: "vars.early" }, "-", { var: "vars.subject" }] },
    cat3: { cat: [{ var: "vars.late" }, { var: "vars.early" }, { var: "vars.subject" }] },
    list: [{ var: "vars.subject" }, { var: "vars.early" }],
  };
  test("each operator sees the var's value, and null for an unset slot", () => {
    const slotted = compileMapper({ version: "v1", vars, output })(input);
    // With a computed read somewhere the vars object is built and `vars.x` reads it like any path.
    const viaObject = compileMapper({
      version: "v1",
      vars,
      output: [output, { var: { cat: ["vars", ""] } }],
    })(input) as unknown[];
    expect(slotted).toEqual(viaObject[0]);
    expect(slotted).toMatchObject({
      in: true,
      inUnset: false,
      not: false,
      andFalsy: null,
      or: 2,
      cat2: "-Re: hi",
    });
  });
});
