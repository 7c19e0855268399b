/**
 * The fields of a `message/delivery-status` body (RFC 3464 §2): a per-message block, then one block
 * per recipient, each a header-like list of fields, blocks separated by blank lines. Only what the
 * understanding reports is read. (A small reader of its own: the understanding is self-contained.)
 */
import type { MapperDsn } from "../../../mapper/types.ts";

/** One block's fields, lowercase names; a continuation line (leading white space) joins its field. */
function fieldsOf(block: string): Map<string, string> {
  const fields = new Map<string, string>();
  let last: string | null = null;
  for (const line of block.split("\n")) {
    if (/^[ \t]/.test(line) && last !== null) {
      fields.set(last, `${fields.get(last) ?? ""} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    last = line.slice(0, colon).trim().toLowerCase();
    if (!fields.has(last)) fields.set(last, line.slice(colon + 1).trim());
  }
  return fields;
}

/** `rfc822; bob@example.com` → `bob@example.com` (RFC 3464 §2.3.2: address-type ";" address). */
function typed(value: string | undefined): string | null {
  if (value === undefined || value === "") return null;
  const semicolon = value.indexOf(";");
  const v = (semicolon >= 0 ? value.slice(semicolon + 1) : value).trim();
  return v === "" ? null : v;
}

/** The recipients of a delivery-status body, in order; an action is lowercased. */
export function dsnRecipients(body: string): MapperDsn[] {
  const blocks = body.replace(/\r/g, "").split(/\n[ \t]*\n/);
  const out: MapperDsn[] = [];
  for (const block of blocks.slice(1)) {
    const f = fieldsOf(block);
    if (!f.has("final-recipient") && !f.has("action") && !f.has("original-recipient")) continue;
    out.push({
      action: f.get("action")?.toLowerCase() || null,
      status: f.get("status")?.split(/\s/)[0] || null,
      final_recipient: typed(f.get("final-recipient") ?? f.get("original-recipient")),
      diagnostic_code: typed(f.get("diagnostic-code")),
      original_message_id: null,
    });
  }
  return out;
}
