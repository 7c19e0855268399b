/**
 * Raw RFC 5322 bytes → the normalised message model (docs/routing.md) plus the extracted attachments.
 *
 * postal-mime reads the headers, addresses and the text/HTML body (charsets, RFC 2047 words,
 * format=flowed); attachments come from `extract.ts`, which works on the raw bytes so that their
 * ids follow the MIME part position and their bytes stay exact.
 */
import PostalMime, { type Address, addressParser, decodeWords, type Email } from "postal-mime";
import type { NormalizedMessage, Person } from "../lib/message.ts";
import { type ExtractionResult, extractAttachments, isAttachmentCandidate, leaves } from "./extract.ts";
import { type MimePart, parseMimeTree } from "./mime/tree.ts";

export type { ExtractedAttachment, SkippedAttachment } from "./extract.ts";

/** Thrown only for bytes that are not a message at all; every other defect is tolerated. */
export class MessageParseError extends Error {
  readonly code = "ingest.unparseable";
  override readonly name = "MessageParseError";

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** What the intake needs to parse one message; ids and time are injected (STYLE.md habit 5). */
export interface ParseOptions {
  /** when the service accepted the message; becomes `received_at` */
  receivedAt: Date;
  /** domain of synthetic Message-IDs (`INBOUND_DOMAIN`) */
  inboundDomain: string;
  newUuid: () => string;
}

/** The normalised message, the attachments to store, the oversized ones left out, and the candidate total. */
export interface ParsedMessage extends ExtractionResult {
  message: NormalizedMessage;
}

/** RFC 3339 UTC with whole seconds and `Z`, or null for an invalid date. */
function toRfc3339Seconds(date: Date): string | null {
  const time = date.getTime();
  if (Number.isNaN(time)) return null;
  const year = date.getUTCFullYear();
  if (year < 1 || year > 9999) return null;
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** RFC 5322 §3.3 date-time; comments such as `(PDT)` are dropped before parsing. */
export function parseDateHeader(value: string | undefined): string | null {
  if (!value) return null;
  const cleaned = value
    .replace(/\([^()]*\)/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (!cleaned) return null;
  return toRfc3339Seconds(new Date(cleaned));
}

/** Group members are flattened (RFC 5322 §3.4 `group`); entries without an address are dropped. */
function toPeople(values: string[]): Person[] {
  const people: Person[] = [];
  const add = (address: Address): void => {
    if ("group" in address && Array.isArray(address.group)) {
      for (const member of address.group) add(member);
      return;
    }
    const email = (address.address ?? "").trim().toLowerCase();
    if (email) people.push({ email, name: (address.name ?? "").trim() });
  };
  for (const value of values) for (const address of addressParser(value)) add(address);
  return people;
}

// RFC 5322 §3.6.8 field names; the parser also reports lines that are not headers at all.
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;

interface HeaderMaps {
  values: Map<string, string[]>;
  headers: Record<string, string>;
  headers_multi: Record<string, string[]>;
}

/** RFC 2047 words are decoded; repeated fields are joined with ", " and listed in `headers_multi`. */
function collectHeaders(email: Email): HeaderMaps {
  const values = new Map<string, string[]>();
  for (const header of email.headers) {
    if (!FIELD_NAME.test(header.key)) continue;
    const list = values.get(header.key) ?? [];
    list.push(header.value);
    values.set(header.key, list);
  }
  // Built with Object.fromEntries: a header named `__proto__` must stay an own property.
  const headers: Array<[string, string]> = [];
  const headersMulti: Array<[string, string[]]> = [];
  for (const [name, raw] of values) {
    const decoded = raw.map((v) => decodeWords(v));
    headers.push([name, decoded.join(", ")]);
    if (decoded.length > 1) headersMulti.push([name, decoded]);
  }
  return { values, headers: Object.fromEntries(headers), headers_multi: Object.fromEntries(headersMulti) };
}

/**
 * Longest Message-ID kept. A msg-id cannot be folded, so RFC 5322 §2.1.1's 998-character line limit
 * bounds it; a longer one is treated as absent (synthetic id). It would also overflow the btree row
 * of the dedupe index (Postgres: 2704 bytes), which failed the insert: 503 / SMTP 451 on every retry.
 */
const MAX_MESSAGE_ID_LENGTH = 998;

/** The Message-ID with its angle brackets (RFC 5322 §3.6.4 `msg-id`), or null when unusable. */
function messageIdOf(value: string | undefined): string | null {
  const trimmed = value?.trim() ?? "";
  const bracketed = /<[^<>\s]+>/.exec(trimmed)?.[0];
  const id = bracketed ?? (trimmed && !/\s|[<>]/.test(trimmed) ? `<${trimmed}>` : null);
  return id !== null && id.length <= MAX_MESSAGE_ID_LENGTH ? id : null;
}

/** Encoded attachment bodies at least this large are hidden from postal-mime. */
const LEAN_BODY_BYTES = 64 * 1024;
/**
 * Smaller attachment bodies from this size on are hidden too, except `message/*` parts: postal-mime
 * opens an inline encapsulated message and adds its text to the body, so hiding one would change the
 * text (from {@link LEAN_BODY_BYTES} on they have always been hidden; that stays as it was).
 */
const LEAN_SMALL_BODY_BYTES = 4 * 1024;

/**
 * The raw message with the bodies of non-text attachment parts cut out, for postal-mime: we take
 * headers, addresses and the text/HTML bodies from postal-mime but decode attachments ourselves
 * (byte-exactly, `extract.ts`), so letting postal-mime decode them too only doubled the memory a large
 * message holds while it is parsed (and a message of many small attachments cost several times its
 * size in postal-mime's per-part buffers). The MIME structure is untouched (each cut part keeps its
 * headers and an empty body). `text/*` parts are never cut: postal-mime may read one as the message body.
 */
function withoutLargeAttachmentBodies(raw: Uint8Array, root: MimePart): Uint8Array {
  const cuts: Array<[number, number]> = [];
  for (const part of leaves(root)) {
    const size = part.bodyEnd - part.bodyStart;
    if (part.source !== raw || size < LEAN_SMALL_BODY_BYTES) continue;
    const type = part.contentType.value;
    if (size < LEAN_BODY_BYTES && type.startsWith("message/")) continue;
    if (type.startsWith("text/") || !isAttachmentCandidate(part)) continue;
    cuts.push([part.bodyStart, part.bodyEnd]);
  }
  if (cuts.length === 0) return raw;
  cuts.sort((a, b) => a[0] - b[0]);
  const removed = cuts.reduce((n, [a, b]) => n + (b - a), 0);
  const lean = new Uint8Array(raw.length - removed);
  let at = 0;
  let from = 0;
  for (const [start, end] of cuts) {
    lean.set(raw.subarray(from, start), at);
    at += start - from;
    from = end;
  }
  lean.set(raw.subarray(from), at);
  return lean;
}

/**
 * The bytes as postal-mime reads them without a copy: it copies any view (`buffer.slice`) but takes an
 * `ArrayBuffer` as is, and only reads it. A view over part of a larger buffer is passed as a view.
 */
function uncopied(bytes: Uint8Array): ArrayBuffer | Uint8Array {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength;
  return whole && bytes.buffer instanceof ArrayBuffer ? bytes.buffer : bytes;
}

async function readWithPostalMime(raw: Uint8Array): Promise<Email> {
  try {
    return await PostalMime.parse(uncopied(raw));
  } catch (error) {
    // postal-mime throws only when a structural limit (nesting depth, total header size) is hit.
    throw new MessageParseError(`message cannot be parsed: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * Parses one raw message. Never throws for malformed content (bad charsets, broken MIME, missing
 * headers); throws {@link MessageParseError} (`ingest.unparseable`) for empty input or when
 * postal-mime's structural limits are exceeded.
 */
export async function parseMessage(raw: Uint8Array, opts: ParseOptions): Promise<ParsedMessage> {
  if (!raw.some((byte) => byte !== 0x20 && byte !== 0x09 && byte !== 0x0d && byte !== 0x0a)) {
    throw new MessageParseError("message is empty");
  }
  const root = parseMimeTree(raw);
  const email = await readWithPostalMime(withoutLargeAttachmentBodies(raw, root));
  const { values, headers, headers_multi } = collectHeaders(email);
  const first = (name: string): string | undefined => values.get(name)?.[0];
  const extraction = extractAttachments(raw, root);
  const messageId = messageIdOf(first("message-id"));
  const message: NormalizedMessage = {
    message_id: messageId ?? `<${opts.newUuid()}@${opts.inboundDomain}>`,
    message_id_is_synthetic: messageId === null,
    subject: email.subject ?? "",
    date: parseDateHeader(first("date")),
    received_at: toRfc3339Seconds(opts.receivedAt) ?? opts.receivedAt.toISOString(),
    // RFC 5322 §3.6.2 allows one From field; a second one is ignored as postal-mime does.
    from: toPeople(values.get("from")?.slice(0, 1) ?? []),
    to: toPeople(values.get("to") ?? []),
    cc: toPeople(values.get("cc") ?? []),
    reply_to: toPeople(values.get("reply-to") ?? []),
    headers,
    headers_multi,
    text: email.text ?? "",
    html: email.html ?? "",
    attachments: extraction.attachments.map((a) => a.descriptor),
  };
  return { message, ...extraction };
}
