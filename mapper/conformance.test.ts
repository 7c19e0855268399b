import { describe, expect, test } from "bun:test";
import { CONFORMANCE_DIR, conformancePath, needsConformance } from "../test/support/paths.ts";
import { evaluateExpression } from "./index.ts";
import { type ConformanceCase, normalise, readCases, usesOnlyV1 } from "./testdata/conformance.ts";

// The suite file is read only when MAILHOOK_CONFORMANCE_DIR is set; otherwise the suite shows as skipped.
const cases: ConformanceCase[] = CONFORMANCE_DIR
  ? readCases(await Bun.file(conformancePath("jsonlogic", "json-logic-js.tests.json")).json())
  : [];
const v1Cases = cases.filter((c) => usesOnlyV1(c.rule));

describe.skipIf(!CONFORMANCE_DIR)(
  needsConformance("json-logic-js official tests (v1 operators only)"),
  () => {
    test("the suite still has the expected number of v1 cases", () => {
      expect(cases.length).toBe(277);
      expect(v1Cases.length).toBeGreaterThanOrEqual(200);
    });

    test.each(v1Cases.map((c, i) => [i, c.description, c] as const))("case %d: %s", (_i, _d, c) => {
      const got = normalise(evaluateExpression(c.rule, c.data));
      expect({ rule: c.rule, data: c.data, got }).toEqual({ rule: c.rule, data: c.data, got: c.result });
    });
  },
);
