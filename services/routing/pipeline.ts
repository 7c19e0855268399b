/**
 * Route pipelines (docs/routing.md § Pipelines): `{steps: [{name, args}]}` — transform steps, then
 * exactly one `map.*` step, last. This module owns what holds for a pipeline as a whole: its shape and
 * size, where the map step stands, the author's key order (`orderedPipeline`), and running the transforms
 * in order. What one step means — its arguments, their checks, its execution — lives in its own file
 * under steps/, found through the registry in steps/index.ts.
 */
import type { NormalizedMessage } from "../lib/message.ts";
import type { Pipeline, PipelineStep } from "../lib/pipeline.ts";
import { isPlainObject, pointer, type ValidationIssue } from "./issues.ts";
import { ARG_LIMITS } from "./steps/args.ts";
import { genericJsonStep } from "./steps/generic-json.ts";
import {
  isMapStepName,
  MAP_STEP_NAMES,
  NO_TRANSFORM_CONTEXT,
  STEP_NAMES,
  type StepDeps,
  stepNamed,
  type TransformContext,
  transformNamed,
} from "./steps/index.ts";

export type { Pipeline, PipelineStep } from "../lib/pipeline.ts";
export type { MapperConfigValidator } from "./steps/index.ts";

/** The pipeline a route gets when none is given. */
export const DEFAULT_PIPELINE: Pipeline = { steps: [{ name: genericJsonStep.name, args: {} }] };

/**
 * The pipeline as its author wrote it: parsed from its stored JSON text (key order kept, which decides the
 * order of a mapper's output keys) when that text still holds the same pipeline as the `jsonb` copy; else
 * the `jsonb` copy (keys sorted by Postgres). A version without `pipeline_text` (a rollback, or an older
 * process on the same database) can change `pipeline` and leave the text behind: the text is then stale
 * and must not win.
 */
export function orderedPipeline(stored: { pipeline: Pipeline; pipeline_text?: string | null }): Pipeline {
  if (typeof stored.pipeline_text === "string") {
    try {
      const written = JSON.parse(stored.pipeline_text) as Pipeline;
      if (sameJson(written, stored.pipeline)) return written;
    } catch {
      // fall through to the jsonb copy
    }
  }
  return stored.pipeline;
}

/** Deep equality of two JSON values, ignoring object key order (iterative). */
export function sameJson(a: unknown, b: unknown): boolean {
  const stack: [unknown, unknown][] = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop() as [unknown, unknown];
    if (x === y) continue;
    if (typeof x !== "object" || typeof y !== "object" || x === null || y === null) return false;
    if (Array.isArray(x) !== Array.isArray(y)) return false;
    const xs = x as Record<string, unknown>;
    const ys = y as Record<string, unknown>;
    const keys = Object.keys(xs);
    if (keys.length !== Object.keys(ys).length) return false;
    for (const k of keys) {
      if (!Object.hasOwn(ys, k)) return false;
      stack.push([xs[k], ys[k]]);
    }
  }
  return true;
}

/** Options for `validatePipeline`: what the steps' validators need from outside routing. */
export type ValidatePipelineOptions = StepDeps;

/** Size limits on a pipeline. */
export const PIPELINE_LIMITS = { maxSteps: 20, ...ARG_LIMITS } as const;

type Issues = ValidationIssue[];

/**
 * Validates a pipeline. Returns every problem found with its JSON Pointer path under `basePath`
 * (mapper errors are re-rooted, e.g. `/pipeline/steps/1/args/output/x`); empty means valid.
 */
export function validatePipeline(
  pipeline: unknown,
  opts: ValidatePipelineOptions = {},
  basePath = "/pipeline",
): ValidationIssue[] {
  const issues: Issues = [];
  if (!isPlainObject(pipeline)) return [{ path: basePath, message: "must be an object with a steps array" }];
  for (const key of Object.keys(pipeline)) {
    if (key !== "steps") issues.push({ path: pointer(basePath, key), message: `unknown key "${key}"` });
  }
  const stepsPath = pointer(basePath, "steps");
  const steps = pipeline.steps;
  if (!Array.isArray(steps)) {
    issues.push({ path: stepsPath, message: "must be an array of steps" });
    return issues;
  }
  if (steps.length === 0 || steps.length > PIPELINE_LIMITS.maxSteps) {
    issues.push({
      path: stepsPath,
      message: `must have 1 to ${PIPELINE_LIMITS.maxSteps} steps, ending with a map.* step`,
    });
    return issues;
  }
  const mapIndices: number[] = [];
  steps.forEach((step, i) => {
    const name = checkStep(step, pointer(stepsPath, i), opts, issues);
    if (name !== null && isMapStepName(name)) mapIndices.push(i);
  });
  const last = mapIndices.at(-1);
  if (last === undefined) {
    issues.push({
      path: stepsPath,
      message: `must end with a map.* step (${MAP_STEP_NAMES.join(" or ")})`,
    });
    return issues;
  }
  for (const i of mapIndices.slice(0, -1)) {
    issues.push({ path: pointer(stepsPath, i, "name"), message: "a pipeline has exactly one map.* step" });
  }
  if (last !== steps.length - 1) {
    issues.push({ path: pointer(stepsPath, last, "name"), message: "the map.* step must be the last step" });
  }
  return issues;
}

/** Checks one step; returns its name when it is a string (for map placement), else null. */
function checkStep(
  step: unknown,
  path: string,
  opts: ValidatePipelineOptions,
  issues: Issues,
): string | null {
  if (!isPlainObject(step)) {
    issues.push({ path, message: "must be an object {name, args}" });
    return null;
  }
  for (const key of Object.keys(step)) {
    if (key !== "name" && key !== "args")
      issues.push({ path: pointer(path, key), message: `unknown key "${key}"` });
  }
  const { name, args } = step;
  if (typeof name !== "string") {
    issues.push({ path: pointer(path, "name"), message: "must be a step name string" });
    return null;
  }
  const argsPath = pointer(path, "args");
  if (!isPlainObject(args)) {
    issues.push({ path: argsPath, message: "must be an object" });
    return name;
  }
  const definition = stepNamed(name);
  if (definition === undefined) {
    issues.push({
      path: pointer(path, "name"),
      message: `unknown step "${name}"; known steps: ${STEP_NAMES.join(", ")}`,
    });
  } else {
    for (const issue of definition.validate(args, argsPath, opts)) issues.push(issue);
  }
  return name;
}

/**
 * Runs the transform steps of a validated pipeline over `message`, in order, and returns the result.
 * The `map.*` step is skipped (the caller builds the body with it); the input message is not modified.
 * Throws on a step name no transform is registered under: a validated pipeline has none.
 */
export function applyTransforms(
  steps: readonly PipelineStep[],
  message: NormalizedMessage,
  ctx: TransformContext = NO_TRANSFORM_CONTEXT,
): NormalizedMessage {
  let current = message;
  for (const step of steps) {
    if (isMapStepName(step.name)) continue;
    const transform = transformNamed(step.name);
    if (transform === undefined) throw new Error(`unknown pipeline step ${step.name}`);
    current = transform.apply(current, step.args, ctx);
  }
  return current;
}
