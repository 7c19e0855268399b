/**
 * The mapper preview, once for the API's `POST /v1/mapper/preview` and the dashboard's playground: pick
 * the message (inline, pasted raw, or stored), then check and run the config with the custom mapper
 * step itself (routing/steps/custom-json.ts) — its validator, and its `build`, which builds the
 * evaluation root exactly as delivery does. Each caller words the outcome its own way (HTTP errors, or
 * located issues for the page).
 *
 * Order of checks, which both callers rely on: the config first, then the message, then the run.
 */
import { MapperRuntimeError, validateMapperConfig } from "../../mapper/index.ts";
import type { MapperInput, MessageUnderstanding } from "../../mapper/types.ts";
import type { AppContext } from "../context.ts";
import { newUuid } from "../lib/ids.ts";
import type { NormalizedMessage } from "../lib/message.ts";
import { understandingOf } from "../lib/understanding.ts";
import { MessageParseError, parseMessage } from "../mail/parse.ts";
import type { ValidationIssue } from "../routing/issues.ts";
import {
  customJsonStep,
  type MapperEnvelope,
  mapperEnvelope,
  mapperInput,
} from "../routing/steps/custom-json.ts";
import type { MapInput } from "../routing/steps/index.ts";
import { findStoredMessage, type PreviewMessage } from "./stored-messages.ts";

export type { PreviewMessage } from "./stored-messages.ts";

/** Where the preview's message comes from. */
export type PreviewSource =
  /** model fields over the empty message */
  | { kind: "inline"; fields: Record<string, unknown> }
  /** pasted RFC 5322 text; `maxBytes` is the caller's limit on it, if any */
  | { kind: "raw"; text: string; maxBytes?: number }
  /** the project's stored message with this Message-ID (angle brackets optional) or `msg_…` id */
  | { kind: "message_id"; messageId: string }
  /** the project's stored message with this primary key */
  | { kind: "stored"; id: string };

/** One preview: a custom mapper config, the message, and `meta` keys over the pipeline's. */
export interface PreviewRequest {
  config: unknown;
  source: PreviewSource;
  meta?: Record<string, unknown>;
}

/** What a preview came to. Config issue paths are JSON Pointers into the config (`""` is its root). */
export type PreviewResult =
  | { ok: true; output: unknown; seen: PreviewSeen }
  | { ok: false; stage: "config"; issues: ValidationIssue[] }
  | ({ ok: false; stage: "message" } & MessageProblem)
  | { ok: false; stage: "runtime"; error: MapperRuntimeError };

/** What the run saw beyond the parse: the message's understanding fields and `ctx.envelope`. */
export interface PreviewSeen {
  mail: MessageUnderstanding;
  envelope: MapperEnvelope | null;
}

/**
 * Checks `req.config`, picks the message and runs the config on it as delivery would, with no event or
 * route yet. A failure of the mapper pool itself (not the config's fault) is thrown.
 */
export async function previewMapper(
  ctx: AppContext,
  projectId: string,
  req: PreviewRequest,
): Promise<PreviewResult> {
  const issues = customJsonStep.validate(req.config, "", { validateMapperConfig });
  if (issues.length > 0) return { ok: false, stage: "config", issues };
  const picked = await pickMessage(ctx, projectId, req.source);
  if ("problem" in picked) return { ok: false, stage: "message", ...picked };
  const input = previewMapInput(ctx.clock.now().toISOString(), projectId, picked, req.meta);
  try {
    const built = await customJsonStep.build(req.config, input, { runMapper: ctx.runMapper });
    const seen = {
      mail: understandingOf(picked.message),
      envelope: input.sourceType === "smtp" ? mapperEnvelope(input.envelope) : null,
    };
    return { ok: true, output: built.value, seen };
  } catch (err) {
    if (err instanceof MapperRuntimeError) return { ok: false, stage: "runtime", error: err };
    throw err;
  }
}

/** Why no message to run on: `ambiguous` is a Message-ID shared by the stored messages `messagePks`. */
export type MessageProblem =
  | { problem: "not_found" | "unparseable" | "too_large"; detail: string }
  | { problem: "ambiguous"; detail: string; messagePks: string[] };

async function pickMessage(
  ctx: AppContext,
  projectId: string,
  source: PreviewSource,
): Promise<PreviewMessage | MessageProblem> {
  switch (source.kind) {
    case "inline":
      return { message: emptyMessage(ctx.clock.now(), source.fields), rawSize: 0, source: "api" };
    case "raw": {
      const size = Buffer.byteLength(source.text);
      if (source.maxBytes !== undefined && size > source.maxBytes)
        return { problem: "too_large", detail: `${size} bytes is over the limit of ${source.maxBytes}` };
      try {
        return await parsePastedMessage(ctx, source.text);
      } catch (err) {
        if (!(err instanceof MessageParseError)) throw err;
        return { problem: "unparseable", detail: err.message };
      }
    }
    case "message_id":
    case "stored": {
      const key = source.kind === "stored" ? { id: source.id } : { messageId: source.messageId };
      const found = await findStoredMessage(ctx, projectId, key);
      if (found === null) return { problem: "not_found", detail: "no such stored message in this project" };
      if ("ambiguous" in found) {
        const detail = "this Message-ID names several stored messages with different bytes";
        return { problem: "ambiguous", detail, messagePks: found.ambiguous };
      }
      return found;
    }
  }
}

/** The model with every field at its empty value, overlaid with `partial` (an inline preview message). */
export function emptyMessage(now: Date, partial: Record<string, unknown> = {}): NormalizedMessage {
  return {
    message_id: "<preview@mailhook.invalid>",
    message_id_is_synthetic: false,
    subject: "",
    date: null,
    received_at: `${now.toISOString().slice(0, 19)}Z`, // whole seconds, as a stored message has it
    from: [],
    to: [],
    cc: [],
    reply_to: [],
    headers: {},
    headers_multi: {},
    text: "",
    html: "",
    attachments: [],
    ...partial,
  } as NormalizedMessage;
}

/** Parses pasted RFC 5322 text into the model (throws `MessageParseError` when it cannot). */
export async function parsePastedMessage(ctx: AppContext, text: string): Promise<PreviewMessage> {
  const raw = new TextEncoder().encode(text);
  const parsed = await parseMessage(raw, {
    receivedAt: ctx.clock.now(),
    inboundDomain: ctx.config.inboundDomain,
    newUuid,
  });
  return { message: parsed.message, rawSize: raw.length, source: "api" };
}

/**
 * The evaluation root of a preview at `now` (RFC 3339) — the same root the custom mapper step builds at
 * delivery, with no event or route yet and the caller's `meta` keys over the pipeline's. The mapper REPL
 * builds its input here too.
 */
export function previewInput(
  now: string,
  projectId: string,
  picked: PreviewMessage,
  meta: Record<string, unknown> = {},
): MapperInput {
  return mapperInput(previewMapInput(now, projectId, picked, meta));
}

/** The map step's input for a preview: the picked message and its stored envelope, no event or route yet. */
function previewMapInput(
  now: string,
  projectId: string,
  picked: PreviewMessage,
  meta?: Record<string, unknown>,
): MapInput {
  return {
    message: picked.message,
    projectId,
    event: null,
    rawSizeBytes: picked.rawSize,
    sourceType: picked.source,
    envelope: picked.envelope ?? null,
    now,
    ...(meta ? { meta } : {}),
  };
}
