/**
 * Reply segmentation: which lines of a body are the new content, which are quoted history (with their
 * depth), a forwarded message, or the signature. One forward pass tags every line, a second pass finds
 * the signature at the end of the new content, a third groups the tags into segments.
 *
 * Cost: every line is looked at a bounded number of times, and the marker patterns only ever see lines
 * of at most MAX_MARKER_LINE characters, so the work is linear in the body whatever its shape
 * (megabyte-long lines, ten thousand quote levels).
 */
import type { Line } from "./lines.ts";
import {
  dashedAttribution,
  headerField,
  isAttribution,
  isClosing,
  isForwardMarker,
  isOriginalMarker,
  isOutlookRule,
  isSignatureDelimiter,
  isTagline,
  MAX_MARKER_LINE,
  mayStartAttribution,
  type Vendor,
} from "./markers.ts";

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

/** A header found at a line: how many lines it spans and what it introduces. */
interface Header {
  type: "attribution" | "forward" | "quoted_block";
  span: number;
  detector: string;
  vendor: Vendor | null;
  confidence: number;
}

/** The trimmed text of a line when it is short enough to be a marker, else null (never a marker). */
function short(line: Line | undefined): string | null {
  if (line === undefined || line.text.length > MAX_MARKER_LINE * 2) return null;
  const t = line.text.trim();
  return t.length <= MAX_MARKER_LINE ? t : null;
}

const isBlank = (line: Line) => line.text.trim() === "";

/** Header field lines from `i` on (a wrapped value's continuation line is allowed between two fields). */
function fieldRun(lines: readonly Line[], i: number, depth: number): { end: number; fields: Set<string> } {
  const fields = new Set<string>();
  let j = i;
  while (j < lines.length && j - i < 40) {
    const line = lines[j] as Line;
    if (line.depth !== depth) break;
    const t = short(line);
    const f = t === null ? null : headerField(t);
    if (f) {
      // A block names each field once: a repeated one is the next block (or prose), not this one.
      if (fields.has(f.field)) break;
      fields.add(f.field);
      j++;
      continue;
    }
    // A wrapped To:/Cc: list continues on the next line; accept it when another field follows.
    const next = short(lines[j + 1]);
    if (fields.size > 0 && t !== null && t !== "" && next !== null && headerField(next)) {
      j++;
      continue;
    }
    break;
  }
  return { end: j, fields };
}

function skipBlank(lines: readonly Line[], i: number, limit = 3): number {
  let j = i;
  while (j < lines.length && j - i < limit && isBlank(lines[j] as Line)) j++;
  return j;
}

function forwardVendor(t: string): Vendor | null {
  if (/^-{10} /.test(t)) return "gmail";
  if (/^-{8} /.test(t)) return "thunderbird";
  if (/^[^-]/.test(t) && /[:：]$/.test(t)) return "apple_mail";
  return null;
}

const DASH_RULE = /^-{10,80}$/;

function endsWithColon(line: Line | undefined): boolean {
  if (line === undefined) return false;
  const t = line.text.trimEnd();
  return t.endsWith(":") || t.endsWith("：");
}

/** The quote or forward header starting at line `i`, or null. Looks at no more than ~45 lines. */
function headerAt(lines: readonly Line[], i: number): Header | null {
  const line = lines[i] as Line;
  const t = short(line);
  if (t === null || t === "") return null;
  // Every header has a colon (a time, or its end) or starts with a rule of dashes, underscores or
  // equal signs, or is an attribution wrapped onto a line that ends with a colon: a cheap test that
  // spares the patterns almost every line of prose.
  const first = t.charCodeAt(0);
  if (
    !t.includes(":") &&
    !t.includes("：") &&
    first !== 0x2d &&
    first !== 0x5f &&
    first !== 0x3d &&
    !endsWithColon(lines[i + 1]) &&
    !endsWithColon(lines[i + 2])
  )
    return null;
  if (isForwardMarker(t)) {
    const { end } = fieldRun(lines, skipBlank(lines, i + 1), line.depth);
    return {
      type: "forward",
      span: end - i,
      detector: "plain.forward_marker",
      vendor: forwardVendor(t),
      confidence: 1,
    };
  }
  // A message encapsulated in the body, as MIME parsers render one (postal-mime): its header fields
  // between two rules of dashes.
  if (DASH_RULE.test(t)) {
    const { end, fields } = fieldRun(lines, i + 1, line.depth);
    const closing = short(lines[end]);
    if (fields.size >= 1 && closing !== null && DASH_RULE.test(closing))
      return {
        type: "forward",
        span: end + 1 - i,
        detector: "plain.encapsulated_message",
        vendor: null,
        confidence: 1,
      };
  }
  if (isOriginalMarker(t)) {
    const { end } = fieldRun(lines, skipBlank(lines, i + 1), line.depth);
    return {
      type: "quoted_block",
      span: end - i,
      detector: "plain.original_message",
      vendor: "outlook",
      confidence: 1,
    };
  }
  const ruled = isOutlookRule(t);
  const blockStart = ruled ? skipBlank(lines, i + 1) : i;
  const firstField = short(lines[blockStart]);
  if (firstField !== null && headerField(firstField)?.field === "from") {
    const { end, fields } = fieldRun(lines, blockStart, line.depth);
    if (fields.size >= 2 && (fields.has("sent") || fields.has("subject"))) {
      return {
        type: "quoted_block",
        span: end - i,
        detector: ruled ? "plain.outlook_divider" : "plain.header_block",
        vendor: "outlook",
        confidence: ruled ? 0.95 : 0.85,
      };
    }
  }
  if (ruled) return null;
  if (dashedAttribution(t) !== null)
    return { type: "attribution", span: 1, detector: "plain.attribution", vendor: null, confidence: 0.9 };
  if (isAttribution(t))
    return { type: "attribution", span: 1, detector: "plain.attribution", vendor: null, confidence: 0.95 };
  // Gmail wraps a long attribution: "On Mon, Jan 1, 2024 at 10:00 AM John Doe <\njohn@example.com> wrote:".
  if (mayStartAttribution(t)) {
    let joined = t;
    for (let k = 1; k <= 2; k++) {
      const next = lines[i + k];
      const nt = short(next);
      if (next === undefined || nt === null || nt === "" || next.depth !== line.depth) break;
      joined = `${joined} ${nt}`;
      if (joined.length > MAX_MARKER_LINE) break;
      if (isAttribution(joined))
        return {
          type: "attribution",
          span: k + 1,
          detector: "plain.attribution",
          vendor: null,
          confidence: 0.9,
        };
    }
  }
  return null;
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

/** How many non-blank lines at the end of the new content are searched for a tagline or a closing. */
const SIGNATURE_WINDOW = 16;

const GREETING =
  /^(?:hi|hello|hey|dear|good (?:morning|afternoon|evening)|hallo|moin|liebe[rs]?|sehr geehrte[rs]?|guten (?:morgen|tag)|bonjour|bonsoir|salut|cher|chère|hola|estimad[oa]s?|buenos días|ciao|salve|gentile|buongiorno|olá|ola|oi|prezad[oa]s?|bom dia|caro|cara|beste|geachte|hoi|dag)\b/i;

/** Non-blank lines after `from` up to `end`, or Infinity when one is too long for a signature. */
function tailLines(lines: readonly Line[], from: number, end: number, maxLength: number): number {
  let count = 0;
  for (let k = from; k < end; k++) {
    const line = lines[k] as Line;
    if (isBlank(line)) continue;
    if (line.text.length > maxLength) return Number.POSITIVE_INFINITY;
    count++;
  }
  return count;
}

/**
 * Where the signature starts in the last run of new content `[start, end)`, or -1 (pass 2): a `-- `
 * line, a device tagline, or a closing formula with only a few short lines (a name, a title) under it
 * and new content above it (a lone "Thanks!" is the message, not a signature; the greeting stays).
 */
function signatureStart(
  lines: readonly Line[],
  start: number,
  end: number,
  hasContentBefore: boolean,
): {
  at: number;
  detector: string;
  confidence: number;
} | null {
  // Taglines and closings sit in the last lines (at most 10 short lines follow one): only the last
  // SIGNATURE_WINDOW non-blank lines are tested for them, so a long reply costs one cheap check a line.
  let windowStart = end;
  for (let seen = 0; windowStart > start && seen < SIGNATURE_WINDOW; ) {
    windowStart--;
    if (!isBlank(lines[windowStart] as Line)) seen++;
  }
  let contentSeen = hasContentBefore;
  for (let k = start; k < end; k++) {
    const line = lines[k] as Line;
    if (line.signature) return { at: k, detector: "html.signature", confidence: 1 };
    if (isSignatureDelimiter(line.text)) return { at: k, detector: "signature.delimiter", confidence: 1 };
    if (k < windowStart && contentSeen) continue;
    const t = short(line);
    if (t === null) {
      contentSeen = true;
      continue;
    }
    if (t === "") continue;
    if (k >= windowStart) {
      if (isTagline(t) && tailLines(lines, k + 1, end, 120) <= 6)
        return { at: k, detector: "signature.device_tagline", confidence: 0.95 };
      if (contentSeen && isClosing(t) && tailLines(lines, k + 1, end, 100) <= 10)
        return { at: k, detector: "signature.closing_formula", confidence: 0.75 };
    }
    if (!GREETING.test(t)) contentSeen = true;
  }
  return null;
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
