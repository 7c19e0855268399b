/**
 * The pipeline run of one event (docs/routing.md § Pipelines): the transform steps over the stored
 * message, then the final `map.*` step, looked up in the step registry (the custom mapper step runs in
 * the mapper pool). The result is the exact body text that is signed and sent. It is built once per
 * event and stored in `events.body`; automatic retries reuse it, a replay clears it so it is rebuilt.
 */
import { MapperRuntimeError } from "../../mapper/index.ts";
import type { AppContext } from "../context.ts";
import type { PolicyNote } from "../lib/attachment-policy.ts";
import { type DeadReason, mapperFailed, pipelineError } from "../lib/dead-reasons.ts";
import type { Envelope, NormalizedMessage, SourceType } from "../lib/message.ts";
import { metrics } from "../lib/metrics.ts";
import type { Pipeline } from "../lib/pipeline.ts";
import { isNotedAttachment } from "../mail/policy.ts";
import { applyTransforms } from "../routing/pipeline.ts";
import { type MapOutput, MapperUnavailableError, mapStepNamed } from "../routing/steps/index.ts";

/** The stored message as the pipeline needs it. */
export interface StoredMessage {
  parsed: NormalizedMessage;
  rawSizeBytes: number;
  sourceType: SourceType;
  envelope: Envelope | null;
}

/** The event the body is built for. */
export interface BodyEvent {
  id: string;
  projectId: string;
  routeId: string;
  createdAt: Date;
  /** attachments the route's policy noted at intake; those noted `strip` are left out of the body */
  policyNotes?: readonly PolicyNote[] | null;
}

/** A built body and its media type, or why the event cannot be delivered (it becomes `dead` with that reason). */
export type BuildResult = { ok: true; body: string; contentType: string } | { ok: false; reason: DeadReason };

/**
 * Runs `pipeline` for `event` over `message`. Never throws for a pipeline problem: mapper runtime
 * errors become `mapper:<code>` (docs/mapper.md), anything else a `pipeline_error: …` the user can act on.
 */
export async function buildEventBody(
  ctx: AppContext,
  event: BodyEvent,
  pipeline: Pipeline,
  message: StoredMessage,
): Promise<BuildResult> {
  const last = pipeline.steps.at(-1);
  try {
    const transformed = applyTransforms(pipeline.steps, withoutStripped(message.parsed, event.policyNotes));
    const map = last === undefined ? undefined : mapStepNamed(last.name);
    if (last === undefined || map === undefined) {
      return { ok: false, reason: pipelineError("the pipeline has no final map.* step") };
    }
    const output = await map.build(
      last.args,
      {
        message: transformed,
        projectId: event.projectId,
        event: { id: event.id, routeId: event.routeId, createdAt: event.createdAt },
        rawSizeBytes: message.rawSizeBytes,
        sourceType: message.sourceType,
        envelope: message.envelope,
        now: ctx.clock.now().toISOString(),
      },
      { runMapper: ctx.runMapper },
    );
    return encode(output);
  } catch (err) {
    return { ok: false, reason: deadReason(ctx, event, err) };
  }
}

/** The message without the attachments the route's attachment policy stripped (docs/routing.md). */
export function withoutStripped(
  message: NormalizedMessage,
  notes: readonly PolicyNote[] | null | undefined,
): NormalizedMessage {
  const stripped = (notes ?? []).filter((n) => n.action === "strip").map((n) => n.attachment_id);
  if (stripped.length === 0) return message;
  const attachments = message.attachments.filter((a) => !stripped.some((id) => isNotedAttachment(a.id, id)));
  return { ...message, attachments };
}

/** The text delivery signs, stores and sends. */
function encode(output: MapOutput): BuildResult {
  if (output.kind === "json") {
    // JSON.stringify(undefined) is undefined; the mapper's output schema allows null, so send that.
    return { ok: true, body: JSON.stringify(output.value ?? null), contentType: output.contentType };
  }
  // `events.body` is text and the signature covers that text: a byte body needs a binary column first.
  return {
    ok: false,
    reason: pipelineError(`the map step built a ${output.contentType} body, which this version cannot store`),
  };
}

/** Why a build failed; mapper failures are counted and logged. */
function deadReason(ctx: AppContext, event: BodyEvent, err: unknown): DeadReason {
  if (err instanceof MapperRuntimeError) {
    metrics.mapperErrors.inc({ stage: "delivery", code: err.code });
    // The event keeps `mapper:<code>` (docs/mapper.md); where it stopped is for the operator's log.
    ctx.logger.warn("mapper failed at delivery; the event is dead until the route is fixed and replayed", {
      event_id: event.id,
      route_id: event.routeId,
      code: err.code,
      path: err.path,
      nodes: err.nodes,
      error: err.message,
    });
    return mapperFailed(err.code);
  }
  // Errors crossing a worker boundary may lose their class but keep a string code.
  const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
  if (typeof code === "string" && code.startsWith("mapper.")) {
    metrics.mapperErrors.inc({ stage: "delivery", code });
    return mapperFailed(code);
  }
  if (err instanceof MapperUnavailableError) {
    metrics.mapperErrors.inc({ stage: "delivery", code: "mapper.unavailable" });
    return mapperFailed("mapper.unavailable", err.message);
  }
  return pipelineError(err instanceof Error ? err.message : String(err));
}
