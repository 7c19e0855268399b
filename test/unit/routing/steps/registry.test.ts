/** The step registry: every step can run, validation knows exactly the registered names, examples hold. */
import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { validateMapperConfig } from "../../../../mapper/index.ts";
import { applyTransforms, validatePipeline } from "../../../../services/routing/pipeline.ts";
import {
  MAP_STEP_NAMES,
  MAP_STEP_PREFIX,
  mapStepNamed,
  STEP_NAMES,
  STEPS,
  type StepDefinition,
  stepNamed,
  transformNamed,
} from "../../../../services/routing/steps/index.ts";
import { makeMessage } from "../../../support/messages.ts";

const registered = Object.entries(STEPS) as [string, StepDefinition][];
/** The valid arguments each step publishes in its schema's `examples`. */
const examplesOf = (step: StepDefinition): Record<string, unknown>[] => step.args.examples ?? [];
const lastMap = { name: "map.generic_json", args: {} };

describe("the step registry", () => {
  test.each(registered)(
    "%s has the execution its kind needs and a name in its kind's namespace",
    (key, step) => {
      expect(step.name).toBe(key);
      expect(typeof step.validate).toBe("function");
      expect(step.summary.length).toBeGreaterThan(0);
      if (step.kind === "map") {
        expect(typeof step.build).toBe("function");
        expect(step.name.startsWith(MAP_STEP_PREFIX)).toBe(true);
      } else {
        expect(typeof step.apply).toBe("function");
        expect(step.name.startsWith(MAP_STEP_PREFIX)).toBe(false);
      }
    },
  );

  test("lookups find every registered step under its kind and nothing else", () => {
    for (const [name, step] of registered) {
      expect(stepNamed(name)).toBe(step);
      expect(transformNamed(name)).toBe(step.kind === "transform" ? step : undefined);
      expect(mapStepNamed(name)).toBe(step.kind === "map" ? step : undefined);
    }
    for (const name of ["summarize_text", "map.discord_simple", "toString", "__proto__", ""]) {
      expect(stepNamed(name)).toBeUndefined();
    }
  });

  test("a step without the execution of its kind is not a StepDefinition (checked by tsc)", () => {
    const common = { summary: "s", args: Type.Object({}), validate: () => [] };
    // @ts-expect-error a transform must have `apply`
    const transform: StepDefinition = { ...common, name: "t", kind: "transform" };
    // @ts-expect-error a map step must have `build`
    const map: StepDefinition = { ...common, name: "map.x", kind: "map" };
    // @ts-expect-error a map step's name is in the `map.` namespace
    const misnamed: StepDefinition = {
      ...common,
      name: "x",
      kind: "map",
      build: () => ({ kind: "json", contentType: "application/json", value: null }),
    };
    expect([transform, map, misnamed]).toHaveLength(3);
  });

  test.each(registered)(
    "%s publishes valid argument examples its schema and validator accept",
    (_n, step) => {
      expect(examplesOf(step).length).toBeGreaterThan(0);
      for (const args of examplesOf(step)) {
        expect(Value.Check(step.args, args)).toBe(true);
        expect(step.validate(args, "/args", { validateMapperConfig })).toEqual([]);
      }
    },
  );
});

describe("validatePipeline knows exactly the registered steps", () => {
  test.each(registered)("accepts %s with valid args in its place", (name, step) => {
    for (const args of examplesOf(step)) {
      const steps = step.kind === "map" ? [{ name, args }] : [{ name, args }, lastMap];
      expect(validatePipeline({ steps }, { validateMapperConfig })).toEqual([]);
    }
  });

  test("names every registered step, and only those, when a step is unknown", () => {
    const [issue] = validatePipeline({ steps: [{ name: "summarize_text", args: {} }, lastMap] });
    expect(issue?.message).toBe(`unknown step "summarize_text"; known steps: ${STEP_NAMES.join(", ")}`);
    expect(STEP_NAMES).toEqual(Object.keys(STEPS) as typeof STEP_NAMES);
  });

  test("names the registered map steps when the final step is missing", () => {
    expect(MAP_STEP_NAMES).toEqual(registered.filter(([, s]) => s.kind === "map").map(([n]) => n));
    const [issue] = validatePipeline({ steps: [{ name: "remove_fields", args: { paths: ["html"] } }] });
    expect(issue?.message).toBe(`must end with a map.* step (${MAP_STEP_NAMES.join(" or ")})`);
  });

  test("applyTransforms runs every registered transform and refuses any other name", () => {
    for (const [name, step] of registered) {
      if (step.kind !== "transform") continue;
      for (const args of examplesOf(step)) {
        expect(() => applyTransforms([{ name, args }], makeMessage())).not.toThrow();
      }
    }
    expect(() => applyTransforms([{ name: "toString", args: {} }], makeMessage())).toThrow(
      /unknown pipeline step/,
    );
  });
});
