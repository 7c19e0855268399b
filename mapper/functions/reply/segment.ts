/**
 * Reply segmentation: which lines of a body are the new content, which are quoted history (with their
 * depth), a forwarded message, or the signature. One forward pass tags every line, a second pass finds
 * the signature at the end of the new content, a third groups the tags into segments.
 *
 * Cost: every line is looked at a bounded number of times, and the marker patterns only ever see lines
 * of at most MAX_MARKER_LINE characters, so the work is linear in the body whatever its shape
 * (megabyte-long lines, ten thousand quote levels).
 */

import { type Header, headerAt, isBlank, short, skipBlank } from "./headers.ts";
import type { Line } from "./lines.ts";
import { isAttribution, type Vendor } from "./markers.ts";
import { signatureStart } from "./signature.ts";

export const SEGMENT_KINDS = [
  "reply_content",
  "quoted_header",
  "quoted_content",
  "forwarded_header",
  "forwarded_content",
  "signature",
] as const;
export type SegmentKind = (typeof SEGMENT_KINDS)[number];

/** One segment, in MailWebhook's `extract.reply_segments` shape. */
export interface ReplySegment {
  kind: SegmentKind;
  depth: number;
  content: string;
  confidence: number;
  detectors: string[];
  vendor: Vendor | null;
}

/** The segmentation of one body. `reply_content` is the new content, signature excluded. */
export interface ReplyAnalysis {
  reply_content: string;
  has_quoted_content: boolean;
  max_depth: number;
  detected_vendors: Vendor[];
  segments: ReplySegment[];
}

export interface SegmentOptions {
  /** emit signature segments (the signature never counts as reply content either way) */
  includeSignature?: boolean;
  /** one quoted segment per depth change instead of one per quoted run */
  splitQuotedByDepth?: boolean;
  minConfidence?: number;
  maxSegments?: number;
}

interface Tag {
  kind: SegmentKind;
  depth: number;
  detector: string;
  vendor: Vendor | null;
  confidence: number;
}

/** Where history without quote marks began: everything after it is history at `base` and deeper. */
interface History {
  kind: "quoted" | "forwarded";
  base: number;
  detector: string;
  vendor: Vendor | null;
  /** its tags by the line's own depth (one object each, see `quoted` in tagLines) */
  tags?: Tag[];
}

function historyTag(
  history: History,
  kind: "quoted_content" | "forwarded_content",
  lineDepth: number,
  confidence: number,
): Tag {
  history.tags ??= [];
  let tag = history.tags[lineDepth];
  if (tag === undefined) {
    tag = {
      kind,
      depth: history.base + lineDepth,
      detector: history.detector,
      vendor: history.vendor,
      confidence,
    };
    history.tags[lineDepth] = tag;
  }
  return tag;
}

/** Tags every line (pass 1). */
function tagLines(lines: readonly Line[]): Tag[] {
  const tags: Tag[] = new Array(lines.length);
  const reply: Tag = {
    kind: "reply_content",
    depth: 0,
    detector: "plain.leading_unquoted",
    vendor: null,
    confidence: 1,
  };
  // Once a header without quote marks is seen (Outlook, a forward), the rest is history at `base` and up.
  let history: History | null = null;
  // One tag object per depth, shared by the lines it covers: grouping compares tags by identity.
  const quoted: Tag[] = [];
  let previous: Tag = reply;
  let i = 0;
  while (i < lines.length) {
    const line = lines[i] as Line;
    if (isBlank(line) && (line.depth === 0 || history !== null)) {
      tags[i++] = previous;
      continue;
    }
    if (history?.kind === "forwarded") {
      tags[i++] = previous = historyTag(history, "forwarded_content", line.depth, 1);
      continue;
    }
    const atBoundary: boolean = line.boundary !== null && history === null;
    const header: Header | null = line.depth === 0 || atBoundary ? headerAt(lines, i) : null;
    if (header) {
      const base: number = history === null ? 1 : history.base + 1;
      const vendor: Vendor | null = header.vendor ?? line.boundary?.vendor ?? null;
      const detectors = line.boundary ? `${header.detector}+${line.boundary.detector}` : header.detector;
      const kind = header.type === "forward" ? "forwarded_header" : "quoted_header";
      const tag: Tag = {
        kind,
        depth: base + line.depth,
        detector: detectors,
        vendor,
        confidence: header.confidence,
      };
      for (let k = 0; k < header.span; k++) tags[i + k] = tag;
      previous = tag;
      const after = skipBlank(lines, i + header.span, 50);
      const nextDepth = lines[after]?.depth ?? 0;
      if (header.type === "forward") {
        history = { kind: "forwarded", base: base + line.depth, detector: header.detector, vendor };
      } else if (header.type === "attribution" && nextDepth > line.depth && history === null) {
        // "On … wrote:" above `>` lines: the marks say what is quoted; new lines may follow (inline reply).
      } else {
        history = { kind: "quoted", base: base + line.depth, detector: header.detector, vendor };
      }
      i += header.span;
      continue;
    }
    if (atBoundary && line.boundary) {
      const b = line.boundary;
      history = { kind: "quoted", base: 1, detector: b.detector, vendor: b.vendor };
    }
    if (history !== null) {
      tags[i++] = previous = historyTag(history, "quoted_content", line.depth, 0.9);
      continue;
    }
    if (line.depth > 0) {
      // "> On … wrote:" above deeper marks: a header of the older quote.
      const t = short(line);
      const deeper = (lines[i + 1]?.depth ?? 0) > line.depth;
      const isHeader = deeper && t !== null && isAttribution(t);
      if (isHeader) {
        const tag: Tag = {
          kind: "quoted_header",
          depth: line.depth + 1,
          detector: "plain.attribution",
          vendor: null,
          confidence: 0.95,
        };
        tags[i++] = previous = tag;
      } else {
        let tag = quoted[line.depth];
        if (tag === undefined) {
          tag = {
            kind: "quoted_content",
            depth: line.depth,
            detector: "plain.quote_prefix",
            vendor: null,
            confidence: 1,
          };
          quoted[line.depth] = tag;
        }
        tags[i++] = previous = tag;
      }
      continue;
    }
    tags[i++] = previous = reply;
  }
  return tags;
}

/** Segments a body given as lines; `source` is the original text when the lines were cut from it. */
export function segmentLines(
  lines: readonly Line[],
  source: string | null,
  opts: SegmentOptions = {},
): ReplyAnalysis {
  const tags = tagLines(lines);
  // Pass 2: the signature is at the end of the last run of new content.
  let lastEnd = -1;
  for (let k = tags.length - 1; k >= 0; k--) {
    if ((tags[k] as Tag).kind === "reply_content" && !isBlank(lines[k] as Line)) {
      lastEnd = k + 1;
      break;
    }
  }
  if (lastEnd > 0) {
    let runStart = lastEnd - 1;
    while (runStart > 0 && (tags[runStart - 1] as Tag).kind === "reply_content") runStart--;
    let before = false;
    for (let k = 0; k < runStart && !before; k++)
      before = (tags[k] as Tag).kind === "reply_content" && !isBlank(lines[k] as Line);
    const sig = signatureStart(lines, runStart, lastEnd, before);
    if (sig) {
      const tag: Tag = {
        kind: "signature",
        depth: 0,
        detector: sig.detector,
        vendor: null,
        confidence: sig.confidence,
      };
      for (let k = sig.at; k < lastEnd; k++) tags[k] = tag;
    }
  }
  return group(lines, tags, source, opts);
}

const lineText = (lines: readonly Line[], from: number, to: number, source: string | null): string => {
  const first = lines[from] as Line;
  const last = lines[to - 1] as Line;
  if (source !== null && first.start >= 0 && first.depth === 0 && last.depth === 0)
    return source.slice(first.start, last.end);
  let out = "";
  for (let k = from; k < to; k++) out += (k > from ? "\n" : "") + (lines[k] as Line).text;
  return out;
};

/** Pass 3: consecutive lines of one kind (and depth, when split) become one segment. */
function group(
  lines: readonly Line[],
  tags: readonly Tag[],
  source: string | null,
  opts: SegmentOptions,
): ReplyAnalysis {
  const split = opts.splitQuotedByDepth === true;
  const maxSegments = opts.maxSegments ?? Number.POSITIVE_INFINITY;
  const minConfidence = opts.minConfidence ?? 0;
  const segments: ReplySegment[] = [];
  const replyParts: string[] = [];
  const vendors = new Set<Vendor>();
  let maxDepth = 0;
  let hasQuoted = false;
  let i = 0;
  while (i < tags.length) {
    const tag = tags[i] as Tag;
    const quotedKind = tag.kind !== "reply_content" && tag.kind !== "signature";
    let j = i + 1;
    let depth = tag.depth;
    const detectors = new Set(tag.detector.split("+"));
    let confidence = tag.confidence;
    while (j < tags.length) {
      const next = tags[j] as Tag;
      if (next.kind !== tag.kind) break;
      if (quotedKind && split && next.depth !== tag.depth && !isBlank(lines[j] as Line)) break;
      if (next !== tag) {
        for (const d of next.detector.split("+")) detectors.add(d);
        confidence = Math.min(confidence, next.confidence);
        depth = Math.min(depth, next.depth);
        if (next.vendor) vendors.add(next.vendor);
      }
      j++;
    }
    if (tag.vendor) vendors.add(tag.vendor);
    for (let k = i; k < j; k++) maxDepth = Math.max(maxDepth, (tags[k] as Tag).depth);
    if (quotedKind) hasQuoted = true;
    const content = lineText(lines, i, j, source).trim();
    if (tag.kind === "reply_content" && content !== "") replyParts.push(content);
    const wanted = tag.kind !== "signature" || opts.includeSignature === true;
    if (content !== "" && wanted && confidence >= minConfidence && segments.length < maxSegments) {
      segments.push({
        kind: tag.kind,
        depth,
        content,
        confidence,
        detectors: [...detectors],
        vendor: tag.vendor,
      });
    }
    i = j;
  }
  return {
    reply_content: replyParts.join("\n\n"),
    has_quoted_content: hasQuoted,
    max_depth: maxDepth,
    detected_vendors: [...vendors],
    segments,
  };
}
