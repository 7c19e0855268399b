/**
 * The playground's preview: the same steps as `POST /v1/mapper/preview` — validate the config with
 * `validateMapperConfig`, build the mapper input from a stored or pasted message, run it through
 * `ctx.runMapper` — with every failure reported as `{stage, errors: [{path, message, code?}]}` so the
 * page can show it next to the config. Paths are JSON pointers into the config.
 */
import { MapperRuntimeError, validateMapperConfig } from "../../mapper/index.ts";
import type { AppContext } from "../context.ts";
import {
  emptyMessage,
  type PreviewMessage,
  parsePastedMessage,
  previewInput,
} from "../resources/mapper-preview.ts";
import { storedMessage } from "./data.ts";

/** What the page sends: the config as typed, and a stored message id or a pasted raw message. */
export interface PreviewRequest {
  config: string;
  message_id?: string;
  message_raw?: string;
}

/** One problem, located in the config (or in the message input). */
export interface PreviewIssue {
  path: string;
  message: string;
  code?: string;
}

/** The answer: the mapper output, or where it failed. */
export type PreviewResult =
  | { ok: true; output: unknown }
  | { ok: false; stage: "json" | "config" | "message" | "runtime"; errors: PreviewIssue[] };

/** Largest pasted raw message the playground parses. */
export const MAX_PASTED_BYTES = 5 * 1024 * 1024;

async function pickMessage(
  ctx: AppContext,
  projectId: string,
  req: PreviewRequest,
): Promise<PreviewMessage | PreviewIssue> {
  const now = ctx.clock.now();
  if (req.message_raw?.trim()) {
    if (Buffer.byteLength(req.message_raw) > MAX_PASTED_BYTES)
      return { path: "/message_raw", message: "the pasted message is over 5 MiB" };
    try {
      return await parsePastedMessage(ctx, req.message_raw);
    } catch (err) {
      return {
        path: "/message_raw",
        message: `the pasted message could not be parsed: ${(err as Error).message}`,
      };
    }
  }
  if (req.message_id) {
    const stored = await storedMessage(ctx, projectId, req.message_id);
    return stored ?? { path: "/message_id", message: "no such stored message in this project" };
  }
  return {
    message: emptyMessage(now, { message_id: "<playground@mailhook.invalid>" }),
    rawSize: 0,
    source: "api",
  };
}

/** Runs one preview for the signed-in project. */
export async function runPreview(
  ctx: AppContext,
  projectId: string,
  req: PreviewRequest,
): Promise<PreviewResult> {
  let config: unknown;
  try {
    config = JSON.parse(req.config);
  } catch (err) {
    return {
      ok: false,
      stage: "json",
      errors: [{ path: "/", message: `not valid JSON: ${(err as Error).message}` }],
    };
  }
  const valid = validateMapperConfig(config);
  if (!valid.ok) return { ok: false, stage: "config", errors: valid.errors };
  const picked = await pickMessage(ctx, projectId, req);
  if ("path" in picked) return { ok: false, stage: "message", errors: [picked] };
  const input = previewInput(ctx.clock.now().toISOString(), projectId, picked);
  try {
    return { ok: true, output: await ctx.runMapper(config, input) };
  } catch (err) {
    if (!(err instanceof MapperRuntimeError)) throw err;
    const located = err.details.map((d) => ({ path: d.path, message: d.message, code: err.code }));
    return {
      ok: false,
      stage: "runtime",
      errors: located.length ? located : [{ path: "/", message: err.message, code: err.code }],
    };
  }
}
