/**
 * What the API's `POST /v1/mapper/preview` and the dashboard's playground share: the message a preview
 * runs on (empty, pasted raw, or stored) and the mapper input built around it, so both run a config
 * exactly as delivery would.
 */
import type { MapperInput } from "../../mapper/index.ts";
import type { AppContext } from "../context.ts";
import { newUuid } from "../lib/ids.ts";
import { type NormalizedMessage, pipelineMeta, type SourceType } from "../lib/message.ts";
import { parseMessage } from "../mail/parse.ts";

/** A message to preview on, with what `ctx` reports about it. */
export interface PreviewMessage {
  message: NormalizedMessage;
  rawSize: number;
  source: SourceType;
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
 * The evaluation root of a preview: the message, `ctx` as at delivery (no event or route yet) with `now`
 * (RFC 3339), and `meta` as at delivery (`pipelineMeta`: source, raw size, received at) with the caller's
 * `meta` keys over it. The mapper REPL builds its input here too.
 */
export function previewInput(
  now: string,
  projectId: string,
  picked: PreviewMessage,
  meta: Record<string, unknown> = {},
): MapperInput {
  return {
    message: picked.message,
    ctx: {
      event_id: null,
      project_id: projectId,
      route_id: null,
      source_type: picked.source,
      raw_size_bytes: picked.rawSize,
      now,
    },
    meta: { ...pipelineMeta(picked.source, picked.rawSize, picked.message.received_at), ...meta },
  } as unknown as MapperInput;
}
