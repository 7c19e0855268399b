/**
 * The quote and forward headers the segmenter recognises at a line: attribution lines, Outlook's header
 * blocks, forward markers and "original message" separators (the words are in markers.ts). Each test
 * looks at a bounded number of lines of bounded length.
 */
import type { Line } from "./lines.ts";
import {
  dashedAttribution,
  headerField,
  isAttribution,
  isForwardMarker,
  isOriginalMarker,
  isOutlookRule,
  MAX_MARKER_LINE,
  mayStartAttribution,
  type Vendor,
} from "./markers.ts";

/** A header found at a line: how many lines it spans and what it introduces. */
export interface Header {
  type: "attribution" | "forward" | "quoted_block";
  span: number;
  detector: string;
  vendor: Vendor | null;
  confidence: number;
}

/** The trimmed text of a line when it is short enough to be a marker, else null (never a marker). */
export function short(line: Line | undefined): string | null {
  if (line === undefined || line.text.length > MAX_MARKER_LINE * 2) return null;
  const t = line.text.trim();
  return t.length <= MAX_MARKER_LINE ? t : null;
}

export const isBlank = (line: Line) => line.text.trim() === "";

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

export function skipBlank(lines: readonly Line[], i: number, limit = 3): number {
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

/**
 * The client an English attribution line is typical of, by its date format: Gmail's
 * `On Mon, Jan 8, 2024 at 10:15 AM …`, Apple Mail's `On Jan 8, 2024, at 10:15, …`, Thunderbird's
 * `On 1/8/24 10:15 AM, …`, Yahoo's `On Monday, January 8, 2024, 10:15:00 AM GMT+1, …`.
 */
function attributionVendor(t: string): Vendor | null {
  if (/^On [A-Z][a-z]{2}, [A-Z][a-z]{2} \d{1,2}, \d{4} at \d{1,2}:\d{2}/.test(t)) return "gmail";
  if (/^On [A-Z][a-z]{2} \d{1,2}, \d{4}, at \d{1,2}:\d{2}/.test(t)) return "apple_mail";
  if (/^On \d{1,2}\/\d{1,2}\/\d{2,4},? \d{1,2}:\d{2}/.test(t)) return "thunderbird";
  if (/^On [A-Z][a-z]+day, [A-Z][a-z]+ \d{1,2}, \d{4},? \d{1,2}:\d{2}:\d{2}/.test(t)) return "yahoo";
  return null;
}

/** The quote or forward header starting at line `i`, or null. Looks at no more than ~45 lines. */
export function headerAt(lines: readonly Line[], i: number): Header | null {
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
    return { type: "attribution", span: 1, detector: "plain.attribution", vendor: "zoho", confidence: 0.9 };
  if (isAttribution(t))
    return {
      type: "attribution",
      span: 1,
      detector: "plain.attribution",
      vendor: attributionVendor(t),
      confidence: 0.95,
    };
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
          vendor: attributionVendor(joined),
          confidence: 0.9,
        };
    }
  }
  return null;
}
