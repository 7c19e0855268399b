/**
 * Raw RFC 5322 bytes → the normalised message model (docs/parsing.md) plus the extracted attachments,
 * in one pass over the message's structure.
 *
 * `mime/tree.ts` reads the structure and every header block once (raw UTF-8 header bytes included,
 * RFC 6532); the headers, addresses and dates come from its root, the bodies from `body.ts`, the
 * attachments from `extract.ts` and the report parts of a bounce from `delivery-status.ts`, all from
 * the same tree. RFC 2047 words are decoded by `mime/words.ts`, addresses read by `addresses.ts`.
 */

import type { NormalizedMessage, Person } from "../lib/message.ts";
import { readAddresses } from "./addresses.ts";
import { readBody } from "./body.ts";
import { type DeliveryReport, deliveryReports } from "./delivery-status.ts";
import { type ExtractionResult, extractAttachments } from "./extract.ts";
import { type HeaderField, MimeLimitError, type MimePart, parseMimeTree } from "./mime/tree.ts";
import { decodeWords } from "./mime/words.ts";
import { parseDateHeader, toRfc3339Seconds } from "./parse-date.ts";

export type { DeliveryReport } from "./delivery-status.ts";
export type { ExtractedAttachment, SkippedAttachment } from "./extract.ts";
export { parseDateHeader } from "./parse-date.ts";

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

/**
 * The normalised message, the attachments to store, the oversized ones left out, the candidate
 * total, and the report parts of a bounce or read receipt.
 */
export interface ParsedMessage extends ExtractionResult {
  message: NormalizedMessage;
  /** the delivery-status and disposition-notification parts of a bounce or read receipt */
  reports: DeliveryReport[];
}

/** Every field of one kind read as people, in order (`addresses.ts`). */
function toPeople(values: string[]): Person[] {
  return values.flatMap((value) => readAddresses(value));
}

interface HeaderMaps {
  values: Map<string, string[]>;
  headers: Record<string, string>;
  headers_multi: Record<string, string[]>;
}

/** RFC 2047 words are decoded; repeated fields are joined with ", " and listed in `headers_multi`. */
function collectHeaders(fields: HeaderField[]): HeaderMaps {
  const values = new Map<string, string[]>();
  for (const field of fields) {
    const list = values.get(field.name) ?? [];
    list.push(field.value);
    values.set(field.name, list);
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

function readTree(raw: Uint8Array): MimePart {
  try {
    return parseMimeTree(raw);
  } catch (error) {
    if (!(error instanceof MimeLimitError)) throw error;
    throw new MessageParseError(`message cannot be parsed: ${error.message}`, { cause: error });
  }
}

/**
 * Parses one raw message. Never throws for malformed content (bad charsets, broken MIME, missing
 * headers); throws {@link MessageParseError} (`ingest.unparseable`) for empty input or when the
 * structure exceeds the limits of `mime/tree.ts` (nesting depth, total header size).
 */
export async function parseMessage(raw: Uint8Array, opts: ParseOptions): Promise<ParsedMessage> {
  if (!raw.some((byte) => byte !== 0x20 && byte !== 0x09 && byte !== 0x0d && byte !== 0x0a)) {
    throw new MessageParseError("message is empty");
  }
  const root = readTree(raw);
  const { values, headers, headers_multi } = collectHeaders(root.headers);
  const first = (name: string): string | undefined => values.get(name)?.[0];
  const body = readBody(root);
  const extraction = extractAttachments(raw, root);
  const messageId = messageIdOf(first("message-id"));
  const subject = first("subject");
  const message: NormalizedMessage = {
    message_id: messageId ?? `<${opts.newUuid()}@${opts.inboundDomain}>`,
    message_id_is_synthetic: messageId === null,
    subject: subject ? decodeWords(subject) : "",
    date: parseDateHeader(first("date")),
    received_at: toRfc3339Seconds(opts.receivedAt) ?? opts.receivedAt.toISOString(),
    // RFC 5322 §3.6.2 allows one From field; a second one is ignored.
    from: toPeople(values.get("from")?.slice(0, 1) ?? []),
    to: toPeople(values.get("to") ?? []),
    cc: toPeople(values.get("cc") ?? []),
    reply_to: toPeople(values.get("reply-to") ?? []),
    headers,
    headers_multi,
    text: body.text,
    html: body.html,
    text_source: body.text_source,
    attachments: extraction.attachments.map((a) => a.descriptor),
  };
  return { message, reports: deliveryReports(root), ...extraction };
}
