/** What the step tests share: a stub mapper validator, a validation table runner, a map step's input. */
import { expect } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import {
  type MapperConfigValidator,
  type ValidatePipelineOptions,
  validatePipeline,
} from "../../../../services/routing/pipeline.ts";
import type { MapInput, StepDefinition } from "../../../../services/routing/steps/index.ts";
import { makeMessage } from "../../../support/messages.ts";

/** The generic map step, to end a pipeline whose transforms are under test. */
export const generic = { name: "map.generic_json", args: {} };

/** A custom mapper step with `output` (the stub below accepts a numeric `output.x`). */
export const custom = (output: unknown = { x: 1 }) => ({
  name: "map.custom_json",
  args: { version: "v1", output },
});

/** Stub mapper validator: rejects any `output.x` that is not a number, with a config-relative pointer. */
export const stubMapper: MapperConfigValidator = (config) => {
  const c = config as { version?: unknown; output?: { x?: unknown } };
  const errors = [];
  if (c.version !== "v1") errors.push({ path: "/version", message: "must be v1" });
  if (typeof c.output?.x !== "number") errors.push({ path: "/output/x", message: "unknown operator" });
  return errors.length === 0 ? { ok: true } : { ok: false, errors };
};

/** One rejected pipeline: its description, the pipeline, and the issues expected, in order. */
export type RejectCase = [string, unknown, { path: string; message: RegExp }[]];

/** Asserts `validatePipeline` reports exactly `expected` (paths equal, messages matching). */
export function expectIssues(
  pipeline: unknown,
  expected: RejectCase[2],
  opts: ValidatePipelineOptions = { validateMapperConfig: stubMapper },
): void {
  const issues = validatePipeline(pipeline, opts);
  expect(issues.map((i) => i.path)).toEqual(expected.map((e) => e.path));
  issues.forEach((issue, i) => {
    expect(issue.message).toMatch(expected[i]!.message);
  });
}

/** When the sample event was created. */
export const eventCreatedAt = new Date("2025-03-01T10:00:07.123Z");

/** A map step's input for the sample message, as delivery gives it; override any field. */
export const mapInput = (over: Partial<MapInput> = {}): MapInput => ({
  message: makeMessage(),
  projectId: "prj_1",
  event: { id: "0190b3a0-0000-7000-8000-000000000001", routeId: "rte_1", createdAt: eventCreatedAt },
  rawSizeBytes: 1234,
  sourceType: "smtp",
  envelope: { mail_from: "a@example.com", rcpt_to: ["b@in.localhost"] },
  now: "2025-03-01T10:00:08.000Z",
  ...over,
});

/**
 * Asserts the step's published schema and its validator agree that `args` is (in)valid. Only for shape:
 * what a schema cannot state (RE2 syntax, min above max) is the validator's alone.
 */
export function expectSchemaAgrees(
  step: StepDefinition,
  args: Record<string, unknown>,
  valid: boolean,
): void {
  expect(Value.Check(step.args, args)).toBe(valid);
  // The custom mapper's own validator is injected; here a stand-in that accepts everything.
  const issues = step.validate(args, "/args", { validateMapperConfig: () => ({ ok: true }) });
  expect(issues.length === 0, JSON.stringify(issues)).toBe(valid);
}
