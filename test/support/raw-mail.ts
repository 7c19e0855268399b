/**
 * Raw messages (RFC 5322 bytes) for tests: `buildMail` from a small spec, `eml` from literal lines, and
 * the messages kept in `test/fixtures/emails`. Lines end in CRLF, as SMTP carries them (RFC 5321 §2.3.8).
 *
 * Invariants:
 * - `buildMail` writes one byte per character (latin1), so a spec's 8-bit content reaches the parser
 *   byte for byte; `eml` encodes its lines as UTF-8 and adds nothing (no final CRLF).
 * - Unless a spec says otherwise, every built message has a unique Message-ID, so two tests never
 *   collide on ingest's duplicate detection.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ParseOptions } from "../../services/mail/parse.ts";
import { FIXTURES_DIR } from "./paths.ts";

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Uint8Array | string;
  /** default base64 */
  encoding?: "base64" | "7bit";
  contentId?: string;
}

export interface MailSpec {
  /** null → no Message-ID header */
  messageId?: string | null;
  from?: string;
  to?: string;
  subject?: string;
  text?: string;
  attachments?: MailAttachment[];
  extraHeaders?: string[];
}

let seq = 0;

/** A unique Message-ID for a test message. */
export function uniqueMessageId(): string {
  return `<t${Date.now()}.${++seq}.${Math.random().toString(36).slice(2)}@test.example>`;
}

function base64Lines(bytes: Uint8Array): string {
  const b64 = Buffer.from(bytes).toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
  return lines.join("\r\n");
}

function latin1(s: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(s, "latin1"));
}

/** Builds a raw message from a spec: text/plain, or multipart/mixed when it has attachments. */
export function buildMail(spec: MailSpec = {}): Uint8Array<ArrayBuffer> {
  const messageId = spec.messageId === undefined ? uniqueMessageId() : spec.messageId;
  const head = [
    `From: ${spec.from ?? "Alice <alice@example.com>"}`,
    `To: ${spec.to ?? "bob@example.org"}`,
    `Subject: ${spec.subject ?? "hello"}`,
    "Date: Mon, 06 May 2024 07:08:09 +0000",
    ...(messageId === null ? [] : [`Message-ID: ${messageId}`]),
    "MIME-Version: 1.0",
    ...(spec.extraHeaders ?? []),
  ];
  const text = spec.text ?? "Hello Bob.";
  const atts = spec.attachments ?? [];
  if (atts.length === 0) {
    return latin1([...head, "Content-Type: text/plain; charset=utf-8", "", text, ""].join("\r\n"));
  }
  const boundary = `b_${Math.random().toString(36).slice(2)}`;
  const parts = [[`--${boundary}`, "Content-Type: text/plain; charset=utf-8", "", text].join("\r\n")];
  for (const a of atts) {
    const bytes = typeof a.content === "string" ? latin1(a.content) : a.content;
    const encoding = a.encoding ?? "base64";
    const body = encoding === "base64" ? base64Lines(bytes) : Buffer.from(bytes).toString("latin1");
    parts.push(
      [
        `--${boundary}`,
        `Content-Type: ${a.contentType}; name="${a.filename}"`,
        `Content-Disposition: attachment; filename="${a.filename}"`,
        `Content-Transfer-Encoding: ${encoding}`,
        ...(a.contentId ? [`Content-ID: <${a.contentId}>`] : []),
        "",
        body,
      ].join("\r\n"),
    );
  }
  const mime = [`Content-Type: multipart/mixed; boundary="${boundary}"`];
  return latin1([...head, ...mime, "", ...parts, `--${boundary}--`, ""].join("\r\n"));
}

/** A message from literal lines, joined with CRLF (UTF-8). */
export function eml(...lines: string[]): Uint8Array {
  return new TextEncoder().encode(lines.join("\r\n"));
}

/** A message from `test/fixtures/emails`. */
export function emailFixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(FIXTURES_DIR, "emails", name)));
}

/** Fixed parse options (clock, inbound domain, uuid), so parsed models compare exactly. */
export const PARSE_OPTIONS: ParseOptions = {
  receivedAt: new Date("2024-05-06T07:08:09.750Z"),
  inboundDomain: "in.localhost",
  newUuid: () => "0b6f9a9e-1c2d-4e3f-8a9b-0c1d2e3f4a5b",
};

/** Hex SHA-256 of some bytes (what the store and the parser record for attachments). */
export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** A valid 1×1 PNG, for attachments whose content must sniff as an image. */
export const TINY_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);
