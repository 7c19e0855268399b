/**
 * The MIME parts the understanding reads besides the bodies: attached or encapsulated messages
 * (`message/rfc822`, a forwarded original or a bounced message), their headers alone
 * (`text/rfc822-headers`), and the machine-readable reports of delivery status notifications
 * (RFC 3464) and read receipts (RFC 8098).
 */
import { decodeTransferEncoding } from "../mime/transfer.ts";
import { type MimePart, parseMimeTree } from "../mime/tree.ts";

/** One such part: its lowercase type and its decoded bytes. */
export interface UnderstandingPart {
  contentType: string;
  bytes: Uint8Array;
}

export const UNDERSTOOD_TYPES: ReadonlySet<string> = new Set([
  "message/rfc822",
  "message/global",
  "text/rfc822-headers",
  "message/rfc822-headers",
  "message/delivery-status",
  "message/global-delivery-status",
  "message/disposition-notification",
  "message/global-disposition-notification",
]);

/** At most this many parts are read: a report has three, a forward one or two. */
const MAX_PARTS = 16;

/**
 * Encoded bytes read of one part. The understanding needs a forwarded message's headers and the start
 * of its text (its first 2,000,000 characters at most), never its attachments: a 25 MB attached
 * message is read from its first 4 MiB, so analysing it costs no more memory than a small one.
 */
export const MAX_PART_BYTES = 4 * 1024 * 1024;

/**
 * The parts of a raw message the understanding reads, in document order. Encapsulated messages are
 * not opened (a forwarded message's own attachments are not the message's). Each part is read up to
 * {@link MAX_PART_BYTES}.
 */
export function understandingParts(
  raw: Uint8Array,
  root: MimePart = parseMimeTree(raw),
): UnderstandingPart[] {
  const out: UnderstandingPart[] = [];
  const stack: MimePart[] = [root];
  while (stack.length > 0 && out.length < MAX_PARTS) {
    const part = stack.pop() as MimePart;
    for (let i = part.children.length - 1; i >= 0; i--) stack.push(part.children[i] as MimePart);
    const type = part.contentType.value;
    if (part === root || !UNDERSTOOD_TYPES.has(type)) continue;
    const end = Math.min(part.bodyEnd, part.bodyStart + MAX_PART_BYTES);
    const bytes = decodeTransferEncoding(part.source.subarray(part.bodyStart, end), part.transferEncoding);
    out.push({ contentType: type, bytes });
  }
  return out;
}
