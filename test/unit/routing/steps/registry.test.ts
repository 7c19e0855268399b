/** The step registry: every step can run, validation knows exactly the registered names, schemas agree. */
import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
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
import { makeMessage } from "../message-fixture.ts";

const registered = Object.entries(STEPS) as [string, StepDefinition][];
/** A valid args object per step, so a pipeline with that step validates. */
const VALID_ARGS: Record<string, Record<string, unknown>> = {
  "map.generic_json": {},
  "map.custom_json": { version: "v1", output: { subject: { var: "message.subject" } } },
  remove_fields: { paths: ["html"] },
  strip_attachments_if: { is_inline: true },
};
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
    for (const name of ["html_to_text", "map.slack_simple", "toString", "__proto__", ""]) {
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

  test("every registered step has a valid-args example here, so the tests below cover it", () => {
    expect(Object.keys(VALID_ARGS).sort()).toEqual([...STEP_NAMES].sort());
  });
});

describe("validatePipeline knows exactly the registered steps", () => {
  test.each(registered)("accepts %s with valid args in its place", (name, step) => {
    const steps =
      step.kind === "map" ? [{ name, args: VALID_ARGS[name] }] : [{ name, args: VALID_ARGS[name] }, lastMap];
    expect(validatePipeline({ steps })).toEqual([]);
  });

  test("names every registered step, and only those, when a step is unknown", () => {
    const [issue] = validatePipeline({ steps: [{ name: "html_to_text", args: {} }, lastMap] });
    expect(issue?.message).toBe(`unknown step "html_to_text"; known steps: ${STEP_NAMES.join(", ")}`);
    expect(STEP_NAMES).toEqual(Object.keys(STEPS) as typeof STEP_NAMES);
  });

  test("names the registered map steps when the final step is missing", () => {
    expect(MAP_STEP_NAMES).toEqual(registered.filter(([, s]) => s.kind === "map").map(([n]) => n));
    const [issue] = validatePipeline({ steps: [{ name: "remove_fields", args: { paths: ["html"] } }] });
    expect(issue?.message).toBe(`must end with a map.* step (${MAP_STEP_NAMES.join(" or ")})`);
  });

  test("applyTransforms runs every registered transform and refuses any other name", () => {
    for (const [name, step] of registered) {
      const run = () => applyTransforms([{ name, args: VALID_ARGS[name] ?? {} }], makeMessage());
      if (step.kind === "transform") expect(run).not.toThrow();
    }
    expect(() => applyTransforms([{ name: "toString", args: {} }], makeMessage())).toThrow(
      /unknown pipeline step/,
    );
  });
});

/**
 * The published argument schema and the validator agree on shape. Cases a schema cannot state (RE2
 * syntax, min above max) are left out; for them `validate` is the authority.
 */
const SCHEMA_CASES: [string, Record<string, unknown>, boolean][] = [
  ["map.generic_json", {}, true],
  ["map.generic_json", { pretty: true }, false],
  ["map.custom_json", { version: "v1", output: 1 }, true],
  ["map.custom_json", { version: "v1", vars: [{ name: "a", expr: 1 }], output: { var: "vars.a" } }, true],
  ["remove_fields", { paths: ["html", "headers.x-secret", "attachments[*].sha256", "headers"] }, true],
  ["remove_fields", {}, false],
  ["remove_fields", { paths: [] }, false],
  ["remove_fields", { paths: ["body"] }, false],
  ["remove_fields", { paths: ["headers."] }, false],
  ["remove_fields", { paths: ["headers.a:b"] }, false],
  ["remove_fields", { paths: [3] }, false],
  ["remove_fields", { paths: ["html"], keep: [] }, false],
  ["strip_attachments_if", { mime_in: ["image/*"], max_size_bytes: 10_240, is_inline: true }, true],
  ["strip_attachments_if", { filename_glob: ["*.exe"], filename_regex: "\\.(bat|cmd)$" }, true],
  ["strip_attachments_if", { min_size_bytes: 0, max_size_bytes: 0 }, true],
  ["strip_attachments_if", {}, false],
  ["strip_attachments_if", { mime_in: ["pdf"] }, false],
  ["strip_attachments_if", { filename_glob: "*.exe" }, false],
  ["strip_attachments_if", { filename_glob: [""] }, false],
  ["strip_attachments_if", { filename_regex: "" }, false],
  ["strip_attachments_if", { min_size_bytes: -1 }, false],
  ["strip_attachments_if", { max_size_bytes: 1.5 }, false],
  ["strip_attachments_if", { is_inline: "yes" }, false],
  ["strip_attachments_if", { is_inline: true, size: 1 }, false],
];

describe("argument schemas", () => {
  test.each(SCHEMA_CASES)("%s %j: schema and validator both say valid=%p", (name, args, valid) => {
    const step = stepNamed(name);
    if (step === undefined) throw new Error(`no step ${name}`);
    expect(Value.Check(step.args, args)).toBe(valid);
    // The custom mapper's own validator is injected; here a stand-in that accepts everything.
    const issues = step.validate(args, "/args", { validateMapperConfig: () => ({ ok: true }) });
    expect(issues.length === 0, JSON.stringify(issues)).toBe(valid);
  });
});
