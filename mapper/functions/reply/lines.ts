/**
 * A body as the segmenter reads it: one entry per line, with its quote depth and, for text, where it
 * sits in the original string (so the new content is returned exactly as written).
 */
import type { Vendor } from "./markers.ts";

/** A point where an HTML body's markup says quoted history begins (a Gmail quote, Outlook's divider, …). */
export interface Boundary {
  detector: string;
  vendor: Vendor | null;
}

export interface Line {
  /** the line without its quote prefix (`> > `) and without a trailing CR */
  text: string;
  /** the number of `>` quote levels, or of enclosing `<blockquote>`s */
  depth: number;
  /** offsets of the whole line (prefix included) in the source text; -1 for lines derived from HTML */
  start: number;
  end: number;
  /** set on the first line of a quote container recognised in HTML markup */
  boundary: Boundary | null;
  /** set on the first line of a signature recognised in HTML markup (Gmail's `gmail_signature`) */
  signature: boolean;
}

/**
 * Lines a body is split into at most. Real mail has a few thousand; a body of a million empty lines
 * would cost a million line records for nothing.
 */
export const MAX_LINES = 100_000;

const GT = 0x3e;
const SPACE = 0x20;
const TAB = 0x09;

/**
 * The lines of a plain-text body with their `>` depth (RFC 3676 §4.5 quoting, and the `> > ` form with
 * spaces between the marks). One pass over the text: the prefix of each line is scanned once.
 */
export function textLines(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  const n = text.length;
  while (start <= n) {
    let end = text.indexOf("\n", start);
    // Past MAX_LINES the rest of the body is one last line: never a marker (too long), kept whole.
    if (end < 0 || lines.length === MAX_LINES - 1) end = n;
    let contentEnd = end;
    if (contentEnd > start && text.charCodeAt(contentEnd - 1) === 0x0d) contentEnd--;
    let p = start;
    let depth = 0;
    let afterMark = start;
    // Up to three leading spaces before the first mark; between marks, single spaces.
    while (p < contentEnd && p - start < 3 && text.charCodeAt(p) === SPACE) p++;
    while (p < contentEnd && text.charCodeAt(p) === GT) {
      depth++;
      p++;
      afterMark = p;
      while (p < contentEnd && (text.charCodeAt(p) === SPACE || text.charCodeAt(p) === TAB)) {
        p++;
        if (p < contentEnd && text.charCodeAt(p) === GT) break;
      }
    }
    // One space after the last mark belongs to the prefix; more is the quoted text's own indent.
    const from = depth === 0 ? start : text.charCodeAt(afterMark) === SPACE ? afterMark + 1 : afterMark;
    lines.push({
      text: text.slice(Math.min(from, contentEnd), contentEnd),
      depth,
      start,
      end: contentEnd,
      boundary: null,
      signature: false,
    });
    if (end === n) break;
    start = end + 1;
  }
  return lines;
}
