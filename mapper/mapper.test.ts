import { afterEach, describe, expect, spyOn, test } from "bun:test";
import {
  compileExpression,
  compileMapper,
  evaluateExpression,
  MapperRuntimeError,
  registerFunction,
  validateMapperConfig,
} from "./index.ts";
import type { MapperInput } from "./types.ts";

const message = {
  message_id: "<m1@example.com>",
  subject: "Invoice 42",
  from: [{ email: "ann@example.com", name: "Ann" }],
  to: [{ email: "in@in.localhost", name: "" }],
  headers: { "x-mailer": "test" },
  text: "Hello https://example.com/a",
  html: '<p>Hi <a href="https://example.com/b">B</a></p>',
  attachments: [{ id: "a1", filename: "x.pdf", content_type: "application/pdf", size: 3, is_inline: false }],
};
const input: MapperInput = {
  message,
  ctx: { project_id: "p", route_id: "r", source_type: "api", now: "2025-01-01T00:00:00Z" },
  meta: { k: 1 },
};
const run = (config: unknown, i: MapperInput = input) => compileMapper(config)(i);
/** Bun has `process.threadCpuUsage`; bun-types does not declare it yet. */
const threadCpu = process as unknown as { threadCpuUsage: () => { user: number; system: number } };

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return e instanceof MapperRuntimeError ? e.code : `other: ${String(e)}`;
  }
  return undefined;
};

registerFunction("test.boom", {
  description: "throws",
  args: {},
  run: () => {
    throw new Error("boom");
  },
});
registerFunction("test.echo", {
  description: "echo",
  args: { v: { type: "string", description: "v" } },
  run: (a) => a.v,
});

describe("evaluation rules", () => {
  test("vars are evaluated in order and a later var reads an earlier one", () => {
    const out = run({
      version: "v1",
      vars: [
        { name: "subj", expr: { var: "message.subject" } },
        { name: "loud", expr: { "string.upper": { var: "vars.subj" } } },
      ],
      output: { loud: { var: "vars.loud" } },
    });
    expect(out).toEqual({ loud: "INVOICE 42" });
  });

  test("a forward reference to a later var reads null", () => {
    const out = run({
      version: "v1",
      vars: [
        { name: "a", expr: { var: "vars.b" } },
        { name: "b", expr: 1 },
      ],
      output: { a: { var: "vars.a" }, b: { var: "vars.b" } },
    });
    expect(out).toEqual({ a: null, b: 1 });
  });

  test("the root exposes message, ctx, meta and vars", () => {
    const out = run({
      version: "v1",
      output: {
        id: { var: "message.message_id" },
        now: { var: "ctx.now" },
        k: { var: "meta.k" },
        file: { var: "message.attachments[0].filename" },
      },
    });
    expect(out).toEqual({ id: "<m1@example.com>", now: "2025-01-01T00:00:00Z", k: 1, file: "x.pdf" });
  });

  test("an error inside an operator yields null and evaluation continues", () => {
    expect(run({ version: "v1", output: { a: { "call.test.boom": {} }, b: 2 } })).toEqual({ a: null, b: 2 });
  });

  test("both call forms reach the same helper", () => {
    expect(
      run({
        version: "v1",
        output: [{ "call.test.echo": { v: "x" } }, { call: { fn: "test.echo", args: { v: "x" } } }],
      }),
    ).toEqual(["x", "x"]);
  });

  test("the same output for the same input (deterministic)", () => {
    const config = {
      version: "v1",
      output: { u: { "call.extract.urls": {} }, t: { "call.transform.html_to_text": {} } },
    };
    expect(run(config)).toEqual(run(config));
  });

  test("equal configs share one compilation; key order is part of a config (it orders the output)", () => {
    expect(compileMapper({ version: "v1", output: { a: 1, b: 2 } })).toBe(
      compileMapper({ version: "v1", output: { a: 1, b: 2 } }),
    );
    expect(compileMapper({ version: "v1", output: { a: 1, b: 2 } })).not.toBe(
      compileMapper({ version: "v1", output: { b: 2, a: 1 } }),
    );
  });

  test("an invalid config is refused with mapper.invalid_config and details", () => {
    try {
      compileMapper({ version: "v1", output: { "string.reverse": 1 } });
      throw new Error("not thrown");
    } catch (e) {
      expect(e).toBeInstanceOf(MapperRuntimeError);
      expect((e as MapperRuntimeError).code).toBe("mapper.invalid_config");
      expect((e as MapperRuntimeError).details[0]?.path).toBe("/output/string.reverse");
    }
  });
});

describe("key order", () => {
  test("configs that differ only in key order compile separately and keep their own order", () => {
    const ab = compileMapper({ version: "v1", output: { a: 1, b: { var: "message.subject" } } });
    const ba = compileMapper({ version: "v1", output: { b: { var: "message.subject" }, a: 1 } });
    expect(Object.keys(ab(input) as object)).toEqual(["a", "b"]);
    expect(Object.keys(ba(input) as object)).toEqual(["b", "a"]);
  });
});

describe("guards", () => {
  afterEach(() => {
    (performance.now as unknown as { mockRestore?: () => void }).mockRestore?.();
    (process.cpuUsage as unknown as { mockRestore?: () => void }).mockRestore?.();
    (threadCpu.threadCpuUsage as unknown as { mockRestore?: () => void }).mockRestore?.();
  });

  test("depth over 50 is refused before running", () => {
    let e: unknown = 1;
    for (let i = 0; i < 60; i++) e = [e];
    expect(codeOf(() => compileMapper({ version: "v1", output: e }))).toBe("mapper.invalid_config");
    const r = (() => {
      try {
        compileMapper({ version: "v1", output: e });
      } catch (x) {
        return (x as MapperRuntimeError).details[0]?.message;
      }
    })();
    expect(r).toMatch(/deeper than 50/);
  });

  test("a too-deep expression or meta is a validation problem tagged mapper.depth_exceeded", () => {
    let e: unknown = 1;
    for (let i = 0; i < 60; i++) e = { "!": e };
    let meta: unknown = 1;
    for (let i = 0; i < 60; i++) meta = { a: meta };
    const result = validateMapperConfig({ version: "v1", output: e, meta });
    expect(result.ok).toBe(false);
    const errors = (result as { errors: { path: string; code?: string }[] }).errors;
    expect(errors.map((x) => x.code)).toEqual(["mapper.depth_exceeded", "mapper.depth_exceeded"]);
    expect(errors[0]?.path).toStartWith("/meta/a/a/");
    expect(errors[1]?.path).toStartWith("/output/!/!/");
    // 50 levels of meta are fine.
    let ok: unknown = 1;
    for (let i = 0; i < 49; i++) ok = { a: ok };
    expect(validateMapperConfig({ version: "v1", output: 1, meta: ok })).toEqual({ ok: true });
  });

  test("configs nested thousands of levels deep are mapper.invalid_config, never a RangeError", () => {
    let meta: unknown = 1;
    for (let i = 0; i < 10_000; i++) meta = { a: meta, b: 1 };
    expect(validateMapperConfig({ version: "v1", meta, output: 1 }).ok).toBe(false);
    expect(codeOf(() => compileMapper({ version: "v1", meta, output: 1 }))).toBe("mapper.invalid_config");
    for (const wrap of [(x: unknown) => ({ "!": x }), (x: unknown) => [x], (x: unknown) => ({ a: x })]) {
      let e: unknown = 1;
      for (let i = 0; i < 100_000; i++) e = wrap(e);
      expect(codeOf(() => compileExpression(e))).toBe("mapper.invalid_config");
      expect(codeOf(() => evaluateExpression(e, {}))).toBe("mapper.invalid_config");
    }
  });

  test("more than 10k evaluated nodes raise mapper.nodes_exceeded (one counter for vars, output and loops)", () => {
    const big = Array.from({ length: 3000 }, (_, i) => i);
    // 3000 items × (iteration + `!` + `var`) ≈ 9k nodes: one pass fits, two do not.
    const half = { map: [{ var: "meta.big" }, { "!": { var: "" } }] };
    const cfg = { version: "v1", vars: [{ name: "a", expr: half }], output: half };
    expect(codeOf(() => run(cfg, { ...input, meta: { big } }))).toBe("mapper.nodes_exceeded");
    expect(codeOf(() => run({ version: "v1", output: half }, { ...input, meta: { big } }))).toBeUndefined();
  });

  test("a guard error says where the run stopped (var or output) and the nodes charged so far", () => {
    const big = Array.from({ length: 3000 }, (_, i) => i);
    const half = { map: [{ var: "meta.big" }, { "!": { var: "" } }] };
    const where = (config: unknown) => {
      const stats = { nodes: 0 };
      try {
        compileMapper(config)({ ...input, meta: { big } }, stats);
      } catch (e) {
        const err = e as MapperRuntimeError;
        return { code: err.code, path: err.path, nodes: err.nodes, stats: stats.nodes };
      }
      return undefined;
    };
    // Two passes over 3,000 items pass 10k in the second: in var 1 here, in the output there.
    const inVar = where({
      version: "v1",
      vars: [
        { name: "a", expr: half },
        { name: "b", expr: half },
      ],
      output: 1,
    });
    expect(inVar).toMatchObject({ code: "mapper.nodes_exceeded", path: "/vars/1/expr" });
    expect(inVar?.nodes).toBeGreaterThan(10_000);
    expect(inVar?.stats).toBe(inVar?.nodes as number);
    // The same in a mapper whose vars object is observed (a computed var path reads it).
    const observed = where({
      version: "v1",
      vars: [{ name: "a", expr: half }],
      output: [{ var: { cat: ["vars.", "a"] } }, half],
    });
    expect(observed).toMatchObject({ code: "mapper.nodes_exceeded", path: "/output" });
    const output = where({ version: "v1", vars: [{ name: "a", expr: half }], output: half });
    expect(output).toMatchObject({ code: "mapper.nodes_exceeded", path: "/output" });
  });

  test("an output over 1 MiB raises mapper.output_too_large", () => {
    const s = "x".repeat(600_000);
    expect(
      codeOf(() =>
        run({ version: "v1", output: [{ var: "meta.s" }, { var: "meta.s" }] }, { ...input, meta: { s } }),
      ),
    ).toBe("mapper.output_too_large");
  });

  test("exponential growth through shared values is refused without serialising it", () => {
    const vars = [{ name: "v0", expr: ["x"] }];
    for (let i = 1; i < 40; i++)
      vars.push({ name: `v${i}`, expr: [{ var: `vars.v${i - 1}` }, { var: `vars.v${i - 1}` }] as never });
    const started = performance.now();
    expect(codeOf(() => run({ version: "v1", vars, output: { var: "vars.v39" } }))).toBe(
      "mapper.output_too_large",
    );
    expect(performance.now() - started).toBeLessThan(1000);
  });

  test("string doubling is stopped at the intermediate size cap", () => {
    const vars = [{ name: "v0", expr: "xxxxxxxx" }];
    for (let i = 1; i < 40; i++)
      vars.push({
        name: `v${i}`,
        expr: { cat: [{ var: `vars.v${i - 1}` }, { var: `vars.v${i - 1}` }] } as never,
      });
    expect(codeOf(() => run({ version: "v1", vars, output: 1 }))).toBe("mapper.output_too_large");
  });

  test("a regex operation measured over 50 ms raises mapper.regex_timeout", () => {
    let t = 0;
    spyOn(performance, "now").mockImplementation(() => (t += 60));
    spyOn(threadCpu, "threadCpuUsage").mockImplementation(() => ({ user: 60_000, system: 0 }));
    expect(
      codeOf(() => run({ version: "v1", output: { "regex.match": { value: "abc", pattern: "b" } } })),
    ).toBe("mapper.regex_timeout");
  });

  test("a regex that only waited for a core (slow wall clock, little CPU) is not a timeout", () => {
    let t = 0;
    spyOn(performance, "now").mockImplementation(() => (t += 80));
    spyOn(threadCpu, "threadCpuUsage").mockImplementation(() => ({ user: 2_000, system: 0 }));
    expect(run({ version: "v1", output: { "regex.match": { value: "abc", pattern: "b" } } })).toBe(true);
  });

  test("CPU time of other threads is not charged (a burst on the other mapper workers)", () => {
    let t = 0;
    spyOn(performance, "now").mockImplementation(() => (t += 150));
    spyOn(process, "cpuUsage").mockImplementation(() => ({ user: 300_000, system: 0 }));
    spyOn(threadCpu, "threadCpuUsage").mockImplementation(() => ({ user: 5_000, system: 0 }));
    expect(run({ version: "v1", output: { "call.test.echo": { v: "x" } } })).toBe("x");
  });

  test("a call measured over 100 ms raises mapper.call_timeout", () => {
    let t = 0;
    spyOn(performance, "now").mockImplementation(() => (t += 150));
    spyOn(threadCpu, "threadCpuUsage").mockImplementation(() => ({ user: 150_000, system: 0 }));
    expect(codeOf(() => run({ version: "v1", output: { "call.test.echo": { v: "x" } } }))).toBe(
      "mapper.call_timeout",
    );
    expect(() => run({ version: "v1", output: { "call.test.echo": { v: "x" } } })).toThrow(
      /^call\.test\.echo took \d+\.\d ms \(limit 100 ms\)$/,
    );
  });

  test("html_to_text's fallback hands back a text over 1 Mi characters (nothing grew: no output_too_large)", () => {
    const text = "word ".repeat(240_000); // 1.2 M characters, no HTML
    const message = { ...input.message, html: "", text };
    const len = { "string.slice": { value: { "call.transform.html_to_text": {} }, start: 0, end: 9 } };
    expect(run({ version: "v1", output: len }, { ...input, message })).toBe("word word");
  });
});

describe("vars.<name> reads (slot fast path) match the vars object", () => {
  const meta = { items: [{ vars: { a: "item-a" } }], k: 1 };
  const vars = [
    { name: "fwd", expr: { var: ["vars.b", "dflt"] } },
    { name: "self", expr: { var: "vars.self" } },
    { name: "a", expr: { var: "message.from.0" } },
    { name: "b", expr: { var: "vars.a.email" } },
    { name: "n", expr: { var: "vars.nothing" } },
    { name: "inner", expr: { map: [{ var: "meta.items" }, { var: "vars.a" }] } },
    { name: "alias", expr: { map: { over: { var: "meta.items" }, as: "vars", do: { var: "vars.a" } } } },
    { name: "outer", expr: { map: { over: { var: "meta.items" }, as: "x", do: { var: "vars.a.name" } } } },
    { name: "deep", expr: { var: "vars.a.email.length" } },
  ];
  test("forward references, defaults, loops, aliases and the whole vars object", () => {
    const out = run(
      {
        version: "v1",
        vars,
        output: {
          all: { var: "vars" },
          b: { var: "vars.b" },
          missing: { var: ["vars.a.zzz", 7] },
        },
      },
      { ...input, meta },
    );
    expect(out).toEqual({
      all: {
        fwd: "dflt",
        self: null,
        a: { email: "ann@example.com", name: "Ann" },
        b: "ann@example.com",
        n: null,
        // JsonLogic-form body: `var` root is the item, so `vars.a` is the item's
        inner: ["item-a"],
        // an alias named `vars` shadows the mapper's vars
        alias: [null],
        outer: ["Ann"],
        deep: 15,
      },
      b: "ann@example.com",
      missing: 7,
    });
  });
  test("a repeated var name reads the latest definition, as before", () => {
    const out = run({
      version: "v1",
      vars: [
        { name: "x", expr: "one" },
        { name: "y", expr: { var: "vars.x" } },
        { name: "x", expr: "two" },
      ],
      output: [{ var: "vars.x" }, { var: "vars.y" }],
    });
    expect(out).toEqual(["two", "one"]);
  });
});
