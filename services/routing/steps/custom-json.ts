/**
 * `map.custom_json` (docs/mapper.md): the final step that POSTs what a mapper config computes from the
 * message. The config is checked by the mapper's own validator (injected, so tests may stub it) and run
 * through the injected runner — the worker pool in production, so a slow config never blocks the event
 * loop. Delivery and every preview build the mapper's evaluation root in `mapperInput`, so a config
 * previews exactly as it delivers.
 */
import { Type } from "@sinclair/typebox";
import { MapperRuntimeError } from "../../../mapper/errors.ts";
import type { MapperInput } from "../../../mapper/types.ts";
import { type Envelope, pipelineMeta } from "../../lib/message.ts";
import { withUnderstanding } from "../../lib/understanding.ts";
import type { ValidationIssue } from "../issues.ts";
import {
  type JsonBody,
  type MapInput,
  MapperUnavailableError,
  type MapStep,
  type StepDeps,
} from "./types.ts";

/**
 * The arguments: a `custom_json_mapper@1` config. This outline is what a route schema can show; the full
 * schema is served at `/v1/schemas/transform/custom_json_mapper@1`, and the mapper's validator decides.
 */
const CustomJsonArgs = Type.Object(
  {
    version: Type.Literal("v1"),
    vars: Type.Optional(Type.Array(Type.Object({ name: Type.String(), expr: Type.Unknown() }))),
    output: Type.Unknown({ description: "the expression whose value is the body" }),
    meta: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  {
    additionalProperties: false,
    description: "a custom_json_mapper@1 config",
    examples: [{ version: "v1", output: { subject: { "string.upper": { var: "message.subject" } } } }],
  },
);

/**
 * The mapper's problems with `config`, re-rooted under `path` (a problem at the config root lands on
 * `path` itself). Accepts any value, so a preview may pass the config as it was sent.
 */
export function validateMapperArgs(config: unknown, path: string, deps: StepDeps): ValidationIssue[] {
  const result = deps.validateMapperConfig?.(config);
  if (result === undefined || result.ok) return [];
  return result.errors.map((e) => {
    const rel = e.path === "" || e.path === "/" ? "" : e.path.startsWith("/") ? e.path : `/${e.path}`;
    return { path: path + rel, message: e.message, ...(e.code ? { code: e.code } : {}) };
  });
}

/** The mapper's `ctx.envelope`: what an SMTP client said, or null for a message that did not come over SMTP. */
export interface MapperEnvelope {
  mail_from: string;
  rcpt_to: string[];
  helo: string | null;
  client_ip: string | null;
  /** the `+tag` of the first recipient (`token+tag@domain` → `tag`), or null */
  tag: string | null;
}

/** The `+tag` of an address's local part, or null when it has none (or an empty one). */
export function plusTagOf(address: string): string | null {
  const at = address.lastIndexOf("@");
  const local = at < 0 ? address : address.slice(0, at);
  const plus = local.indexOf("+");
  return plus < 0 || plus === local.length - 1 ? null : local.slice(plus + 1);
}

/** `ctx.envelope` for a message with this stored envelope (null for other sources than SMTP). */
export function mapperEnvelope(envelope: Envelope | null): MapperEnvelope | null {
  if (envelope === null) return null;
  const first = envelope.rcpt_to[0];
  return {
    mail_from: envelope.mail_from,
    rcpt_to: [...envelope.rcpt_to],
    helo: envelope.helo ?? null,
    client_ip: envelope.client_ip ?? null,
    tag: first === undefined ? null : plusTagOf(first),
  };
}

/**
 * The evaluation root: the message with everything the service understands about it (absent fields
 * defaulted, lib/understanding.ts), `ctx` (event and route ids, null in a preview; the SMTP envelope or
 * null; `now`) and `meta` as `pipelineMeta` gives it, with the input's extra `meta` keys over it.
 */
export function mapperInput(input: MapInput): MapperInput {
  const { event } = input;
  const message = withUnderstanding(input.message);
  const meta = pipelineMeta(input.sourceType, input.rawSizeBytes, message.received_at);
  return {
    message,
    ctx: {
      event_id: event?.id ?? null,
      project_id: input.projectId,
      route_id: event?.routeId ?? null,
      source_type: input.sourceType,
      raw_size_bytes: input.rawSizeBytes,
      now: input.now,
      envelope: input.sourceType === "smtp" ? mapperEnvelope(input.envelope) : null,
    },
    meta: input.meta === undefined ? meta : { ...meta, ...input.meta },
  } as unknown as MapperInput;
}

/** True for the mapper's own failures; errors crossing a worker boundary may keep only the `mapper.` code. */
export function isMapperFailure(err: unknown): boolean {
  if (err instanceof MapperRuntimeError) return true;
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === "string" && code.startsWith("mapper.");
}

/** The `map.custom_json` step. */
export const customJsonStep = {
  name: "map.custom_json",
  kind: "map",
  summary: "POSTs the JSON a custom_json_mapper@1 config computes from the message.",
  args: CustomJsonArgs,
  validate: validateMapperArgs,
  // Any config value may be run: the runner checks it again (a preview passes the config as sent).
  async build(config: unknown, input, deps): Promise<JsonBody> {
    let value: unknown;
    try {
      value = await deps.runMapper(config, mapperInput(input));
    } catch (err) {
      if (isMapperFailure(err)) throw err;
      const detail = err instanceof Error ? err.message : String(err);
      throw new MapperUnavailableError(detail, { cause: err });
    }
    return { kind: "json", contentType: "application/json", value };
  },
} as const satisfies MapStep<typeof CustomJsonArgs>;
