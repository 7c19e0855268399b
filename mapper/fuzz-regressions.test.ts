/**
 * Inputs tools/chaos/fuzz-mapper.ts found breaking a mapper invariant, replayed from
 * `test/fixtures/fuzz/mapper/*.json` (`{config, input, output}`): each now runs to the expected output.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
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
