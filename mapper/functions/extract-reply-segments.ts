/**
 * `call.extract.reply_segments`: the new content of a reply apart from quoted history, forwarded
 * messages and the signature, for the text and the HTML body (MailWebhook's helper of the same name:
 * its arguments, defaults and result shape). The segmentation is `functions/reply/`.
 */

import { boolArg, MAX_HELPER_INPUT_CHARS, messageField, registerFunction } from "./registry.ts";
import { type ReplyAnalysis, segmentHtml, segmentText } from "./reply/index.ts";

/** Segments kept per source unless `max_segments_per_source` asks for fewer; also its hard maximum. */
export const MAX_SEGMENTS_PER_SOURCE = 500;

type Source = "text" | "html";

export interface ReplySegmentsResult {
  text: (ReplyAnalysis & { format: "text/plain" }) | null;
  html: (ReplyAnalysis & { format: "text/html" }) | null;
}

/** A positive whole number argument capped at `max`; anything else is the default `max`. */
function cap(v: unknown, max: number): number {
  return typeof v === "number" && Number.isFinite(v) && v >= 1 ? Math.min(Math.floor(v), max) : max;
}

function cut(value: string, max: number): string {
  if (value.length <= max) return value;
  const high = value.charCodeAt(max - 1);
  return value.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max);
}

function sourcesOf(v: unknown): Set<Source> {
  if (!Array.isArray(v)) return new Set(["text", "html"]);
  return new Set(v.filter((s): s is Source => s === "text" || s === "html"));
}

/** Runs the helper; exported for tests and the REPL. A source that is absent or blank is `null`. */
export function extractReplySegments(
  args: Readonly<Record<string, unknown>>,
  root: unknown,
): ReplySegmentsResult {
  const sources = sourcesOf(args.sources);
  const maxChars = cap(args.max_input_chars_per_source, MAX_HELPER_INPUT_CHARS);
  const opts = {
    includeSignature: boolArg(args.include_signature, false),
    splitQuotedByDepth: boolArg(args.split_quoted_by_depth, false),
    minConfidence: typeof args.min_confidence === "number" ? args.min_confidence : 0,
    maxSegments: cap(args.max_segments_per_source, MAX_SEGMENTS_PER_SOURCE),
  };
  const input = (field: Source): string | null => {
    if (!sources.has(field)) return null;
    const value = typeof args[field] === "string" ? (args[field] as string) : messageField(root, field);
    return value.trim() === "" ? null : cut(value, maxChars);
  };
  const text = input("text");
  const html = input("html");
  return {
    text: text === null ? null : { format: "text/plain", ...segmentText(text, opts) },
    html: html === null ? null : { format: "text/html", ...segmentHtml(html, opts) },
  };
}

registerFunction("extract.reply_segments", {
  description:
    "Splits message.text and message.html (or given text/html) into reply content, quoted history, forwarded content and signature: {text, html} each {format, reply_content, has_quoted_content, max_depth, detected_vendors, segments: [{kind, depth, content, confidence, detectors, vendor}]} or null.",
  args: {
    text: { type: "string", description: "text to segment (default message.text)" },
    html: { type: "string", description: "HTML to segment (default message.html)" },
    sources: { type: "array", description: 'which bodies to segment (default ["text", "html"])' },
    include_signature: { type: "boolean", description: "emit signature segments (default false)" },
    split_quoted_by_depth: {
      type: "boolean",
      description: "one quoted segment per quote depth (default false)",
    },
    min_confidence: { type: "number", description: "leave out segments below this confidence (default 0)" },
    max_segments_per_source: {
      type: "number",
      description: `segments kept per source (default and maximum ${MAX_SEGMENTS_PER_SOURCE})`,
    },
    max_input_chars_per_source: {
      type: "number",
      description: `characters read per source (default and maximum ${MAX_HELPER_INPUT_CHARS})`,
    },
  },
  run: extractReplySegments,
});
