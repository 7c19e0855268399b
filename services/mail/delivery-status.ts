/**
 * The machine-readable parts of delivery status notifications (RFC 3464 `message/delivery-status`,
 * RFC 6533 `message/global-delivery-status`) and of read receipts (RFC 8098
 * `message/disposition-notification`), read into their fields.
 *
 * Both are blocks of header-like fields (RFC 3464 §2.1): a DSN has one block of per-message fields,
 * then one block per recipient, separated by blank lines; an MDN has one block. Field names are
 * lowercased, folded values unfolded; nothing is interpreted here (`Action`, `Status`, the
 * `type;value` of `Final-Recipient` stay as written), so a classifier reads them as it needs.
 */
import { partText, REPORT_TYPES } from "./body.ts";
import type { MimePart } from "./mime/tree.ts";

/** The fields of a report part: per-message fields and one field list per recipient. */
export interface DeliveryStatusFields {
  /** per-message fields (`reporting-mta`, `arrival-date`, … for a DSN; every field of an MDN) */
  message: Record<string, string>;
  /** per-recipient fields (`final-recipient`, `action`, `status`, `diagnostic-code`, …), in order */
  recipients: Record<string, string>[];
}

/** One report part found in a message. */
export interface DeliveryReport extends DeliveryStatusFields {
  /** `message/delivery-status`, `message/disposition-notification`, or their `global` forms */
  content_type: string;
  /** IMAP section number of the part, e.g. "2" */
  part_path: string;
  /** Message-ID of the returned original (its `message/rfc822` or `text/rfc822-headers` part), or null */
  original_message_id: string | null;
}

/** Field blocks separated by blank lines; a line starting with SP or HTAB continues the field above. */
function fieldBlocks(text: string): Array<Record<string, string>> {
  const blocks: Array<Array<[string, string]>> = [];
  let block: Array<[string, string]> | null = null;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === "") {
      block = null;
      continue;
    }
    const last = block?.[block.length - 1];
    if (/^[ \t]/.test(line) && last) {
      last[1] += ` ${line.trim()}`;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!/^[\x21-\x39\x3b-\x7e]+$/.test(name)) continue;
    if (!block) {
      block = [];
      blocks.push(block);
    }
    block.push([name, line.slice(colon + 1).trim()]);
  }
  // A field repeated within a block keeps its first value; fromEntries keeps `__proto__` an own key.
  return blocks.map((fields) => {
    const seen = new Set<string>();
    return Object.fromEntries(fields.filter(([name]) => !seen.has(name) && seen.add(name)));
  });
}

/**
 * Parses the text of a `message/delivery-status` (or `message/disposition-notification`) part:
 * the first block holds the per-message fields, each further block one recipient's fields.
 * Never throws; text with no fields gives `{message: {}, recipients: []}`.
 */
export function parseDeliveryStatus(partText: string): DeliveryStatusFields {
  const [message = {}, ...recipients] = fieldBlocks(partText);
  return { message, recipients };
}

/** The Message-ID of the returned original in a report's parts, or null. */
function originalMessageId(parts: MimePart[]): string | null {
  for (const part of parts) {
    const type = part.contentType.value;
    let value: string | undefined;
    if (part.message) value = part.message.headers.find((h) => h.name === "message-id")?.value;
    else if (type === "text/rfc822-headers" || type === "message/global-headers") {
      value = parseDeliveryStatus(partText(part)).message["message-id"];
    }
    const id = value ? /<[^<>\s]+>/.exec(value)?.[0] : undefined;
    if (id) return id;
  }
  return null;
}

/**
 * Every delivery-status and disposition-notification part of a message (RFC 6522
 * `multipart/report`, or such a part anywhere else), read with {@link parseDeliveryStatus}.
 * Reports inside an encapsulated message belong to that message and are not listed.
 */
export function deliveryReports(root: MimePart): DeliveryReport[] {
  const reports: DeliveryReport[] = [];
  const walk = (part: MimePart, siblings: MimePart[]): void => {
    if (part.children.length > 0) {
      for (const child of part.children) walk(child, part.children);
      return;
    }
    if (!REPORT_TYPES.has(part.contentType.value)) return;
    reports.push({
      content_type: part.contentType.value,
      part_path: part.path,
      ...parseDeliveryStatus(partText(part)),
      original_message_id: originalMessageId(siblings.filter((s) => s !== part)),
    });
  };
  walk(root, []);
  return reports;
}
