/**
 * Attachment extraction (spec "Attachment descriptor" and "Extraction rules", docs/ingest.md).
 *
 * Works on the raw bytes through the MIME tree of `mime/tree.ts`, so that attachment ids follow the
 * part position and attachment bytes are exactly the decoded content (see `mime/transfer.ts`).
 */
import { createHash } from "node:crypto";
import type { AttachmentDescriptor } from "../lib/message.ts";
import { attachmentFilename } from "./mime/filename.ts";
import { decodeTransferEncoding } from "./mime/transfer.ts";
import { type MimePart, parseMimeTree } from "./mime/tree.ts";

/** Largest attachment kept: 25 MB in binary units (MiB), as in the spec's Limits. Larger are skipped. */
export const MAX_ATTACHMENT_BYTES = 25 * 1024 * 1024;

/**
 * Largest total of all candidate attachments of one message, 50 MB in binary units (MiB). The total
 * includes candidates that are skipped for being over {@link MAX_ATTACHMENT_BYTES}: the spec rejects
 * a message by its "total candidate size", and a candidate is a part that qualifies as an attachment.
 */
export const MAX_CANDIDATE_BYTES = 50 * 1024 * 1024;

/** An attachment that is kept: its descriptor, exact decoded bytes and MIME part position. */
export interface ExtractedAttachment {
  descriptor: AttachmentDescriptor;
  bytes: Uint8Array;
  /** IMAP-style section number (RFC 3501 §6.4.5) of the MIME part, e.g. "2.1" */
  partPath: string;
}

/** A candidate left out because it is over {@link MAX_ATTACHMENT_BYTES}. */
export interface SkippedAttachment {
  filename: string;
  content_type: string;
  size: number;
  reason: "too_large";
}

/** What extraction found in one message. */
export interface ExtractionResult {
  attachments: ExtractedAttachment[];
  skipped: SkippedAttachment[];
  /** decoded size of every candidate, skipped ones included */
  candidateBytes: number;
}

/** Whether a message must be rejected (`ingest.too_large`) because its candidates total over 50 MB. */
export function exceedsCandidateLimit(candidateBytes: number): boolean {
  return candidateBytes > MAX_CANDIDATE_BYTES;
}

/**
 * Parts that are never files unless marked or named: the body alternatives (RFC 2046 §4.1, RFC 1896),
 * the headers of a bounced message (RFC 6522 text/rfc822-headers), the machine-readable report parts
 * (RFC 3464, 8098, 5965) and encapsulated messages, which are opened instead (RFC 2046 §5.2.1).
 */
const BODY_OR_REPORT_TYPES = new Set([
  "text/plain",
  "text/html",
  "text/enriched",
  "text/richtext",
  "text/rfc822-headers",
  "message/rfc822",
  "message/global",
  "message/global-headers",
  "message/delivery-status",
  "message/global-delivery-status",
  "message/disposition-notification",
  "message/global-disposition-notification",
  "message/feedback-report",
]);

function filenameOf(part: MimePart): string | undefined {
  // RFC 2183 §2.3 names the file in Content-Disposition; `name` on Content-Type is the older form.
  return part.disposition?.params.filename || part.contentType.params.name || undefined;
}

/**
 * The extraction rules. Candidates are parts marked `attachment` (RFC 2183), parts with a filename,
 * and images with a Content-ID (the `cid:` pictures of an HTML body). A part without any disposition
 * is also a candidate unless it is body text, a report part or an encapsulated message: like
 * postal-mime, a calendar invite or a nameless PDF is a file, not something to drop. An `inline`
 * part without a filename that is not a Content-ID image is body content and not a candidate.
 */
export function isAttachmentCandidate(part: MimePart): boolean {
  const type = part.contentType.value;
  const disposition = part.disposition?.value ?? "";
  if (disposition === "attachment") return true;
  if (filenameOf(part)) return true;
  if (type.startsWith("image/") && part.contentId) return true;
  return disposition === "" && !BODY_OR_REPORT_TYPES.has(type) && !type.startsWith("multipart/");
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** Leaf parts in document order; a message/rfc822 part that is not itself a candidate is opened. */
export function* leaves(part: MimePart): Generator<MimePart> {
  if (part.children.length > 0) {
    for (const child of part.children) yield* leaves(child);
  } else if (part.contentType.value.startsWith("multipart/")) {
    // A multipart without parts (no boundary found) holds nothing to extract.
  } else if (part.message && !isAttachmentCandidate(part)) {
    yield* leaves(part.message);
  } else {
    yield part;
  }
}

/** Hex digits of the raw message's SHA-256 in an {@link attachmentIdSuffix} (48 bits). */
export const ATTACHMENT_ID_SUFFIX_HEX = 12;

/**
 * What is appended to every attachment id of a message whose Message-ID its project already stores
 * with other bytes (the store statement applies it, services/ingest/store.ts): `-` and the first
 * {@link ATTACHMENT_ID_SUFFIX_HEX} hex digits of the raw message's SHA-256, e.g. `att_2` →
 * `att_2-9f3a1c0b2d4e`. Message-IDs are not secret, so anyone can send a message reusing one; the
 * suffix keeps the ids of such a message apart from those of the message stored first, so an id from
 * an event's payload names that event's message only (docs/attachments.md). A part path never holds
 * a `-`, so a suffixed id never equals an unsuffixed one; the same bytes always get the same suffix.
 */
export function attachmentIdSuffix(rawSha256: string): string {
  if (!/^[0-9a-f]{64}$/.test(rawSha256)) throw new Error("expected a SHA-256 in lowercase hex");
  return `-${rawSha256.slice(0, ATTACHMENT_ID_SUFFIX_HEX)}`;
}

/**
 * Extracts the attachments of a raw message. The id is `att_` + the part path with `_` for `.`
 * (`att_2_1`), so the same raw bytes always give the same ids (the store may add
 * {@link attachmentIdSuffix}). Never throws for malformed MIME.
 */
export function extractAttachments(raw: Uint8Array, root: MimePart = parseMimeTree(raw)): ExtractionResult {
  const result: ExtractionResult = { attachments: [], skipped: [], candidateBytes: 0 };
  let ordinal = 0;
  for (const part of leaves(root)) {
    if (!isAttachmentCandidate(part)) continue;
    ordinal++;
    const bytes = decodeTransferEncoding(
      part.source.subarray(part.bodyStart, part.bodyEnd),
      part.transferEncoding,
    );
    const contentType = part.contentType.value;
    const filename = attachmentFilename(filenameOf(part), ordinal, contentType);
    result.candidateBytes += bytes.length;
    if (bytes.length > MAX_ATTACHMENT_BYTES) {
      result.skipped.push({ filename, content_type: contentType, size: bytes.length, reason: "too_large" });
      continue;
    }
    const descriptor: AttachmentDescriptor = {
      id: `att_${part.path.replaceAll(".", "_")}`,
      filename,
      content_type: contentType,
      size: bytes.length,
      is_inline: part.disposition?.value === "inline",
      ...(part.contentId ? { content_id: part.contentId } : {}),
      sha256: sha256Hex(bytes),
    };
    result.attachments.push({ descriptor, bytes, partPath: part.path });
  }
  return result;
}
