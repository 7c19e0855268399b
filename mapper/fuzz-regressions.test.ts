/**
 * Inputs tools/chaos/fuzz-mapper.ts found breaking a mapper invariant, replayed from
 * `test/fixtures/fuzz/mapper/*.json` (`{config, input, output}`): each now runs to the expected output.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { MAX_OUTPUT_DEPTH } from "./guards.ts";
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

  test("fuzz-mapper seed 97385977: an output nested deeper than MAX_OUTPUT_DEPTH is mapper.output_too_large", () => {
    // Its subject was 10,438 levels deep and the output was the whole input: the size walk overflowed the
    // stack (a RangeError out of the run).
    const deep = (levels: number, leaf: unknown) => {
      let v: unknown = leaf;
      for (let i = 0; i < levels; i++) v = i % 2 === 0 ? { a: v } : [v];
      return v;
    };
    const input = (levels: number, leaf: unknown = "x") =>
      ({ message: { s: deep(levels, leaf) }, ctx: {}, meta: {} }) as unknown as MapperInput;
    const whole = compileMapper({ version: "v1", output: { var: "message.s" } });
    const listed = compileMapper({
      version: "v1",
      vars: [{ name: "s", expr: { var: "message.s" } }],
      output: [{ var: "vars.s" }],
    });
    const tooDeep = expect.objectContaining({ code: "mapper.output_too_large" });
    // Exactly at the limit it passes; one level more (or 200,000, or with a 2 MiB leaf) is refused.
    expect(whole(input(MAX_OUTPUT_DEPTH))).toEqual(deep(MAX_OUTPUT_DEPTH, "x"));
    expect(() => whole(input(MAX_OUTPUT_DEPTH + 1))).toThrow(tooDeep);
    expect(() => whole(input(200_000))).toThrow(tooDeep);
    expect(() => whole(input(200_000, "y".repeat(2 * 1024 * 1024)))).toThrow(tooDeep);
    // In an output listing vars the list itself is the first level.
    expect(listed(input(MAX_OUTPUT_DEPTH - 1))).toEqual([deep(MAX_OUTPUT_DEPTH - 1, "x")]);
    expect(() => listed(input(MAX_OUTPUT_DEPTH))).toThrow(tooDeep);
    expect(() => listed(input(200_000))).toThrow(tooDeep);
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
