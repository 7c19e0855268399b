import { describe, expect, test } from "bun:test";
import fc from "fast-check";
import { compileMapper, MapperRuntimeError, validateMapperConfig } from "./index.ts";
import { OPERATOR_NAMES } from "./operators/table.ts";

const SAFE_OPS = OPERATOR_NAMES.filter((o) => o !== "regex.match" && o !== "regex.replace");

/** Expressions built from real operators with random (often ill-typed) arguments. */
const expr = fc.letrec<{ e: unknown }>((tie) => ({
  e: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.oneof(fc.integer({ min: -5, max: 5 }), fc.string({ maxLength: 4 }), fc.boolean(), fc.constant(null)),
    fc.constantFrom(
      { var: "message.subject" },
      { var: "meta.list" },
      { var: "vars.a" },
      { var: "" },
      { var: "x" },
    ),
    fc.array(tie("e"), { maxLength: 3 }),
    fc
      .record({ op: fc.constantFrom(...SAFE_OPS), args: fc.array(tie("e"), { maxLength: 3 }) })
      .map(({ op, args }) => ({ [op]: args })),
    fc
      .record({ op: fc.constantFrom("map", "filter", "some", "find"), over: tie("e"), body: tie("e") })
      .map(({ op, over, body }) => ({
        [op]: op === "map" ? { over, as: "it", do: body } : { over, as: "it", where: body },
      })),
    fc
      .record({ over: tie("e"), body: tie("e"), start: tie("e") })
      .map(({ over, body, start }) => ({ reduce: { over, do: body, start } })),
    fc.dictionary(fc.string({ maxLength: 3 }), tie("e"), { maxKeys: 3 }),
  ),
})).e;

const config = fc.record({
  version: fc.constant("v1"),
  vars: fc.array(fc.record({ name: fc.constantFrom("a", "b", "c"), expr }), { maxLength: 4 }),
  output: expr,
});

const input = {
  message: { subject: "Hello", text: "t", html: "", from: [], to: [], headers: {}, attachments: [] },
  ctx: { now: "2025-01-01T00:00:00Z" },
  meta: { list: Array.from({ length: 50 }, (_, i) => i) },
};

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
