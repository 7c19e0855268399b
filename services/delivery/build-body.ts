/**
 * The pipeline run of one event (spec: Pipeline; contract §4): transform steps over the stored
 * message, then the final `map.*` step — `generic@1` built here, `map.custom_json` through the mapper
 * pool. The result is the exact body text that is signed and sent. It is built once per event and
 * stored in `events.body`; automatic retries reuse it, a replay clears it so it is rebuilt.
 */
import { MapperRuntimeError } from "../../mapper/index.ts";
import type { AppContext } from "../context.ts";
import type { RouteSnapshot } from "../db/schema/events.ts";
import { type DeadReason, mapperFailed, pipelineError } from "../lib/dead-reasons.ts";
import { type Envelope, type NormalizedMessage, pipelineMeta, type SourceType } from "../lib/message.ts";
import { metrics } from "../lib/metrics.ts";
import { buildGenericBody } from "../routing/generic-body.ts";
import { applyTransforms } from "../routing/pipeline.ts";

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
}

/** A built body, or why the event cannot be delivered (it becomes `dead` with that reason). */
export type BuildResult = { ok: true; body: string } | { ok: false; reason: DeadReason };

/**
 * Runs `pipeline` for `event` over `message`. Never throws for a pipeline problem: mapper runtime
 * errors become `mapper:<code>` (contract §6), anything else a `pipeline_error: …` the user can act on.
 */
export async function buildEventBody(
  ctx: AppContext,
  event: BodyEvent,
  pipeline: RouteSnapshot["pipeline"],
  message: StoredMessage,
): Promise<BuildResult> {
  const steps = pipeline.steps;
  const map = steps.at(-1);
  try {
    const transformed = applyTransforms(steps, message.parsed);
    if (map?.name === "map.generic_json") {
      const body = buildGenericBody({
        event: {
          id: event.id,
          project_id: event.projectId,
          route_id: event.routeId,
          created_at: event.createdAt,
        },
        message: transformed,
        rawSizeBytes: message.rawSizeBytes,
        sourceType: message.sourceType,
        ...(message.envelope ? { envelope: message.envelope } : {}),
      });
      return { ok: true, body: JSON.stringify(body) };
    }
    if (map?.name === "map.custom_json") {
      return await runCustomMapper(ctx, event, map.args, transformed, message);
    }
    return { ok: false, reason: pipelineError("the pipeline has no final map.* step") };
  } catch (err) {
    return { ok: false, reason: pipelineError(err instanceof Error ? err.message : String(err)) };
  }
}

async function runCustomMapper(
  ctx: AppContext,
  event: BodyEvent,
  config: Record<string, unknown>,
  transformed: NormalizedMessage,
  message: StoredMessage,
): Promise<BuildResult> {
  let output: unknown;
  try {
    output = await ctx.runMapper(config, {
      message: transformed,
      ctx: {
        event_id: event.id,
        project_id: event.projectId,
        route_id: event.routeId,
        source_type: message.sourceType,
        raw_size_bytes: message.rawSizeBytes,
        now: new Date(ctx.clock.now()).toISOString(),
      },
      meta: pipelineMeta(message.sourceType, message.rawSizeBytes, transformed.received_at),
    });
  } catch (err) {
    if (err instanceof MapperRuntimeError) {
      metrics.mapperErrors.inc({ stage: "delivery", code: err.code });
      // The event keeps `mapper:<code>` (contract); where it stopped is for the operator's log.
      ctx.logger.warn("mapper failed at delivery; the event is dead until the route is fixed and replayed", {
        event_id: event.id,
        route_id: event.routeId,
        code: err.code,
        path: err.path,
        nodes: err.nodes,
        error: err.message,
      });
      return { ok: false, reason: mapperFailed(err.code) };
    }
    // Errors crossing a worker boundary may lose their class but keep a string code.
    const code = typeof err === "object" && err !== null ? (err as { code?: unknown }).code : undefined;
    if (typeof code === "string" && code.startsWith("mapper.")) {
      metrics.mapperErrors.inc({ stage: "delivery", code });
      return { ok: false, reason: mapperFailed(code) };
    }
    metrics.mapperErrors.inc({ stage: "delivery", code: "mapper.unavailable" });
    const detail = err instanceof Error ? err.message : String(err);
    return { ok: false, reason: mapperFailed("mapper.unavailable", detail) };
  }
  // JSON.stringify(undefined) is undefined; the mapper's output schema allows null, so send that.
  return { ok: true, body: JSON.stringify(output ?? null) };
}
