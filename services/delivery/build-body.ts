/**
 * The pipeline run of one event (docs/routing.md § Pipelines): the transform steps over the stored
 * message, then the final `map.*` step, looked up in the step registry (the custom mapper step runs in
 * the mapper pool). The result is the exact body text that is signed and sent. It is built once per
 * event and stored in `events.body`; automatic retries reuse it, a replay clears it so it is rebuilt.
 */
import { and, eq } from "drizzle-orm";
import { MapperRuntimeError } from "../../mapper/index.ts";
import type { AppContext } from "../context.ts";
import { attachments, messages } from "../db/schema/index.ts";
import type { PolicyNote } from "../lib/attachment-policy.ts";
import { type DeadReason, mapperFailed, pipelineError } from "../lib/dead-reasons.ts";
import { jsonBytes, LARGE_STRING_CHARS } from "../lib/json-bytes.ts";
import type { Envelope, NormalizedMessage, SourceType } from "../lib/message.ts";
import { metrics } from "../lib/metrics.ts";
import type { Pipeline } from "../lib/pipeline.ts";
import { isNotedAttachment } from "../mail/policy.ts";
import { applyTransforms } from "../routing/pipeline.ts";
import {
  type MapDeps,
  type MapOutput,
  MapperUnavailableError,
  mapStepNamed,
} from "../routing/steps/index.ts";

/** The stored message as the pipeline needs it. */
export interface StoredMessage {
  /** the message's primary key: with it a map step can read the raw message and attachment bytes */
  id?: string;
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

/**
 * How a body is kept in `events.body` (text): JSON as itself; bytes (a raw `message/rfc822`) as base64,
 * marked by `events.body_encoding = 'base64'`.
 */
export type BodyEncoding = "utf8" | "base64";

/** A built body as stored: its text, its media type and how the text holds it. */
export interface StoredBody {
  body: string;
  contentType: string;
  encoding: BodyEncoding;
}

/**
 * A built body; a JSON body that carries a very large string (a message body of 1 MiB characters or
 * more) comes as its UTF-8 `bytes` only (lib/json-bytes.ts), `body` then empty: its text is never built.
 */
export type BuiltBody = StoredBody & { bytes?: Uint8Array };

/** A built body, or why the event cannot be delivered (it becomes `dead` with that reason). */
export type BuildResult = ({ ok: true } & BuiltBody) | { ok: false; reason: DeadReason };

/** Text bodies from this length on are encoded to bytes once, not by each of their consumers. */
const ENCODE_ONCE_CHARS = 1024 * 1024;

/**
 * The bytes (or text) that go on the wire for a stored body: exactly what is signed and sent. A large
 * text body is sent as its UTF-8 bytes: the two signatures and the request would each encode a string
 * again (three copies of a 50 MB body at once instead of one).
 */
export function wireBody(body: string, encoding: BodyEncoding | null): string | Uint8Array {
  if (encoding === "base64") return view(Buffer.from(body, "base64"));
  return body.length >= ENCODE_ONCE_CHARS ? view(Buffer.from(body, "utf8")) : body;
}

/** A plain Uint8Array over a Buffer's bytes (no copy). */
function view(buffer: Buffer): Uint8Array {
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

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
    const transformed = applyTransforms(pipeline.steps, withoutStripped(message.parsed, event.policyNotes), {
      routeId: event.routeId,
      projectId: event.projectId,
      sourceType: message.sourceType,
      rawSizeBytes: message.rawSizeBytes,
    });
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
      { runMapper: ctx.runMapper, ...storedReaders(ctx, message.id) },
    );
    const parsed = message.parsed;
    return encode(
      output,
      parsed.text.length >= LARGE_STRING_CHARS || parsed.html.length >= LARGE_STRING_CHARS,
    );
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
  const kept = message.attachments.filter((a) => !stripped.some((id) => isNotedAttachment(a.id, id)));
  return { ...message, attachments: kept };
}

/** The body as stored: JSON text as itself, bytes as base64 (see {@link BodyEncoding}). */
function encode(output: MapOutput, large: boolean): BuildResult {
  if (output.kind === "json" && large) {
    const bytes = jsonBytes(output.value ?? null) ?? new TextEncoder().encode("null");
    return { ok: true, body: "", bytes, contentType: output.contentType, encoding: "utf8" };
  }
  if (output.kind === "json") {
    // JSON.stringify(undefined) is undefined; the mapper's output schema allows null, so send that.
    const body = JSON.stringify(output.value ?? null);
    return { ok: true, body, contentType: output.contentType, encoding: "utf8" };
  }
  const body = Buffer.from(output.bytes.buffer, output.bytes.byteOffset, output.bytes.byteLength).toString(
    "base64",
  );
  return { ok: true, body, contentType: output.contentType, encoding: "base64" };
}

/** Reads a whole blob. */
async function readBlob(ctx: AppContext, key: string): Promise<Uint8Array> {
  return new Uint8Array(await new Response(await ctx.blobs.read(key)).arrayBuffer());
}

/** Readers of the stored message's raw bytes and attachment bytes, for the map steps that send them. */
function storedReaders(
  ctx: AppContext,
  messagePk: string | undefined,
): Pick<MapDeps, "readRaw" | "readAttachment"> {
  if (messagePk === undefined) return {};
  return {
    async readRaw() {
      const [row] = await ctx.database.db
        .select({ key: messages.rawBlobKey, bytes: messages.rawBytes })
        .from(messages)
        .where(eq(messages.id, messagePk))
        .limit(1);
      if (!row) throw new Error("the message was deleted");
      if (row.bytes !== null) return new Uint8Array(row.bytes);
      return readBlob(ctx, row.key as string);
    },
    async readAttachment(id) {
      const [row] = await ctx.database.db
        .select({ key: attachments.blobKey })
        .from(attachments)
        .where(and(eq(attachments.messagePk, messagePk), eq(attachments.attachmentId, id)))
        .limit(1);
      if (!row) throw new Error(`attachment ${id} of the message is not stored`);
      return readBlob(ctx, row.key);
    },
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
