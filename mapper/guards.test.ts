/**
 * Guard accounting with per-block node charging (compile.ts header): the count must equal what a
 * node-by-node counter would report, branches and short-circuits included, and the 10k guard must trip on
 * the same configs.
 */
import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { checkOutputSize, slotObjectChecked } from "./guards.ts";
import { compileExpression, compileMapper, MapperRuntimeError, registerFunction } from "./index.ts";
import type { MapperInput } from "./types.ts";

const base: MapperInput = { message: { subject: "s" }, ctx: {} };
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return e instanceof MapperRuntimeError ? e.code : `other: ${String(e)}`;
  }
  return undefined;
};
/** Nodes evaluated by `output` with `meta`, as the stats hook reports them. */
const nodesOf = (output: unknown, meta: Record<string, unknown> = {}, vars: unknown[] = []): number => {
  const stats = { nodes: -1 };
  compileMapper({ version: "v1", vars, output })({ ...base, meta }, stats);
  return stats.nodes;
};

describe("node budget", () => {
  // Object-form nested loop: 2 + n × (tick + map + var + n × (tick + `!` + var)) = 2 + n(3 + 3n).
  const nested = {
    map: {
      over: { var: "meta.a" },
      as: "x",
      do: { map: { over: { var: "meta.a" }, as: "y", do: { "!": { var: "y" } } } },
    },
  };
  const list = (n: number) => Array.from({ length: n }, (_, i) => i);

  test("a nested loop is counted exactly and trips just past 10k", () => {
    expect(nodesOf(nested, { a: list(3) })).toBe(2 + 3 * (3 + 9));
    expect(nodesOf(nested, { a: list(57) })).toBe(9920);
    expect(codeOf(() => nodesOf(nested, { a: list(58) }))).toBe("mapper.nodes_exceeded");
  });

  test("JsonLogic-form loops and predicates count one node per tested item", () => {
    const a = [1, 2, 3, 0, 5];
    // some stops at the first truthy item: some + var + 1 × (tick + var).
    expect(nodesOf({ some: [{ var: "meta.a" }, { var: "" }] }, { a })).toBe(2 + 2);
    // all stops at the first falsy item (0 at index 3): 2 + 4 × 2.
    expect(nodesOf({ all: [{ var: "meta.a" }, { var: "" }] }, { a })).toBe(2 + 8);
    // reduce: reduce + var + 5 × (tick + cat + 2 vars).
    const r = { reduce: [{ var: "meta.a" }, { cat: [{ var: "accumulator" }, { var: "current" }] }, ""] };
    expect(nodesOf(r, { a })).toBe(2 + 5 * 4);
  });

  test("only the branch taken, the operands reached and a needed default are counted", () => {
    const cond = { if: [{ var: "meta.c" }, { cat: ["a", { var: "meta.x" }] }, { var: "meta.x" }] };
    expect(nodesOf(cond, { c: true })).toBe(4);
    expect(nodesOf(cond, { c: false })).toBe(3);
    const and = { and: [{ var: "meta.c" }, { "!": { var: "meta.x" } }] };
    expect(nodesOf(and, { c: false })).toBe(2);
    expect(nodesOf(and, { c: true })).toBe(4);
    const or = { or: [{ var: "meta.c" }, { "!": { var: "meta.x" } }, { var: "meta.y" }] };
    expect(nodesOf(or, { c: true })).toBe(2);
    expect(nodesOf(or, { c: false, x: 1 })).toBe(5);
    const dflt = { var: ["meta.x", { cat: ["d", { var: "meta.y" }] }] };
    expect(nodesOf(dflt, { x: 1 })).toBe(1);
    expect(nodesOf(dflt, {})).toBe(3);
    const between = { "<": [{ var: "meta.x" }, { var: "meta.y" }, { var: "meta.z" }] };
    expect(nodesOf(between, { x: 2, y: 1, z: 3 })).toBe(3);
    expect(nodesOf(between, { x: 0, y: 1, z: 3 })).toBe(4);
  });

  test("vars and output share one counter; folded constants cost nothing", () => {
    const vars = [
      { name: "a", expr: { "!": { var: "meta.x" } } },
      { name: "k", expr: { cat: ["a", { "==": [1, 1] }] } },
    ];
    expect(nodesOf({ var: "vars.a" }, { x: 1 }, vars)).toBe(3);
  });

  test("a wide loop-free expression over 10k operators still trips (mapper and plain expression)", () => {
    const wide = { cat: Array.from({ length: 10_000 }, () => ({ var: "meta.x" })) };
    expect(codeOf(() => nodesOf(wide, { x: "a" }))).toBe("mapper.nodes_exceeded");
    expect(codeOf(() => compileExpression(wide)({ meta: { x: "a" } }))).toBe("mapper.nodes_exceeded");
    const fits = { cat: Array.from({ length: 9_999 }, () => ({ var: "x" })) };
    expect(compileExpression(fits)({ x: "a" })).toBe("a".repeat(9_999));
  });
});

describe("output size", () => {
  test("an output over 1 MiB still raises mapper.output_too_large, also when built from vars", () => {
    const s = "x".repeat(300_000);
    const vars = [{ name: "t", expr: { var: "meta.s" } }];
    const out = { a: { var: "vars.t" }, b: [{ var: "vars.t" }, { var: "vars.t" }], c: { var: "meta.s" } };
    expect(codeOf(() => nodesOf(out, { s }, vars))).toBe("mapper.output_too_large");
    expect(
      codeOf(() => nodesOf({ a: { var: "vars.t" }, b: { var: "vars.t" } }, { s }, vars)),
    ).toBeUndefined();
  });

  // Shared by the two one-pass output forms below (an array and an object of vars).
  const vars = (n: number, expr: unknown) => Array.from({ length: n }, (_, i) => ({ name: `v${i}`, expr }));
  const big = "x".repeat(300_000);
  const wide = "é".repeat(300_000);
  const dag = [{ name: "v0", expr: { var: "meta.s" } }].concat(
    Array.from({ length: 19 }, (_, i) => ({
      name: `v${i + 1}`,
      expr: [{ var: `vars.v${i}` }, { var: `vars.v${i}` }] as never,
    })),
  );

  test("an output listing vars (built and checked in one pass) trips on the same inputs as the walk", () => {
    const list = (n: number) => Array.from({ length: n }, (_, i) => ({ var: `vars.v${i}` }));
    // 3 × (300k + 3) + 2 ≈ 900 kB fits (lower bound), a fourth does not; unset and null slots read null.
    expect(codeOf(() => nodesOf(list(3), { s: big }, vars(3, { var: "meta.s" })))).toBeUndefined();
    expect(codeOf(() => nodesOf(list(4), { s: big }, vars(4, { var: "meta.s" })))).toBe(
      "mapper.output_too_large",
    );
    const stats = { nodes: -1 };
    const out = compileMapper({ version: "v1", vars: vars(2, { var: "meta.n" }), output: list(3) })(
      { ...base, meta: { n: 1 } },
      stats,
    );
    expect(out).toEqual([1, 1, null]);
    expect(stats.nodes).toBe(5); // 2 vars + 3 reads in the output
    // A DAG: 20 vars each listing the previous twice holds 2^20 leaves; refused without serialising.
    expect(codeOf(() => nodesOf(list(20), { s: "abcdef" }, dag))).toBe("mapper.output_too_large");
    // UTF-8: the lower bound fits, the encoding does not (the JSON confirmation still runs).
    expect(codeOf(() => nodesOf(list(2), { s: wide }, vars(2, { var: "meta.s" })))).toBe(
      "mapper.output_too_large",
    );
  });

  test("an output object of vars (built and checked in one pass) trips on the same inputs as the walk", () => {
    const object = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, { var: `vars.v${i}` }]));
    expect(codeOf(() => nodesOf(object(3), { s: big }, vars(3, { var: "meta.s" })))).toBeUndefined();
    expect(codeOf(() => nodesOf(object(4), { s: big }, vars(4, { var: "meta.s" })))).toBe(
      "mapper.output_too_large",
    );
    const stats = { nodes: -1 };
    const out = compileMapper({ version: "v1", vars: vars(2, { var: "meta.n" }), output: object(3) })(
      { ...base, meta: { n: 1 } },
      stats,
    );
    expect(out).toEqual({ k0: 1, k1: 1, k2: null });
    expect(Object.keys(out as object)).toEqual(["k0", "k1", "k2"]);
    expect(stats.nodes).toBe(5);
    expect(codeOf(() => nodesOf(object(20), { s: "abcdef" }, dag))).toBe("mapper.output_too_large");
    expect(codeOf(() => nodesOf(object(2), { s: wide }, vars(2, { var: "meta.s" })))).toBe(
      "mapper.output_too_large",
    );
  });

  test("slotObjectChecked gives the walk's result, error and message on random values and limits", () => {
    const outcome = (run: () => unknown) => {
      try {
        return { value: run() };
      } catch (e) {
        return { error: e instanceof MapperRuntimeError ? `${e.code}: ${e.message}` : String(e) };
      }
    };
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 3 })), { maxLength: 8 }),
        fc.integer({ min: 0, max: 400 }),
        fc.boolean(),
        (entries, limit, unset) => {
          // The template's key order is the config's: Object.keys order (integer-like keys first).
          const template = Object.fromEntries(entries.map(([k], i) => [k, i]));
          const names = Object.keys(template);
          const locals: unknown[] = names.map((k) => entries[template[k] as number]![1]);
          if (unset && locals.length > 0) locals[0] = undefined; // a var not yet set reads null
          const slots = names.map((_, i) => i);
          const shape = Object.fromEntries(names.map((k) => [k, null]));
          const walked = outcome(() => {
            const built = { ...shape } as Record<string, unknown>;
            names.forEach((k, i) => {
              built[k] = locals[i] === undefined ? null : locals[i];
            });
            checkOutputSize(built, limit);
            return built;
          });
          expect(outcome(() => slotObjectChecked(locals, { names, slots, shape }, limit))).toEqual(walked);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test("escapes and UTF-8 count: a 600k-char string of 2-byte characters is too large", () => {
    const s = "é".repeat(600_000);
    expect(codeOf(() => nodesOf({ var: "meta.s" }, { s }))).toBe("mapper.output_too_large");
  });
});

describe("compileExpression reuses one state per expression", () => {
  // A loop forces the counting path with a shared, reset-per-run state object.
  const loop = { map: [{ var: "xs" }, { "!": { var: "" } }] };
  const list = (n: number) => Array.from({ length: n }, (_, i) => i);

  test("the count restarts at every run: many small runs never add up to the budget", () => {
    const f = compileExpression(loop);
    for (let i = 0; i < 5; i++) expect(f({ xs: list(3000) })).toHaveLength(3000);
  });

  test("a run that trips the guard leaves the expression usable", () => {
    const f = compileExpression(loop);
    expect(codeOf(() => f({ xs: list(6000) }))).toBe("mapper.nodes_exceeded");
    expect(f({ xs: [0, 1] })).toEqual([true, false]);
    expect(codeOf(() => f({ xs: list(6000) }))).toBe("mapper.nodes_exceeded");
  });

  test("object-form loop slots do not leak between runs", () => {
    const f = compileExpression({ map: { over: { var: "xs" }, as: "x", do: { var: "x.v" } } });
    expect(f({ xs: [{ v: 1 }, { v: 2 }] })).toEqual([1, 2]);
    expect(f({ xs: [{}, { v: 3 }] })).toEqual([null, 3]);
    expect(f({})).toEqual([]);
  });

  test("a re-entrant run (a helper evaluating the same expression) gets its own state", () => {
    const expr = { map: [{ var: "xs" }, { "call.test.reenter": {} }] };
    let depth = 0;
    registerFunction("test.reenter", {
      description: "re-enters",
      args: {},
      run: () => {
        if (depth > 0) return "inner";
        depth++;
        try {
          return compileExpression(expr)({ xs: list(4000) });
        } finally {
          depth--;
        }
      },
    });
    const f = compileExpression(expr);
    // Outer: 1 map + 1 var + 2 × (tick + call); inner: 1 + 1 + 4000 × 2 = 8002 on its own state.
    const out = f({ xs: [1, 2] }) as unknown[];
    expect(out).toHaveLength(2);
    expect((out[0] as unknown[]).length).toBe(4000);
    expect(f({ xs: [1] })).toHaveLength(1);
  });
});
