/**
 * What a pipeline step is (docs/routing.md § Pipelines): a name, a kind, an argument schema, a validator,
 * and the execution its kind needs — `apply` for a transform, `build` for the final `map.*` step. The
 * kinds are a discriminated union, so a step declared without the method of its kind does not compile.
 *
 * Invariants every step keeps:
 * - `validate` is authoritative and reports every problem with a JSON Pointer under `path`; `args` (the
 *   TypeBox schema) describes the same shape for publication and cannot say everything `validate` checks
 *   (RE2 syntax, `min ≤ max`).
 * - Execution runs only on args `validate` accepted, and never mutates the message it is given: one
 *   stored message feeds every matching route.
 * - A map step's name starts with `map.`; a transform's never does (pipeline.ts places steps by it).
 */
import type { Static, TSchema } from "@sinclair/typebox";
import type { Envelope, NormalizedMessage, SourceType } from "../../lib/message.ts";
import type { ValidationIssue } from "../issues.ts";

/** The mapper's own config validator (`validateMapperConfig` from mapper/index.ts), injected by the caller. */
export type MapperConfigValidator = (
  config: unknown,
) => { ok: true } | { ok: false; errors: ValidationIssue[] };

/** What validation may need from outside routing. */
export interface StepDeps {
  /** Checks the custom mapper step's args. Without it only "args is an object" is checked: the API must pass it. */
  validateMapperConfig?: MapperConfigValidator;
}

/** Runs a custom_json mapper config on an evaluation root (through the worker pool in production). */
export type RunMapper = (
  config: unknown,
  input: { message: unknown; ctx: unknown; meta?: unknown },
) => Promise<unknown>;

/** What execution of a map step may need from outside routing. */
export interface MapDeps {
  runMapper: RunMapper;
  /** The stored raw bytes of the message; absent where there is no stored message (a preview). */
  readRaw?: () => Promise<Uint8Array>;
  /** The bytes of the message's attachment `id`; absent where there is no stored message. */
  readAttachment?: (id: string) => Promise<Uint8Array>;
}

/**
 * The mapper runner failed for a reason of its own (a worker died, the pool was closed), not because of
 * the config: delivery reports it as `mapper:mapper.unavailable (<detail>)`.
 */
export class MapperUnavailableError extends Error {
  override readonly name = "MapperUnavailableError";
}

/** What a map step builds on: the transformed message and the facts of the run. */
export interface MapInput {
  /** the message after the pipeline's transform steps */
  message: NormalizedMessage;
  projectId: string;
  /** the event the body is for; null in a preview, which has no event or route yet */
  event: { id: string; routeId: string; createdAt: Date } | null;
  rawSizeBytes: number;
  sourceType: SourceType;
  /** the SMTP envelope, when the message came over SMTP */
  envelope: Envelope | null;
  /** RFC 3339 time of the run: the only clock a mapper reads (`ctx.now`) */
  now: string;
  /** extra `meta` keys over the pipeline's own (a preview's caller may give some) */
  meta?: Record<string, unknown>;
}

/** A JSON body: delivery sends `JSON.stringify(value)` with `contentType`. */
export interface JsonBody {
  kind: "json";
  contentType: string;
  value: unknown;
}

/** A body sent byte for byte (a raw `message/rfc822`, for instance). */
export interface BytesBody {
  kind: "bytes";
  contentType: string;
  bytes: Uint8Array;
}

/** What a map step builds: the delivery body before it is encoded, signed and sent. */
export type MapOutput = JsonBody | BytesBody;

interface StepCommon<S extends TSchema> {
  /** the name routes use in `pipeline.steps[].name` */
  name: string;
  /** one sentence for people: docs and the published schema */
  summary: string;
  /** the argument schema (`args` of the step), with at least one valid example in `examples` */
  args: S;
  /** Every problem of `args` (already known to be an object), with paths under `path`; empty when valid. */
  validate(args: Readonly<Record<string, unknown>>, path: string, deps: StepDeps): ValidationIssue[];
}

/**
 * The facts of the run a transform may read (`replace_values` templates read them as `ctx.*`); each is
 * null where the run has none (a preview has no route).
 */
export interface TransformContext {
  routeId: string | null;
  projectId: string | null;
  sourceType: SourceType | null;
  rawSizeBytes: number | null;
}

/** The context of a run with no facts: every `ctx.*` placeholder stays as written. */
export const NO_TRANSFORM_CONTEXT: TransformContext = {
  routeId: null,
  projectId: null,
  sourceType: null,
  rawSizeBytes: null,
};

/** A step that rewrites the message before the map step sees it. */
export interface TransformStep<S extends TSchema = TSchema> extends StepCommon<S> {
  kind: "transform";
  /** Returns the message after this step; `message` itself is left unchanged. */
  apply(message: NormalizedMessage, args: Static<S>, ctx: TransformContext): NormalizedMessage;
}

/** The final step: builds the body delivery sends. */
export interface MapStep<S extends TSchema = TSchema> extends StepCommon<S> {
  kind: "map";
  name: `map.${string}`;
  /** Builds the body; throws on failure (a `MapperRuntimeError` or `MapperUnavailableError` for the mapper). */
  build(args: Static<S>, input: MapInput, deps: MapDeps): MapOutput | Promise<MapOutput>;
}

/** Any registered step. */
export type StepDefinition = TransformStep | MapStep;
