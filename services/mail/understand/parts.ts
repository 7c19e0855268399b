/**
 * The MIME parts the understanding reads besides the bodies: attached or encapsulated messages
 * (`message/rfc822`, a forwarded original or a bounced message), their headers alone
 * (`text/rfc822-headers`), and the machine-readable reports of delivery status notifications
 * (RFC 3464) and read receipts (RFC 8098).
 */
import { MAX_ATTACHMENT_BYTES } from "../extract.ts";
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
 * The parts of a raw message the understanding reads, in document order. Encapsulated messages are
 * not opened (a forwarded message's own attachments are not the message's). Parts over the attachment
 * size limit are left out.
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
    if (part.bodyEnd - part.bodyStart > MAX_ATTACHMENT_BYTES) continue;
    const bytes = decodeTransferEncoding(
      part.source.subarray(part.bodyStart, part.bodyEnd),
      part.transferEncoding,
    );
    out.push({ contentType: type, bytes });
  }
  return out;
}
