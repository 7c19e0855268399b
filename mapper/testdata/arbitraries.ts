/** fast-check arbitraries for mapper configs, shared by the fuzz tests. */
import fc from "fast-check";
import { OPERATOR_NAMES } from "../operators/table.ts";

const SAFE_OPS = OPERATOR_NAMES.filter((o) => o !== "regex.match" && o !== "regex.replace");

/** Expressions built from real operators with random (often ill-typed) arguments. */
export const expr = fc.letrec<{ e: unknown }>((tie) => ({
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

export const config = fc.record({
  version: fc.constant("v1"),
  vars: fc.array(fc.record({ name: fc.constantFrom("a", "b", "c"), expr }), { maxLength: 4 }),
  output: expr,
});

export const input = {
  message: { subject: "Hello", text: "t", html: "", from: [], to: [], headers: {}, attachments: [] },
  ctx: { now: "2025-01-01T00:00:00Z" },
  meta: { list: Array.from({ length: 50 }, (_, i) => i) },
};
