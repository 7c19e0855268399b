/**
 * Parses a raw .eml into the mapper's message model (contract §4) with postal-mime, for the REPL and the
 * benchmark. A close local copy of what ingest produces; the service's own parser stays authoritative.
 */
import { createHash } from "node:crypto";
import PostalMime, { type Address } from "postal-mime";
import type { MapperMessage, MapperPerson } from "../mapper/types.ts";

function people(list: Address | Address[] | undefined): MapperPerson[] {
  const out: MapperPerson[] = [];
  const walk = (a: Address) => {
    if ("group" in a && Array.isArray(a.group)) for (const g of a.group) walk(g as Address);
    else if ("address" in a && a.address) out.push({ email: a.address.toLowerCase(), name: a.name ?? "" });
  };
  for (const a of list === undefined ? [] : Array.isArray(list) ? list : [list]) walk(a);
  return out;
}

function rfc3339(date: string | undefined): string | null {
  if (!date) return null;
  const t = Date.parse(date);
  return Number.isNaN(t) ? null : new Date(t).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Parses raw bytes; `receivedAt` is injected so the result is deterministic. */
export async function parseEml(raw: Uint8Array, receivedAt = "1970-01-01T00:00:00Z"): Promise<MapperMessage> {
  const email = await PostalMime.parse(raw);
  const all = new Map<string, string[]>();
  for (const h of email.headers) {
    const key = h.key.toLowerCase();
    all.set(key, [...(all.get(key) ?? []), h.value]);
  }
  const headers: Record<string, string> = {};
  const multi: Record<string, string[]> = {};
  for (const [key, values] of all) {
    headers[key] = values.join(", ");
    if (values.length > 1) multi[key] = values;
  }
  return {
    message_id: email.messageId ?? "",
    message_id_is_synthetic: !email.messageId,
    subject: email.subject ?? "",
    date: rfc3339(email.date),
    received_at: receivedAt,
    from: people(email.from),
    to: people(email.to),
    cc: people(email.cc),
    reply_to: people(email.replyTo),
    headers,
    headers_multi: multi,
    text: email.text ?? "",
    html: email.html ?? "",
    attachments: email.attachments.map((a, i) => {
      const bytes =
        typeof a.content === "string" ? new TextEncoder().encode(a.content) : new Uint8Array(a.content);
      return {
        id: `att_${i + 1}`,
        filename: a.filename ?? `attachment-${i + 1}`,
        content_type: a.mimeType,
        size: bytes.byteLength,
        is_inline: a.disposition === "inline",
        ...(a.contentId ? { content_id: a.contentId } : {}),
        sha256: createHash("sha256").update(bytes).digest("hex"),
      };
    }),
  };
}
