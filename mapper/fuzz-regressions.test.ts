/**
 * Inputs tools/chaos/fuzz-mapper.ts found breaking a mapper invariant, replayed from
 * `test/fixtures/fuzz/mapper/*.json` (`{config, input, output}`): each now runs to the expected output.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { outputBudgetLeft } from "./guards.ts";
import { compileMapper, type MapperInput } from "./index.ts";

const DIR = join(import.meta.dir, "../test/fixtures/fuzz/mapper");
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .map((file) => ({
    file,
    ...(JSON.parse(readFileSync(join(DIR, file), "utf8")) as {
      config: unknown;
      input: MapperInput;
      output: unknown;
    }),
  }));

describe("mapper fuzz regressions", () => {
  test.each(cases)("$file: runs to the recorded output", ({ config, input, output }) => {
    expect(compileMapper(config)(input)).toEqual(output);
  });

  test("fuzz-mapper seed 97385977: data nested deeper than the call stack is refused with the guard's code", () => {
    // Its subject was 10,438 levels deep and the output was the whole input: the size walk overflowed the
    // stack (RangeError out of the run). Any depth is now walked; what JSON.stringify cannot encode either is
    // mapper.output_too_large.
    const deep = (levels: number, leaf: unknown) => {
      let v: unknown = leaf;
      for (let i = 0; i < levels; i++) v = i % 2 === 0 ? { a: v } : [v];
      return v;
    };
    const input = (leaf: unknown) =>
      ({ message: { subject: deep(200_000, leaf) }, ctx: {}, meta: {} }) as unknown as MapperInput;
    const whole = compileMapper({ version: "v1", output: { var: "" } });
    const listed = compileMapper({
      version: "v1",
      vars: [{ name: "s", expr: { var: "message.subject" } }],
      output: [{ var: "vars.s" }],
    });
    for (const run of [whole, listed]) {
      for (const leaf of ["x", "y".repeat(2 * 1024 * 1024)]) {
        expect(() => run(input(leaf))).toThrow(expect.objectContaining({ code: "mapper.output_too_large" }));
      }
    }
  });

  test("the explicit-stack size walk gives the recursive walk's bound", () => {
    const rng = (() => {
      let x = 42;
      return () => {
        x = (x * 1103515245 + 12345) & 0x7fffffff;
        return x / 0x7fffffff;
      };
    })();
    const value = (depth: number): unknown => {
      const r = rng();
      if (depth > 6 || r < 0.3) return [null, true, 3.5, "abc", "ünï"][Math.floor(rng() * 5)];
      if (r < 0.65) return Array.from({ length: Math.floor(rng() * 5) }, () => value(depth + 1));
      return Object.fromEntries(
        Array.from({ length: Math.floor(rng() * 5) }, (_, i) => [`k${i}`, value(depth + 1)]),
      );
    };
    for (let i = 0; i < 500; i++) {
      const v = value(0);
      expect(outputBudgetLeft(v, 1_000_000, true)).toBe(outputBudgetLeft(v, 1_000_000, false));
    }
    // Both refuse the same overrun.
    const big = { a: ["x".repeat(600), { b: "y".repeat(600) }] };
    for (const iterative of [false, true]) {
      expect(() => outputBudgetLeft(big, 1000, iterative)).toThrow(
        expect.objectContaining({ code: "mapper.output_too_large" }),
      );
    }
  });

  test.each(["==", "!=", ">", ">=", "<", "<=", "in"])(
    "%s on an object whose own toString/valueOf are data yields null, not a TypeError",
    (op) => {
      const input = JSON.parse(
        '{"message":{},"ctx":{},"meta":{"o":{"toString":1,"valueOf":{}}}}',
      ) as MapperInput;
      const run = compileMapper({ version: "v1", output: { [op]: [{ var: "meta.o" }, "1"] } });
      expect(run(input)).toBeNull();
    },
  );
});
