/**
 * The MIME structure of a raw message with the byte range of every part body (RFC 2045, 2046).
 *
 * This is the only pass over a message's structure: attachment ids follow the part position and
 * attachment bytes must be exact (both need byte offsets, which no npm MIME parser exposes), and the
 * body text is read from the same tree (`../body.ts`).
 *
 * Invariants: never throws for malformed content; throws {@link MimeLimitError} only when the
 * structure nests deeper than {@link MAX_MIME_DEPTH} or the header blocks total more than
 * {@link MAX_HEADER_BYTES}. Work is linear in the message size for each nesting level.
 */
import { decodeWindows1252 } from "./charset.ts";
import { parseStructuredValue, type StructuredValue } from "./params.ts";
import { decodeTransferEncoding } from "./transfer.ts";

const LF = 0x0a;
const CR = 0x0d;
const DASH = 0x2d;
/** Deeper structures are refused ({@link MimeLimitError}); real mail rarely nests beyond 10 levels. */
export const MAX_MIME_DEPTH = 256;
/** Largest total of all header blocks of a message (every part's, encapsulated messages included). */
export const MAX_HEADER_BYTES = 2 * 1024 * 1024;

/** The structure exceeds {@link MAX_MIME_DEPTH} or {@link MAX_HEADER_BYTES}: not a message we read. */
export class MimeLimitError extends Error {
  override readonly name = "MimeLimitError";
}

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
  /** the encapsulated message of a message/rfc822 or message/global part (RFC 2046 §5.2.1, RFC 6532 §3.7) */
  message: MimePart | null;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * RFC 6532 allows raw UTF-8 in header fields (subjects, display names, filenames). Bytes that are
 * not UTF-8 are legacy 8-bit text, read as Windows-1252 (the superset of ISO-8859-1 that mail
 * clients actually send). The decision is made per line, so one Latin-1 header does not turn the
 * UTF-8 of every other header into mojibake.
 */
function decodeHeaderBytes(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    const lines: string[] = [];
    let start = 0;
    while (start <= bytes.length) {
      let end = bytes.indexOf(LF, start);
      if (end < 0) end = bytes.length;
      const line = bytes.subarray(start, end);
      try {
        lines.push(utf8.decode(line));
      } catch {
        lines.push(decodeWindows1252(line));
      }
      start = end + 1;
    }
    return lines.join("\n");
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

/** The body parts of a multipart: byte ranges, and how many of them come before the close delimiter. */
interface Split {
  ranges: Array<[number, number]>;
  /** ranges[0, closed) are the parts; later ones follow the close delimiter (see adoptReusedBoundary) */
  closed: number;
}

/**
 * Byte ranges of the body parts between the delimiters of `boundary` in [start, end). Candidate
 * delimiters are found with a native substring search, so a long body is scanned once per level
 * without a line-by-line loop, however long its lines are. Delimiter lines after the close
 * delimiter are recorded too, up to a second close: a nested multipart that reuses this boundary
 * needs them (see {@link adoptReusedBoundary}); every other reader ignores them.
 */
function splitMultipart(raw: Uint8Array, start: number, end: number, boundary: string): Split {
  const ranges: Array<[number, number]> = [];
  let closed = -1;
  const dashed = Buffer.from(`--${boundary}`, "utf8");
  const boundaryBytes = dashed.subarray(2);
  const range = Buffer.from(raw.buffer, raw.byteOffset + start, end - start);
  let partStart = -1;
  for (let from = 0; from < range.length; ) {
    const found = range.indexOf(dashed, from);
    if (found < 0) break;
    const at = start + found;
    const lineEnd = lineEndAt(raw, at, end);
    // A delimiter is a whole line (RFC 2046 §5.1.1): it starts the range or follows a line break.
    const kind = at === start || raw[at - 1] === LF ? delimiterKind(raw, at, lineEnd, boundaryBytes) : null;
    if (!kind) {
      from = found + 1;
      continue;
    }
    if (partStart >= 0) ranges.push([partStart, trimBreakBefore(raw, partStart, at)]);
    partStart = Math.min(lineEnd + 1, end);
    if (kind === "close") {
      if (closed >= 0) return { ranges, closed };
      closed = ranges.length;
      partStart = -1;
    }
    from = lineEnd + 1 - start;
  }
  // A missing close delimiter (truncated message): the last part runs to the end.
  if (partStart >= 0) ranges.push([partStart, end]);
  return { ranges, closed: closed >= 0 ? closed : ranges.length };
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

const VALID_TYPE = /^[\w.+-]+\/[\w.+-]+$/;
// `application-x-gzip`, `image_png`: a known top-level type whose `/` became a `-` or `_`.
const SLASH_LOST = /^(application|audio|font|image|message|model|multipart|text|video)[-_]([\w.+-]+)$/;

/**
 * The Content-Type as read: a known top-level type that lost its `/` (`application-x-gzip`) is
 * repaired; any other invalid value is `text/plain` (RFC 2045 §5.2), except for a part marked as
 * a file (disposition `attachment` or a filename), which is `application/octet-stream`: its bytes
 * are a file, and reading them as body text would both garble the body and lose the file.
 */
function readContentType(header: string, disposition: StructuredValue | null): StructuredValue {
  const parsed = parseStructuredValue(header);
  if (VALID_TYPE.test(parsed.value)) return parsed;
  const repaired = SLASH_LOST.exec(parsed.value);
  if (repaired) return { value: `${repaired[1]}/${repaired[2]}`, params: parsed.params };
  const isFile =
    disposition?.value === "attachment" || Boolean(disposition?.params.filename || parsed.params.name);
  return { value: isFile ? "application/octet-stream" : "text/plain", params: isFile ? parsed.params : {} };
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
  /** header bytes read so far in the whole message, shared by every part */
  totals: { headerBytes: number };
}

function parsePart(raw: Uint8Array, start: number, end: number, ctx: PartContext): MimePart {
  const { headerEnd, bodyStart } = findBody(raw, start, end);
  ctx.totals.headerBytes += headerEnd - start;
  if (ctx.totals.headerBytes > MAX_HEADER_BYTES) {
    throw new MimeLimitError(`header blocks total more than ${MAX_HEADER_BYTES} bytes`);
  }
  const headers = parseHeaderBlock(raw.subarray(start, headerEnd));
  // RFC 2046 §5.1.5: parts of a multipart/digest default to message/rfc822; else text/plain (RFC 2045 §5.2).
  const fallback = ctx.parentSubtype === "digest" ? "message/rfc822" : "text/plain";
  const dispositionHeader = firstValue(headers, "content-disposition");
  const disposition = dispositionHeader === undefined ? null : parseStructuredValue(dispositionHeader);
  const contentType = readContentType(firstValue(headers, "content-type") ?? fallback, disposition);
  const rawId = firstValue(headers, "content-id")?.replace(/^[\s<]+|[\s>]+$/g, "");
  const part: MimePart = {
    path: ctx.path,
    headers,
    contentType,
    disposition,
    transferEncoding:
      /[\w-]+/.exec(firstValue(headers, "content-transfer-encoding")?.toLowerCase() ?? "")?.[0] ?? "",
    contentId: rawId ? rawId : null,
    source: raw,
    bodyStart,
    bodyEnd: end,
    children: [],
    message: null,
  };
  const [type, subtype = ""] = contentType.value.split("/");
  const boundary = contentType.params.boundary;
  // RFC 6532 §3.7: message/global is message/rfc822 whose header may hold raw UTF-8.
  const encapsulated = contentType.value === "message/rfc822" || contentType.value === "message/global";
  const opens = (type === "multipart" && Boolean(boundary)) || encapsulated;
  if (opens && ctx.depth >= MAX_MIME_DEPTH) {
    throw new MimeLimitError(`MIME structure nests more than ${MAX_MIME_DEPTH} levels deep`);
  }
  // RFC 2046 §5.1.7: a multipart subtype we do not know (any but alternative, digest, related, …)
  // is read as multipart/mixed, so its parts are split and read like any other.
  if (type === "multipart" && boundary) {
    const split = splitMultipart(raw, bodyStart, end, boundary);
    const childCtx = (index: number, of: PartContext, parentSubtype: string): PartContext => ({
      ...of,
      path: childPath(of.childPrefix, index + 1),
      childPrefix: childPath(of.childPrefix, index + 1),
      depth: of.depth + 1,
      parentSubtype,
    });
    for (let i = 0; i < split.closed; i++) {
      const [s, e] = split.ranges[i] as [number, number];
      const child = parsePart(raw, s, e, childCtx(i, ctx, subtype));
      part.children.push(child);
      if (reusesBoundary(child, boundary) && i + 1 < split.closed) {
        adoptReusedBoundary(raw, part, child, split, i, (index, parent, sub) =>
          childCtx(index, parent === part ? ctx : childCtx(i, ctx, subtype), sub),
        );
        break;
      }
    }
  } else if (encapsulated) {
    // RFC 2046 §5.2.1 forbids encoding message/rfc822, but senders do; such a body is decoded first.
    const identity = !/^(base64|quoted-printable)$/.test(part.transferEncoding);
    const inner = identity
      ? raw
      : decodeTransferEncoding(raw.subarray(bodyStart, end), part.transferEncoding);
    // RFC 3501 §6.4.5: the parts of an encapsulated message are numbered below the part itself.
    part.message = parsePart(inner, identity ? bodyStart : 0, identity ? end : inner.length, {
      ...ctx,
      path: `${ctx.path}.1`,
      childPrefix: ctx.path,
      depth: ctx.depth + 1,
      parentSubtype: "",
    });
  }
  return part;
}

/** A nested multipart that declares its parent's boundary and so got no parts of its own. */
function reusesBoundary(child: MimePart, boundary: string): boolean {
  return (
    child.contentType.value.startsWith("multipart/") &&
    child.contentType.params.boundary === boundary &&
    child.children.length === 0
  );
}

/**
 * RFC 2046 §5.1.1 forbids a nested multipart to reuse its parent's boundary, but some mailers do.
 * Read as the mail clients read it: the parts after the nested multipart's header, up to the first
 * close delimiter, are its parts; the parts after that close belong to the parent again (so an
 * attachment that follows is not lost).
 */
function adoptReusedBoundary(
  raw: Uint8Array,
  parent: MimePart,
  child: MimePart,
  split: Split,
  childIndex: number,
  contextOf: (index: number, parent: MimePart, subtype: string) => PartContext,
): void {
  const childSubtype = child.contentType.value.split("/")[1] ?? "";
  const parentSubtype = parent.contentType.value.split("/")[1] ?? "";
  split.ranges.slice(childIndex + 1, split.closed).forEach(([s, e], j) => {
    child.children.push(parsePart(raw, s, e, contextOf(j, child, childSubtype)));
  });
  split.ranges.slice(split.closed).forEach(([s, e]) => {
    parent.children.push(parsePart(raw, s, e, contextOf(parent.children.length, parent, parentSubtype)));
  });
}

/**
 * Parses the MIME structure of a whole message. A leaf root is part "1" (RFC 3501 §6.4.5).
 * Throws {@link MimeLimitError} only for the structural limits; malformed content never throws.
 */
export function parseMimeTree(raw: Uint8Array): MimePart {
  return parsePart(raw, 0, raw.length, {
    path: "1",
    childPrefix: "",
    depth: 0,
    parentSubtype: "",
    totals: { headerBytes: 0 },
  });
}
