/** Where the signature starts at the end of the new content (the rules are in docs/parsing.md). */

import { isClosing, isSignatureDelimiter, isTagline } from "./closings.ts";
import { isBlank, short } from "./headers.ts";
import type { Line } from "./lines.ts";

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
export function signatureStart(
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
