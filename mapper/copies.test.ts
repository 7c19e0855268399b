import { afterEach, describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { codeCopies } from "./copies.ts";
import {
  compileMapper,
  createMapperPool,
  DEFAULT_CODE_COPIES,
  MapperRuntimeError,
  setCodeCopies,
  validateMapperConfig,
} from "./index.ts";
import { expr, input } from "./testdata/arbitraries.ts";

afterEach(() => setCodeCopies(DEFAULT_CODE_COPIES));

/** A var that overruns the node budget inside a loop, so the error is thrown from the loop's own code. */
const overrun = { map: [{ var: "meta.big" }, { cat: [{ var: "x" }, "y"] }] };
const big = { ...input, meta: { big: Array.from({ length: 20_000 }, (_, i) => ({ x: i })) } };

/** The error a compiled mapper throws on `data`. */
function thrown(run: () => unknown): MapperRuntimeError {
  try {
    run();
  } catch (err) {
    if (err instanceof MapperRuntimeError) return err;
    throw err;
  }
  throw new Error("expected a MapperRuntimeError");
}

/** What a mapper returns or the code it fails with, comparable across compilations. */
function outcome(config: unknown, data: unknown): unknown {
  try {
    return { out: compileMapper(config)(data as never) };
  } catch (err) {
    if (err instanceof MapperRuntimeError) return { code: err.code };
    throw err;
  }
}

describe("code copies", () => {
  test("var i runs on copy 1 + i mod N, and its guard errors are the library's MapperRuntimeError", () => {
    setCodeCopies(3);
    for (const position of [0, 1, 2, 3, 4]) {
      const vars = Array.from({ length: position + 1 }, (_, i) => ({
        name: `v${i}`,
        expr: i === position ? overrun : { var: "message.subject" },
      }));
      const err = thrown(() => compileMapper({ version: "v1", vars, output: null })(big as never));
      expect(err).toBeInstanceOf(MapperRuntimeError);
      expect(err.code).toBe("mapper.nodes_exceeded");
      expect(err.stack).toContain(`mapper-copy:${1 + (position % 3)}|`);
    }
  });

  test("with 0 copies every var runs on the ordinary modules", () => {
    setCodeCopies(0);
    expect(codeCopies()).toBe(0);
    const err = thrown(() =>
      compileMapper({ version: "v1", vars: [{ name: "a", expr: overrun }], output: null })(big as never),
    );
    expect(err.code).toBe("mapper.nodes_exceeded");
    expect(err.stack).not.toContain("mapper-copy:");
  });

  test("a helper registered after start is seen by every copy (one function registry); the output runs on the next copy", async () => {
    await import("./testdata/copies-plugin.ts");
    setCodeCopies(4);
    const vars = Array.from({ length: 6 }, (_, i) => ({
      name: `v${i}`,
      expr: { "call.test.code_copy": {} },
    }));
    // The output template comes after the six vars: copy 1 + 6 mod 4.
    const output = [...vars.map((v) => ({ var: `vars.${v.name}` })), { "call.test.code_copy": {} }];
    const out = compileMapper({ version: "v1", vars, output })(input as never);
    expect(out).toEqual([1, 2, 3, 4, 1, 2, 3].map((copy) => ({ copy, copies: 4 })));
  });

  test("random configs give the same output or error code with copies as without", () => {
    const many = fc.record({
      version: fc.constant("v1"),
      vars: fc.array(fc.record({ name: fc.constantFrom("a", "b", "c", "d", "e"), expr }), { maxLength: 9 }),
      output: expr,
    });
    let compared = 0;
    fc.assert(
      fc.property(many, (c) => {
        if (!validateMapperConfig(c).ok) return;
        setCodeCopies(0);
        const plain = outcome(c, input);
        setCodeCopies(2);
        const copied = outcome(c, input);
        expect(copied).toEqual(plain);
        compared++;
      }),
      { numRuns: 300 },
    );
    expect(compared).toBeGreaterThan(100);
  });

  test("a setting outside 0–64 is refused, by setCodeCopies and by the pool", () => {
    for (const bad of [-1, 1.5, 65, Number.NaN]) {
      expect(() => setCodeCopies(bad)).toThrow(RangeError);
      expect(() => createMapperPool({ size: 1, codeCopies: bad })).toThrow(RangeError);
    }
    expect(codeCopies()).toBe(DEFAULT_CODE_COPIES);
  });

  test("loadCodeCopies loads every copy now, and names the copy whose files are gone", async () => {
    // A throwaway checkout of mapper/ whose operators vanish after start (a deploy replacing files).
    const dir = mkdtempSync(join(tmpdir(), "mapper-copies-"));
    try {
      cpSync(import.meta.dir, join(dir, "mapper"), { recursive: true });
      symlinkSync(join(import.meta.dir, "../node_modules"), join(dir, "node_modules"));
      const copies = (await import(join(dir, "mapper/copies.ts"))) as typeof import("./copies.ts");
      copies.setCodeCopies(3);
      copies.loadCodeCopies(); // all three load
      rmSync(join(dir, "mapper/operators/iter.ts"));
      copies.setCodeCopies(4);
      expect(() => copies.loadCodeCopies()).toThrow(/^copy 4 of the mapper's evaluator code did not load: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("pool workers use the copies they are given", async () => {
    const plugin = new URL("./testdata/copies-plugin.ts", import.meta.url).href;
    const vars = Array.from({ length: 3 }, (_, i) => ({
      name: `v${i}`,
      expr: { "call.test.code_copy": {} },
    }));
    const config = { version: "v1", vars, output: vars.map((v) => ({ var: `vars.${v.name}` })) };
    for (const [codeCopies, copies] of [
      [0, [0, 0, 0]],
      [2, [1, 2, 1]],
    ] as const) {
      const pool = createMapperPool({ size: 1, codeCopies, plugins: [plugin] });
      try {
        expect(await pool.run(config, input as never)).toEqual(
          copies.map((copy) => ({ copy, copies: codeCopies })),
        );
      } finally {
        await pool.close();
      }
    }
  });
});
