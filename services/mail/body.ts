/**
 * The `text` and `html` bodies of a message, read from its MIME tree (`mime/tree.ts`).
 *
 * Which parts are body (RFC 2046 §4.1, §5.1.4, §5.2.1):
 * - `text/plain` and `text/html` parts not marked `attachment`;
 * - of a `multipart/alternative`, the text of each representation goes to the body of its own kind;
 *   a body kind the alternative lacks is converted from the other (HTML → text, text → HTML);
 * - an encapsulated message that is not itself an attachment (`message/rfc822` or `message/global`
 *   without filename or `attachment`) is opened: a header block (From, Subject, Date, To, Cc) and
 *   then its own bodies;
 * - the machine-readable part of a delivery status notification (RFC 3464) or of a read receipt
 *   (RFC 8098) joins the text body as it is written, so a bounce never reads as an empty message.
 *   In such a report the returned original is evidence, not content, and is not opened.
 *
 * `text_source` says where `text` came from: `"text"` (a text body exists), `"html"` (the message has
 * only an HTML body, and `text` is derived from it) or `"none"` (no body at all).
 */

import { htmlToPlainText } from "../../mapper/functions/html-to-text.ts";
import type { TextSource } from "../../mapper/types.ts";
import { formatAddresses } from "./addresses.ts";
import { isAttachmentCandidate } from "./extract.ts";
import { decodeCharset, decodeUtf8OrWindows1252, readsAsUtf8OrWindows1252 } from "./mime/charset.ts";
import { unwrapFlowed } from "./mime/flowed.ts";
import { foldCrlfInPlace } from "./mime/lines.ts";
import { decodeTransferEncoding } from "./mime/transfer.ts";
import type { HeaderField, MimePart } from "./mime/tree.ts";
import { decodeWords } from "./mime/words.ts";
import { parseDateHeader } from "./parse-date.ts";

/** The bodies of a message. */
export interface MessageBody {
  text: string;
  html: string;
  text_source: TextSource;
}

/** Encapsulated messages opened into the body, at most this deep (a crafted message could nest many). */
const MAX_INLINE_MESSAGE_DEPTH = 10;

/** The machine-readable report parts whose text joins the body (RFC 3464 §2, RFC 6533, RFC 8098 §3). */
export const REPORT_TYPES: ReadonlySet<string> = new Set([
  "message/delivery-status",
  "message/global-delivery-status",
  "message/disposition-notification",
  "message/global-disposition-notification",
]);

/** Report parts that make a message a report: its returned original is not opened into the body. */
const EVIDENCE_TYPES = new Set([...REPORT_TYPES, "message/feedback-report"]);

interface Entry {
  plain: string[];
  html: string[];
}

/** Bodies from this many bytes on have their line ends folded in their bytes (mime/lines.ts). */
export const FOLD_IN_BYTES_FROM = 1024 * 1024;

/**
 * The text of `bytes` in `charset`, CR LF folded to LF. A large body in a charset that allows it is
 * folded in its bytes before it is decoded (mime/lines.ts): the decoder then makes the only copy, where
 * folding the decoded text would make a second string as large. Bytes of the raw message are put back
 * as they were before this returns (`owned` false); a decoded buffer only this part uses is left folded.
 * A smaller body (nearly every one) is folded in its text, and the raw message is never written to.
 */
function decodeFolded(bytes: Uint8Array, charset: string | undefined, owned: boolean): string {
  if (bytes.length < FOLD_IN_BYTES_FROM || !readsAsUtf8OrWindows1252(charset)) {
    return decodeCharset(bytes, charset).replace(/\r\n/g, "\n");
  }
  const folded = foldCrlfInPlace(bytes);
  try {
    return decodeUtf8OrWindows1252(bytes.subarray(0, folded.length));
  } finally {
    if (!owned) folded.restore();
  }
}

/** The text of a leaf part: transfer encoding, then charset, then `format=flowed` (RFC 3676). */
export function partText(part: MimePart): string {
  const encoded = part.source.subarray(part.bodyStart, part.bodyEnd);
  // An identity encoding is read in place: the text is decoded from it at once, so a copy of a 50 MB
  // body (what decodeTransferEncoding gives callers that keep the bytes) would only add to the peak.
  const identity = part.transferEncoding !== "base64" && part.transferEncoding !== "quoted-printable";
  const bytes = identity ? encoded : decodeTransferEncoding(encoded, part.transferEncoding);
  const text = decodeFolded(bytes, part.contentType.params.charset, !identity);
  const params = part.contentType.params;
  if (part.contentType.value !== "text/plain" || params.format?.toLowerCase() !== "flowed") return text;
  return unwrapFlowed(text, params.delsp?.toLowerCase() === "yes");
}

/** Whether a message (not counting messages encapsulated in it) carries a report part. */
function isReport(part: MimePart): boolean {
  if (part.children.length === 0) return EVIDENCE_TYPES.has(part.contentType.value);
  return part.children.some(isReport);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function textToHtml(text: string): string {
  return `<div>${escapeHtml(text).replace(/\n/g, "<br />")}</div>`;
}

function header(headers: HeaderField[], name: string): string | undefined {
  return headers.find((h) => h.name === name)?.value;
}

/** The rows shown above an opened encapsulated message, like a mail client's forward block. */
function headerRows(headers: HeaderField[]): Array<[string, string]> {
  const subject = header(headers, "subject");
  const date = header(headers, "date");
  const rows: Array<[string, string]> = [
    ["From", formatAddresses(header(headers, "from"))],
    ["Subject", subject ? decodeWords(subject) : ""],
    ["Date", date ? (parseDateHeader(date) ?? date) : ""],
    ["To", formatAddresses(header(headers, "to"))],
    ["Cc", formatAddresses(header(headers, "cc"))],
  ];
  return rows.filter(([, value]) => value !== "");
}

function headerBlockText(rows: Array<[string, string]>): string {
  const width = Math.max(0, ...rows.map(([key]) => key.length));
  const lines = rows.map(([key, value]) => `${`${key}:`.padEnd(width + 1)} ${value}`);
  const rule = "-".repeat(Math.max(0, ...lines.map((line) => line.length)));
  return `\n${rule}\n${lines.join("\n")}\n${rule}\n`;
}

function headerBlockHtml(rows: Array<[string, string]>): string {
  const cells = rows.map(([key, value]) => `<tr><th>${key}:</th><td>${escapeHtml(value)}</td></tr>`);
  return `<table class="mailhook-message-header">${cells.join("")}</table>`;
}

/** Collects the body entries of a message, keyed by the part that selects them (in document order). */
class BodyCollector {
  readonly entries = new Map<MimePart, Entry>();
  /** HTML values added so far */
  htmlParts = 0;

  add(selector: MimePart, kind: "plain" | "html", value: string): void {
    let entry = this.entries.get(selector);
    if (!entry) {
      entry = { plain: [], html: [] };
      this.entries.set(selector, entry);
    }
    entry[kind].push(value);
    if (kind === "html") this.htmlParts++;
  }

  /** Reads one message (the root or an opened encapsulated one). */
  message(root: MimePart, depth: number): void {
    this.part(root, null, depth, isReport(root));
  }

  private part(part: MimePart, alternative: MimePart | null, depth: number, report: boolean): void {
    const type = part.contentType.value;
    if (part.children.length > 0) {
      const inAlternative = type === "multipart/alternative" ? part : alternative;
      for (const child of part.children) this.part(child, inAlternative, depth, report);
      return;
    }
    if (type.startsWith("multipart/")) return;
    const marked = part.disposition?.value === "attachment";
    if (part.message) {
      if (report || depth >= MAX_INLINE_MESSAGE_DEPTH || isAttachmentCandidate(part)) return;
      const rows = headerRows(part.message.headers);
      this.add(part, "plain", headerBlockText(rows));
      const htmlBefore = this.htmlParts;
      this.message(part.message, depth + 1);
      // The header block joins the HTML body only when the opened message has HTML of its own.
      if (this.htmlParts > htmlBefore) this.add(part, "html", headerBlockHtml(rows));
    } else if ((type === "text/plain" || type === "text/html") && !marked) {
      this.add(alternative ?? part, type === "text/html" ? "html" : "plain", partText(part));
    } else if (REPORT_TYPES.has(type) && !marked) {
      this.add(alternative ?? part, "plain", partText(part));
    }
  }
}

/** Reads the `text` and `html` bodies of a parsed MIME tree. Never throws. */
export function readBody(root: MimePart): MessageBody {
  const collector = new BodyCollector();
  collector.message(root, 0);
  const entries = [...collector.entries.values()];
  const hasPlain = entries.some((e) => e.plain.length > 0);
  const hasHtml = entries.some((e) => e.html.length > 0);
  const html = hasHtml
    ? entries.flatMap((e) => (e.html.length > 0 ? e.html : e.plain.map(textToHtml))).join("\n")
    : "";
  if (hasPlain) {
    const text = entries
      .flatMap((e) => (e.plain.length > 0 ? e.plain : e.html.map(htmlToPlainText)))
      .join("\n");
    if (text.trim() !== "" || html.trim() === "") {
      return { text, html, text_source: text.trim() === "" ? "none" : "text" };
    }
  }
  if (html.trim() === "") return { text: "", html, text_source: "none" };
  // Only an HTML body (or an empty text part beside it): the text is derived from the HTML.
  return { text: htmlToPlainText(html), html, text_source: "html" };
}
