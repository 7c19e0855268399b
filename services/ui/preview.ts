/**
 * The playground's preview: the same run as `POST /v1/mapper/preview` (`previewMapper` in
 * resources/mapper-preview.ts), on a stored or pasted message, with every failure reported as
 * `{stage, errors: [{path, message, code?}]}` so the page can show it next to the config. Paths are
 * JSON Pointers into the config, or name the message field at fault.
 */
import type { AppContext } from "../context.ts";
import { parseJsonText } from "../lib/json-text.ts";
import { type PreviewSeen, type PreviewSource, previewMapper } from "../resources/mapper-preview.ts";
import { mapperConfigWarnings } from "../resources/mapper-warnings.ts";

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

/**
 * The answer: the mapper output, or where it failed; with the config's near-miss warnings (literal
 * objects whose key is a typo of an operator or helper name) whenever the config parsed.
 */
export type PreviewResult =
  | { ok: true; output: unknown; seen: PreviewSeen; warnings: PreviewIssue[] }
  | {
      ok: false;
      stage: "json" | "config" | "message" | "runtime";
      errors: PreviewIssue[];
      warnings: PreviewIssue[];
    };

/** Largest pasted raw message the playground parses. */
export const MAX_PASTED_BYTES = 5 * 1024 * 1024;

/** The message the page asked for: a non-blank paste, else a stored message, else the empty one. */
function previewSource(req: PreviewRequest): PreviewSource {
  if (req.message_raw?.trim()) return { kind: "raw", text: req.message_raw, maxBytes: MAX_PASTED_BYTES };
  if (req.message_id) return { kind: "stored", id: req.message_id };
  return { kind: "inline", fields: { message_id: "<playground@mailhook.invalid>" } };
}

/** Where a message problem is shown, and how it reads. */
const MESSAGE_PROBLEMS = {
  not_found: () => ({ path: "/message_id", message: "no such stored message in this project" }),
  // The page picks messages by their own id, so this is only reached by a Message-ID typed in.
  ambiguous: (detail: string) => ({ path: "/message_id", message: `${detail}: pick one from the list` }),
  unparseable: (detail: string) => ({
    path: "/message_raw",
    message: `the pasted message could not be parsed: ${detail}`,
  }),
  too_large: () => ({ path: "/message_raw", message: "the pasted message is over 5 MiB" }),
} as const;

/** Runs one preview for the signed-in project. */
export async function runPreview(
  ctx: AppContext,
  projectId: string,
  req: PreviewRequest,
): Promise<PreviewResult> {
  const parsed = parseJsonText(req.config);
  if (!parsed.ok) {
    return {
      ok: false,
      stage: "json",
      errors: [{ path: "/", message: `not valid JSON: ${parsed.message}` }],
      warnings: [],
    };
  }
  const config = parsed.value;
  const warnings = mapperConfigWarnings(config);
  const result = await previewMapper(ctx, projectId, { config, source: previewSource(req) });
  if (result.ok) return { ok: true, output: result.output, seen: result.seen, warnings };
  switch (result.stage) {
    case "config":
      return { ok: false, stage: "config", errors: result.issues, warnings };
    case "message":
      return {
        ok: false,
        stage: "message",
        errors: [MESSAGE_PROBLEMS[result.problem](result.detail)],
        warnings,
      };
    case "runtime": {
      const err = result.error;
      const located = err.details.map((d) => ({ path: d.path, message: d.message, code: err.code }));
      return {
        ok: false,
        stage: "runtime",
        errors: located.length ? located : [{ path: "/", message: err.message, code: err.code }],
        warnings,
      };
    }
  }
}
