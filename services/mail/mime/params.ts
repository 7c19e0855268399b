/**
 * Structured MIME header values (`Content-Type`, `Content-Disposition`): the main token and its
 * parameters, with RFC 2231 extended and continued parameters and RFC 2047 encoded words decoded.
 *
 * Hand-written because postal-mime keeps its parameter parser internal and the strict npm parsers
 * (`content-type`, `content-disposition`) throw on the malformed values real mail carries.
 */
import { decodeWords } from "./words.ts";

/** A structured header value: `value` is the lowercased main token, params keyed by lowercase name. */
export interface StructuredValue {
  value: string;
  params: Record<string, string>;
}

interface Segment {
  index: number;
  extended: boolean;
  text: string;
}

/** Splits on `;` outside quoted strings (RFC 2045 §5.1 `quoted-string`). */
function splitOutsideQuotes(input: string): string[] {
  const out: string[] = [];
  let current = "";
  let quoted = false;
  for (let i = 0; i < input.length; i++) {
    const c = input.charAt(i);
    if (quoted && c === "\\" && i + 1 < input.length) {
      current += c + input.charAt(++i);
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (c === ";" && !quoted) {
      out.push(current);
      current = "";
      continue;
    }
    current += c;
  }
  out.push(current);
  return out;
}

/** Removes the quotes of a quoted-string and its backslash escapes; a token is returned trimmed. */
function unquote(raw: string): string {
  const value = raw.trim();
  if (!value.startsWith('"')) return value;
  let out = "";
  for (let i = 1; i < value.length; i++) {
    const c = value.charAt(i);
    if (c === "\\" && i + 1 < value.length) {
      out += value.charAt(++i);
    } else if (c === '"') {
      break;
    } else {
      out += c;
    }
  }
  return out;
}

function decoderFor(charset: string): TextDecoder {
  try {
    return new TextDecoder(charset.trim() || "utf-8");
  } catch {
    // RFC 2231 §4 leaves an unknown charset to the reader; UTF-8 is the least surprising guess.
    return new TextDecoder("utf-8");
  }
}

/** RFC 2231 §4: `%XX` octets of an extended value; other characters stand for themselves. */
function percentDecode(text: string, into: number[]): void {
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i);
    const hex = c === "%" ? text.slice(i + 1, i + 3) : "";
    if (/^[0-9a-fA-F]{2}$/.test(hex)) {
      into.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      for (const byte of new TextEncoder().encode(c)) into.push(byte);
    }
  }
}

/** Joins `name*0*`, `name*1`, … (RFC 2231 §3) and decodes `charset'lang'%XX` values (§4). */
function joinSegments(segments: Segment[]): string {
  segments.sort((a, b) => a.index - b.index);
  if (!segments.some((s) => s.extended)) return segments.map((s) => s.text).join("");
  let charset = "utf-8";
  const bytes: number[] = [];
  segments.forEach((segment, position) => {
    let text = segment.text;
    if (position === 0 && segment.extended) {
      const parts = text.split("'");
      if (parts.length >= 3) {
        charset = parts[0] || "utf-8";
        text = parts.slice(2).join("'");
      }
    }
    if (segment.extended) percentDecode(text, bytes);
    else for (const byte of new TextEncoder().encode(text)) bytes.push(byte);
  });
  return decoderFor(charset).decode(new Uint8Array(bytes));
}

/**
 * Parses `type/subtype; a=b; c*=utf-8''x` into its token and parameters. Never throws: malformed
 * parameters are skipped. A duplicated parameter keeps its first occurrence, and an RFC 2231 form
 * wins over the plain one (RFC 6266 §4.3 makes the same choice for `filename*`).
 */
export function parseStructuredValue(header: string): StructuredValue {
  const [main = "", ...rest] = splitOutsideQuotes(header);
  const plain = new Map<string, string>();
  const extended = new Map<string, Segment[]>();
  for (const part of rest) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim().toLowerCase();
    const text = unquote(part.slice(eq + 1));
    const match = /^([^*]+)\*(?:(\d+)(\*)?)?$/.exec(name);
    if (match?.[1]) {
      const isExtended = match[2] === undefined || match[3] === "*";
      const list = extended.get(match[1]) ?? [];
      if (!list.some((s) => s.index === Number(match[2] ?? 0))) {
        list.push({ index: Number(match[2] ?? 0), extended: isExtended, text });
      }
      extended.set(match[1], list);
    } else if (name && !plain.has(name)) {
      plain.set(name, text);
    }
  }
  const params = new Map<string, string>();
  for (const [name, text] of plain) params.set(name, decodeWords(text));
  for (const [name, segments] of extended) params.set(name, decodeWords(joinSegments(segments)));
  return { value: main.trim().toLowerCase(), params: Object.fromEntries(params) };
}
