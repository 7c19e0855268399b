import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { compileMapper, MapperRuntimeError, validateMapperConfig } from "./index.ts";
import { config, input } from "./testdata/arbitraries.ts";

describe("fuzz", () => {
  test("arbitrary JSON never makes the validator throw", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.jsonValue(),
          fc.record({ version: fc.constant("v1"), output: fc.jsonValue(), vars: fc.jsonValue() }),
        ),
        (c) => {
          const r = validateMapperConfig(c);
          expect(typeof r.ok).toBe("boolean");
        },
      ),
      { numRuns: 400 },
    );
  });

  test("valid random configs run within the guards (bounded nodes and time)", () => {
    let ran = 0;
    fc.assert(
      fc.property(config, (c) => {
        if (!validateMapperConfig(c).ok) return;
        const started = performance.now();
        try {
          const out = compileMapper(c)(input);
          expect(JSON.stringify(out) ?? "null").toBeDefined();
          ran++;
        } catch (e) {
          expect(e).toBeInstanceOf(MapperRuntimeError);
        }
        expect(performance.now() - started).toBeLessThan(500);
      }),
      { numRuns: 300 },
    );
    expect(ran).toBeGreaterThan(50);
  });
});
