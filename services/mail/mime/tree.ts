/**
 * The MIME structure of a raw message with the byte range of every part body (RFC 2045, 2046).
 *
 * postal-mime gives neither part positions nor byte offsets, and attachment ids must be derived from
 * the part position while attachment bytes must be exact; this walker provides both. Boundary lines
 * are recognised the way postal-mime recognises them, so both see the same parts.
 */
import { parseStructuredValue, type StructuredValue } from "./params.ts";
import { decodeTransferEncoding } from "./transfer.ts";

const LF = 0x0a;
const CR = 0x0d;
const DASH = 0x2d;
/** Deeper structures are treated as opaque leaves; real mail rarely nests beyond 10 levels. */
export const MAX_MIME_DEPTH = 64;

/** One header field: lowercase name and the unfolded value (RFC 5322 §2.2.3), not decoded. */
export interface HeaderField {
  name: string;
  value: string;
}

/** One MIME part; `path` is the IMAP section number (RFC 3501 §6.4.5): "1", "2.1", … */
export interface MimePart {
  path: string;
  headers: HeaderField[];
  contentType: StructuredValue;
  disposition: StructuredValue | null;
  /** lowercased Content-Transfer-Encoding token, "" when absent */
  transferEncoding: string;
  /** Content-ID without angle brackets, null when absent or empty */
  contentId: string | null;
  /** the bytes the body range refers to: the raw message, or a decoded encapsulated message */
  source: Uint8Array;
  /** byte range in `source` of the still-encoded body */
  bodyStart: number;
  bodyEnd: number;
  /** parts of a multipart */
  children: MimePart[];
  /** the encapsulated message of a message/rfc822 part (RFC 2046 §5.2.1) */
  message: MimePart | null;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
const latin1 = new TextDecoder("windows-1252");

/** RFC 6532 allows UTF-8 in header fields; bytes that are not UTF-8 are read as windows-1252. */
function decodeHeaderBytes(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    return latin1.decode(bytes);
  }
}

/** Unfolds a header block (RFC 5322 §2.2.3): a line starting with SP or HTAB continues the field. */
export function parseHeaderBlock(bytes: Uint8Array): HeaderField[] {
  const fields: HeaderField[] = [];
  for (const line of decodeHeaderBytes(bytes).split(/\r?\n/)) {
    const last = fields[fields.length - 1];
    if (/^[ \t]/.test(line) && last) {
      last.value += line;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    // RFC 5322 §3.6.8: a field name is printable US-ASCII except ":"; anything else is not a header.
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) continue;
    fields.push({ name, value: line.slice(colon + 1) });
  }
  for (const field of fields) field.value = field.value.replace(/\r/g, "").trim();
  return fields;
}

/** End of the line starting at `pos` (index of its LF, or `end`). */
function lineEndAt(raw: Uint8Array, pos: number, end: number): number {
  const lf = raw.indexOf(LF, pos);
  return lf < 0 || lf >= end ? end : lf;
}

/** "open", "close" or null for the line [start, end) against `--boundary` (RFC 2046 §5.1.1). */
function delimiterKind(raw: Uint8Array, start: number, end: number, boundary: Uint8Array): string | null {
  if (end - start < boundary.length + 2 || raw[start] !== DASH || raw[start + 1] !== DASH) return null;
  for (let i = 0; i < boundary.length; i++) if (raw[start + 2 + i] !== boundary[i]) return null;
  let pos = start + 2 + boundary.length;
  let kind = "open";
  if (raw[pos] === DASH && raw[pos + 1] === DASH) {
    kind = "close";
    pos += 2;
  }
  // Transport may add whitespace after the delimiter (RFC 2046 §5.1.1 `transport-padding`).
  for (; pos < end; pos++) if (raw[pos] !== 0x20 && raw[pos] !== 0x09 && raw[pos] !== CR) return null;
  return kind;
}

/** RFC 2046 §5.1.1: the line break before a delimiter belongs to the delimiter, not to the part. */
function trimBreakBefore(raw: Uint8Array, partStart: number, delimiterStart: number): number {
  let end = delimiterStart;
  if (end > partStart && raw[end - 1] === LF) end--;
  if (end > partStart && raw[end - 1] === CR) end--;
  return end;
}

/** Byte ranges of the body parts between the delimiters of `boundary` in [start, end). */
function splitMultipart(
  raw: Uint8Array,
  start: number,
  end: number,
  boundary: Uint8Array,
): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let partStart = -1;
  for (let pos = start; pos < end; ) {
    const lineEnd = lineEndAt(raw, pos, end);
    const kind = delimiterKind(raw, pos, lineEnd, boundary);
    if (kind) {
      if (partStart >= 0) ranges.push([partStart, trimBreakBefore(raw, partStart, pos)]);
      partStart = Math.min(lineEnd + 1, end);
      if (kind === "close") return ranges;
    }
    pos = lineEnd + 1;
  }
  // A missing close delimiter (truncated message): the last part runs to the end.
  if (partStart >= 0) ranges.push([partStart, end]);
  return ranges;
}

/** Where the header block of [start, end) ends and the body begins (after the first empty line). */
function findBody(raw: Uint8Array, start: number, end: number): { headerEnd: number; bodyStart: number } {
  for (let pos = start; pos < end; ) {
    const lineEnd = lineEndAt(raw, pos, end);
    const content = lineEnd > pos && raw[lineEnd - 1] === CR ? lineEnd - 1 : lineEnd;
    if (content === pos) return { headerEnd: pos, bodyStart: Math.min(lineEnd + 1, end) };
    pos = lineEnd + 1;
  }
  return { headerEnd: end, bodyStart: end };
}

function firstValue(headers: HeaderField[], name: string): string | undefined {
  return headers.find((h) => h.name === name)?.value;
}

function childPath(parent: string, index: number): string {
  return parent ? `${parent}.${index}` : String(index);
}

interface PartContext {
  path: string;
  /** path prefix for the children of a multipart at this position */
  childPrefix: string;
  depth: number;
  parentSubtype: string;
}

function parsePart(raw: Uint8Array, start: number, end: number, ctx: PartContext): MimePart {
  const { headerEnd, bodyStart } = findBody(raw, start, end);
  const headers = parseHeaderBlock(raw.subarray(start, headerEnd));
  // RFC 2046 §5.1.5: parts of a multipart/digest default to message/rfc822; else text/plain (RFC 2045 §5.2).
  const fallback = ctx.parentSubtype === "digest" ? "message/rfc822" : "text/plain";
  let contentType = parseStructuredValue(firstValue(headers, "content-type") ?? fallback);
  // RFC 2045 §5.2: a syntactically invalid Content-Type is read as text/plain.
  if (!/^[\w.+-]+\/[\w.+-]+$/.test(contentType.value)) contentType = { value: "text/plain", params: {} };
  const dispositionHeader = firstValue(headers, "content-disposition");
  const rawId = firstValue(headers, "content-id")?.replace(/^[\s<]+|[\s>]+$/g, "");
  const part: MimePart = {
    path: ctx.path,
    headers,
    contentType,
    disposition: dispositionHeader === undefined ? null : parseStructuredValue(dispositionHeader),
    transferEncoding:
      /[\w-]+/.exec(firstValue(headers, "content-transfer-encoding")?.toLowerCase() ?? "")?.[0] ?? "",
    contentId: rawId ? rawId : null,
    source: raw,
    bodyStart,
    bodyEnd: end,
    children: [],
    message: null,
  };
  if (ctx.depth >= MAX_MIME_DEPTH) return part;
  const [type, subtype = ""] = contentType.value.split("/");
  const boundary = contentType.params.boundary;
  if (type === "multipart" && boundary) {
    const ranges = splitMultipart(raw, bodyStart, end, new TextEncoder().encode(boundary));
    part.children = ranges.map(([s, e], i) =>
      parsePart(raw, s, e, {
        path: childPath(ctx.childPrefix, i + 1),
        childPrefix: childPath(ctx.childPrefix, i + 1),
        depth: ctx.depth + 1,
        parentSubtype: subtype,
      }),
    );
  } else if (contentType.value === "message/rfc822") {
    // RFC 2046 §5.2.1 forbids encoding message/rfc822, but senders do; such a body is decoded first.
    const identity = !/^(base64|quoted-printable)$/.test(part.transferEncoding);
    const inner = identity
      ? raw
      : decodeTransferEncoding(raw.subarray(bodyStart, end), part.transferEncoding);
    // RFC 3501 §6.4.5: the parts of an encapsulated message are numbered below the part itself.
    part.message = parsePart(inner, identity ? bodyStart : 0, identity ? end : inner.length, {
      path: `${ctx.path}.1`,
      childPrefix: ctx.path,
      depth: ctx.depth + 1,
      parentSubtype: "",
    });
  }
  return part;
}

/** Parses the MIME structure of a whole message. A leaf root is part "1" (RFC 3501 §6.4.5). */
export function parseMimeTree(raw: Uint8Array): MimePart {
  return parsePart(raw, 0, raw.length, { path: "1", childPrefix: "", depth: 0, parentSubtype: "" });
}
