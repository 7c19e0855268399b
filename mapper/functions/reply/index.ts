/**
 * Reply segmentation of mail bodies: the new content of a reply apart from quoted history, forwarded
 * messages and the signature (docs/parsing.md, "What the service understands"). Pure and synchronous;
 * the service computes `reply_text` with it and `call.extract.reply_segments` exposes it to mappers.
 */
import { htmlLines } from "./html.ts";
import { textLines } from "./lines.ts";
import { type ReplyAnalysis, type SegmentOptions, segmentLines } from "./segment.ts";

export type { Vendor } from "./markers.ts";
export { FORWARD_SUBJECT, headerField } from "./markers.ts";
export type { ReplyAnalysis, ReplySegment, SegmentKind, SegmentOptions } from "./segment.ts";
export { SEGMENT_KINDS } from "./segment.ts";

/** Segments a plain-text body. The new content keeps the exact text of its lines. */
export function segmentText(text: string, opts: SegmentOptions = {}): ReplyAnalysis {
  return segmentLines(textLines(text), text, opts);
}

/** Segments an HTML body: quote markup first, then the text rules on the text the HTML shows. */
export function segmentHtml(html: string, opts: SegmentOptions = {}): ReplyAnalysis {
  return segmentLines(htmlLines(html), null, opts);
}

/** The new content of a plain-text body: equal to `text.trim()` when nothing is quoted or signed. */
export function replyOfText(text: string): string {
  return segmentText(text).reply_content;
}
