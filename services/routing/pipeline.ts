/**
 * Route pipelines (spec "Pipeline" table): `{steps: [{name, args}]}` — transform steps, then exactly
 * one `map.*` step, last. Validation here; step semantics in transforms.ts; the generic body in
 * generic-body.ts. The `map.custom_json` config is checked by the injected mapper validator so this
 * module stays independent of mapper/.
 */
import { regexError } from "../../mapper/regex.ts";
import { mimeGlobError } from "./glob.ts";
import { isPlainObject, pointer, type ValidationIssue } from "./issues.ts";
import { REMOVABLE_FIELD_PATHS, removableFieldError, STRIP_CONDITION_KEYS } from "./transforms.ts";

export {
  applyTransforms,
  attachmentMatches,
  REMOVABLE_FIELD_PATHS,
  type StripConditions,
} from "./transforms.ts";

/** One pipeline step. */
export interface PipelineStep {
  name: string;
  args: Record<string, unknown>;
}

/** A route pipeline. */
export interface Pipeline {
  steps: PipelineStep[];
}

/** The pipeline a route gets when none is given. */
export const DEFAULT_PIPELINE: Pipeline = { steps: [{ name: "map.generic_json", args: {} }] };

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

/** Step names this version knows. */
export const STEP_NAMES = [
  "map.generic_json",
  "map.custom_json",
  "remove_fields",
  "strip_attachments_if",
] as const;

/** Injected `validateMapperConfig` from mapper/index.ts (contract section 6). */
export type MapperConfigValidator = (
  config: unknown,
) => { ok: true } | { ok: false; errors: ValidationIssue[] };

/** Options for `validatePipeline`. */
export interface ValidatePipelineOptions {
  /** Checks `map.custom_json` args. Without it only "args is an object" is checked: the API must pass it. */
  validateMapperConfig?: MapperConfigValidator;
}

/** Size limits on a pipeline. */
export const PIPELINE_LIMITS = { maxSteps: 20, maxListLength: 100, maxStringLength: 1000 } as const;

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
    if (name?.startsWith("map.")) mapIndices.push(i);
  });
  const last = mapIndices.at(-1);
  if (last === undefined) {
    issues.push({
      path: stepsPath,
      message: "must end with a map.* step (map.generic_json or map.custom_json)",
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
  switch (name) {
    case "map.generic_json":
      rejectKeys(args, [], argsPath, issues);
      break;
    case "map.custom_json":
      checkMapperConfig(args, argsPath, opts, issues);
      break;
    case "remove_fields":
      checkRemoveFields(args, argsPath, issues);
      break;
    case "strip_attachments_if":
      checkStripConditions(args, argsPath, issues);
      break;
    default:
      issues.push({
        path: pointer(path, "name"),
        message: `unknown step "${name}"; known steps: ${STEP_NAMES.join(", ")}`,
      });
  }
  return name;
}

function rejectKeys(
  args: Record<string, unknown>,
  allowed: readonly string[],
  path: string,
  issues: Issues,
): void {
  for (const key of Object.keys(args)) {
    if (!allowed.includes(key))
      issues.push({ path: pointer(path, key), message: `unknown argument "${key}"` });
  }
}

function checkMapperConfig(args: unknown, path: string, opts: ValidatePipelineOptions, issues: Issues): void {
  const result = opts.validateMapperConfig?.(args);
  if (result === undefined || result.ok) return;
  for (const e of result.errors) {
    const rel = e.path === "" || e.path === "/" ? "" : e.path.startsWith("/") ? e.path : `/${e.path}`;
    issues.push({ path: path + rel, message: e.message, ...(e.code ? { code: e.code } : {}) });
  }
}

/** A non-empty array of strings each passing `check`; returns false when the shape is wrong. */
function checkStringList(
  value: unknown,
  path: string,
  check: (s: string) => string | null,
  issues: Issues,
): void {
  if (!Array.isArray(value) || value.length === 0 || value.length > PIPELINE_LIMITS.maxListLength) {
    issues.push({ path, message: `must be an array of 1 to ${PIPELINE_LIMITS.maxListLength} strings` });
    return;
  }
  value.forEach((item, i) => {
    const problem =
      typeof item !== "string"
        ? "must be a string"
        : item.length > PIPELINE_LIMITS.maxStringLength
          ? `must be at most ${PIPELINE_LIMITS.maxStringLength} characters`
          : check(item);
    if (problem !== null) issues.push({ path: pointer(path, i), message: problem });
  });
}

function checkRemoveFields(args: Record<string, unknown>, path: string, issues: Issues): void {
  rejectKeys(args, ["paths"], path, issues);
  if (args.paths === undefined) {
    issues.push({
      path: pointer(path, "paths"),
      message: `required: fields to remove (${REMOVABLE_FIELD_PATHS.join(", ")})`,
    });
    return;
  }
  checkStringList(args.paths, pointer(path, "paths"), removableFieldError, issues);
}

function checkStripConditions(args: Record<string, unknown>, path: string, issues: Issues): void {
  rejectKeys(args, STRIP_CONDITION_KEYS, path, issues);
  const given = STRIP_CONDITION_KEYS.filter((k) => args[k] !== undefined);
  if (given.length === 0) {
    issues.push({ path, message: `needs at least one condition: ${STRIP_CONDITION_KEYS.join(", ")}` });
    return;
  }
  if (args.mime_in !== undefined)
    checkStringList(args.mime_in, pointer(path, "mime_in"), mimeGlobError, issues);
  if (args.filename_glob !== undefined) {
    checkStringList(
      args.filename_glob,
      pointer(path, "filename_glob"),
      (s) => (s === "" ? "must not be empty" : null),
      issues,
    );
  }
  if (args.filename_regex !== undefined) {
    const at = pointer(path, "filename_regex");
    if (typeof args.filename_regex !== "string" || args.filename_regex === "") {
      issues.push({ path: at, message: "must be a non-empty RE2 pattern string" });
    } else {
      const err = regexError(`(?i)${args.filename_regex}`);
      if (err !== null) issues.push({ path: at, message: `invalid RE2 regular expression: ${err}` });
    }
  }
  for (const key of ["min_size_bytes", "max_size_bytes"] as const) {
    const v = args[key];
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= 0)) {
      issues.push({ path: pointer(path, key), message: "must be a non-negative integer (bytes)" });
    }
  }
  const { min_size_bytes: min, max_size_bytes: max } = args;
  if (typeof min === "number" && typeof max === "number" && min > max) {
    issues.push({ path: pointer(path, "min_size_bytes"), message: "must not exceed max_size_bytes" });
  }
  if (args.is_inline !== undefined && typeof args.is_inline !== "boolean") {
    issues.push({ path: pointer(path, "is_inline"), message: "must be a boolean" });
  }
}
