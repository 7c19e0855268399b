/**
 * Near-miss warnings of the `map.custom_json` configs in a pipeline (docs/mapper.md, "Warnings"): what
 * route create and update answers carry next to the saved route. Valid configs only produce warnings;
 * errors are the pipeline validator's business.
 */
import { Type } from "@sinclair/typebox";
import { validateMapperConfig } from "../../mapper/index.ts";
import { isPlainObject, pointer, type ValidationIssue } from "../routing/issues.ts";

/** One warning: a JSON pointer into the request body and a sentence ending in "did you mean …?". */
export const MapperWarningSchema = Type.Object({ path: Type.String(), message: Type.String() });

/** A mapper config's warnings with paths re-rooted under `base` (a problem at the root lands on `base`). */
export function mapperConfigWarnings(config: unknown, base = ""): ValidationIssue[] {
  const result = validateMapperConfig(config);
  return (result.warnings ?? []).map((w) => ({
    path: base + (w.path === "/" ? "" : w.path),
    message: w.message,
  }));
}

/** The warnings of every `map.custom_json` step of `pipeline` (`{steps: [{name, args}]}`), under `base`. */
export function pipelineMapperWarnings(pipeline: unknown, base = "/pipeline"): ValidationIssue[] {
  if (!isPlainObject(pipeline) || !Array.isArray(pipeline.steps)) return [];
  const out: ValidationIssue[] = [];
  pipeline.steps.forEach((step: unknown, i: number) => {
    if (!isPlainObject(step) || step.name !== "map.custom_json") return;
    out.push(...mapperConfigWarnings(step.args, pointer(base, "steps", i, "args")));
  });
  return out;
}
