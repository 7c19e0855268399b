/**
 * What the service understands about a message beyond its parse (docs/parsing.md, "What the service
 * understands"): its thread, the new content of a reply, a forwarded original, and what kind of
 * automated mail it is. Computed once per message at intake and stored with the parsed message.
 *
 *     analyzeMessage(message, parts, options?) → Promise<Understood>
 *
 * - `message`: the parsed message (`NormalizedMessage`, services/lib/message.ts): its headers, subject,
 *   sender, `text` and `html` are read, and `text_source` when the parse set it.
 * - `parts`: the decoded `message/rfc822`, `text/rfc822-headers`, delivery-status and
 *   disposition-notification parts of the raw message, in document order: `understandingParts(raw)`
 *   (parts.ts) reads them from the raw bytes, or from a MIME tree the caller already has.
 * - `options.onError(analysis, error)`: told about an analysis that failed. A failed analysis yields its
 *   empty result (`reply_text` = the trimmed text, `forwarded` null, `auto` from nothing); the others
 *   still run, and `analyzeMessage` itself never rejects.
 *
 * Everything it runs is linear in the message: the reply segmenter reads at most
 * {@link MAX_ANALYZED_CHARS} characters of a body.
 */
import { type ReplyAnalysis, segmentHtml, segmentText } from "../../../mapper/functions/reply/index.ts";
import type { MapperAuto, MessageUnderstanding, TextSource } from "../../../mapper/types.ts";
import type { NormalizedMessage } from "../../lib/message.ts";
import { classifyAuto } from "./auto.ts";
import { attachedForwarded, inlineForwarded } from "./forwarded.ts";
import { type UnderstandingPart, understandingParts } from "./parts.ts";
import { threadIdOf } from "./thread.ts";

export type { UnderstandingPart } from "./parts.ts";
export { understandingParts } from "./parts.ts";

/** The fields `analyzeMessage` computes; authentication, spam and Message-ID conflicts are known elsewhere. */
export type Understood = Omit<MessageUnderstanding, "auth" | "spam" | "message_id_conflict">;

export interface AnalyzeOptions {
  onError?: (analysis: "thread" | "reply" | "forwarded" | "auto", error: unknown) => void;
}

/** The part of a body the reply segmenter reads; beyond it a reply is taken to be the whole text. */
export const MAX_ANALYZED_CHARS = 2_000_000;

type Analyzable = Pick<NormalizedMessage, "message_id" | "subject" | "headers" | "from" | "text" | "html"> & {
  text_source?: TextSource;
};

function textSourceOf(message: Analyzable): TextSource {
  if (message.text_source) return message.text_source;
  if (message.text !== "") return "text";
  return message.html !== "" ? "html" : "none";
}

function cut(value: string): string {
  return value.length <= MAX_ANALYZED_CHARS ? value : value.slice(0, MAX_ANALYZED_CHARS);
}

/** The body's segmentation, from the text, or from the HTML when the text was derived from it. */
function segment(message: Analyzable, source: TextSource): ReplyAnalysis | null {
  const opts = { includeSignature: true };
  if (source === "text") return segmentText(cut(message.text), opts);
  if (source === "html" && message.html !== "") return segmentHtml(cut(message.html), opts);
  return null;
}

/**
 * The new content: the segmenter's, or the trimmed text when nothing is quoted, forwarded or signed.
 * Of a longer body only the part the segmenter read ({@link MAX_ANALYZED_CHARS}) is kept: a second
 * copy of a 50 MB text body in the stored message doubled what a large message costs to store and to
 * hold in memory, and no reply is that long.
 */
function replyTextOf(message: Analyzable, analysis: ReplyAnalysis | null): string {
  const found = analysis?.segments.some((s) => s.kind !== "reply_content") ?? false;
  if (!found || analysis === null) return trimmedText(message) || (analysis?.reply_content ?? "");
  return analysis.reply_content;
}

/** The text trimmed, of a text longer than {@link MAX_ANALYZED_CHARS} its part the segmenter reads. */
function trimmedText(message: Analyzable): string {
  return cut(message.text.trimStart()).trim();
}

function attempt<T>(
  name: Parameters<NonNullable<AnalyzeOptions["onError"]>>[0],
  fn: () => T,
  empty: T,
  opts: AnalyzeOptions,
): T {
  try {
    return fn();
  } catch (error) {
    opts.onError?.(name, error);
    return empty;
  }
}

/** Analyses one parsed message (see the module comment). Never rejects. */
export async function analyzeMessage(
  message: Analyzable,
  parts: readonly UnderstandingPart[] = [],
  opts: AnalyzeOptions = {},
): Promise<Understood> {
  const source = textSourceOf(message);
  const thread_id = attempt(
    "thread",
    () => threadIdOf(message.headers, message.message_id),
    message.message_id,
    opts,
  );
  const analysis = attempt("reply", () => segment(message, source), null, opts);
  const reply_text = attempt("reply", () => replyTextOf(message, analysis), trimmedText(message), opts);
  const noAuto: MapperAuto = { kind: "none", auto_submitted: null, list_id: null, dsn: null };
  const auto = attempt(
    "auto",
    () =>
      classifyAuto({
        headers: message.headers,
        subject: message.subject,
        fromEmail: message.from[0]?.email ?? null,
        parts,
      }),
    noAuto,
    opts,
  );
  // The message a bounce or a read receipt returns is not a forward.
  const report = auto.kind === "bounce" || auto.kind === "delivery_report" || auto.kind === "read_receipt";
  let forwarded = report
    ? null
    : attempt("forwarded", () => (analysis ? inlineForwarded(analysis, message.subject) : null), null, opts);
  // A message encapsulated in the body (a `message/rfc822` part without a filename, whose text the parse
  // joins to the body) is read from its part, which has all of its headers.
  const encapsulated =
    analysis?.segments.some(
      (s) => s.kind === "forwarded_header" && s.detectors.includes("plain.encapsulated_message"),
    ) ?? false;
  if ((forwarded === null || encapsulated) && !report) {
    try {
      forwarded = (await attachedForwarded(parts)) ?? forwarded;
    } catch (error) {
      opts.onError?.("forwarded", error);
    }
  }
  return { thread_id, reply_text, text_source: source, forwarded, auto };
}

/**
 * {@link analyzeMessage} of a message just parsed from `raw`, as ingest calls it: the parts are read
 * from the raw bytes only for a multipart message (a single-part one has none).
 */
export function understandRawMessage(
  message: Analyzable,
  raw: Uint8Array,
  opts: AnalyzeOptions = {},
): Promise<Understood> {
  const multipart = (message.headers["content-type"] ?? "")
    .trimStart()
    .toLowerCase()
    .startsWith("multipart/");
  let parts: UnderstandingPart[] = [];
  if (multipart) {
    try {
      parts = understandingParts(raw);
    } catch (error) {
      opts.onError?.("auto", error);
    }
  }
  return analyzeMessage(message, parts, opts);
}
