/**
 * The pipeline-step registry (docs/architecture.md § Adding a pipeline step): every step this version
 * knows, registered once here from its own file. Validation (routing/pipeline.ts), the transforms
 * (`applyTransforms`), delivery's body building and the mapper preview all look steps up here; nothing
 * else knows a step by its name.
 *
 * `STEPS` is checked against `StepDefinition`, whose kinds each require their execution method, so a
 * step that validates but cannot run does not compile.
 */
import { customJsonStep } from "./custom-json.ts";
import { genericJsonStep } from "./generic-json.ts";
import { htmlToTextStep } from "./html-to-text.ts";
import { postmarkJsonStep } from "./postmark-json.ts";
import { rawMimeStep } from "./raw-mime.ts";
import { removeFieldsStep } from "./remove-fields.ts";
import { replaceValuesStep } from "./replace-values.ts";
import { slackSimpleStep } from "./slack-simple.ts";
import { stripAttachmentsIfStep } from "./strip-attachments-if.ts";
import { telegramSimpleStep } from "./telegram-simple.ts";
import type { MapStep, StepDefinition, TransformStep } from "./types.ts";

export type {
  BytesBody,
  JsonBody,
  MapDeps,
  MapInput,
  MapOutput,
  MapperConfigValidator,
  MapStep,
  RunMapper,
  StepDefinition,
  StepDeps,
  TransformContext,
  TransformStep,
} from "./types.ts";
export { MapperUnavailableError, NO_TRANSFORM_CONTEXT } from "./types.ts";

/** Every step, keyed by its name; the order is the order error messages list them in. */
export const STEPS = {
  [genericJsonStep.name]: genericJsonStep,
  [customJsonStep.name]: customJsonStep,
  [removeFieldsStep.name]: removeFieldsStep,
  [stripAttachmentsIfStep.name]: stripAttachmentsIfStep,
  [htmlToTextStep.name]: htmlToTextStep,
  [replaceValuesStep.name]: replaceValuesStep,
  [slackSimpleStep.name]: slackSimpleStep,
  [telegramSimpleStep.name]: telegramSimpleStep,
  [rawMimeStep.name]: rawMimeStep,
  [postmarkJsonStep.name]: postmarkJsonStep,
} as const satisfies Record<string, StepDefinition>;

/** A registered step name. */
export type StepName = keyof typeof STEPS;

const BY_NAME: ReadonlyMap<string, StepDefinition> = new Map(Object.entries(STEPS));

/** Step names this version knows, in registry order. */
export const STEP_NAMES = [...BY_NAME.keys()] as readonly StepName[];

/** The names of the final steps, in registry order. */
export const MAP_STEP_NAMES: readonly string[] = STEP_NAMES.filter((n) => STEPS[n].kind === "map");

/** What every map step's name, and no transform's, starts with. */
export const MAP_STEP_PREFIX = "map.";

/**
 * True when `name` is in the map steps' namespace, registered or not: an unknown `map.*` step still
 * counts as the pipeline's final step when placing steps.
 */
export function isMapStepName(name: string): boolean {
  return name.startsWith(MAP_STEP_PREFIX);
}

/** The step registered as `name`, or undefined. */
export function stepNamed(name: string): StepDefinition | undefined {
  return BY_NAME.get(name);
}

/** The transform step registered as `name`, or undefined (also for a map step). */
export function transformNamed(name: string): TransformStep | undefined {
  const step = BY_NAME.get(name);
  return step?.kind === "transform" ? step : undefined;
}

/** The map step registered as `name`, or undefined (also for a transform). */
export function mapStepNamed(name: string): MapStep | undefined {
  const step = BY_NAME.get(name);
  return step?.kind === "map" ? step : undefined;
}
