/**
 * The forwarded original of a message: an inline forward block in its body (Gmail's "Forwarded
 * message", Apple Mail's "Begin forwarded message:", Thunderbird's, Outlook's header block under a
 * `Fw:` subject, in the languages of the reply segmenter), or an attached `message/rfc822`.
 */
import { addressParser } from "postal-mime";
import { FORWARD_SUBJECT, headerField, type ReplyAnalysis } from "../../../mapper/functions/reply/index.ts";
import type { MapperForwarded, MapperPerson } from "../../../mapper/types.ts";
import type { NormalizedMessage } from "../../lib/message.ts";
import { MessageParseError, parseMessage } from "../parse.ts";
import { forwardedDate } from "./dates.ts";
import type { UnderstandingPart } from "./parts.ts";

/** Addresses of a forward block's header value: `Ann <a@x>, b@x` or Outlook's `Ann <a@x>; Bob <b@x>`. */
function people(value: string | undefined): MapperPerson[] {
  if (!value) return [];
  const out: MapperPerson[] = [];
  // Gmail's derived text writes "Ann <a@x>" as "Ann <a@x>" or "*Ann* <a@x>"; Outlook separates with ";".
  for (const a of addressParser(value.replace(/\*/g, "").replace(/;/g, ","))) {
    const email = ("address" in a ? (a.address ?? "") : "").trim().toLowerCase();
    // "Bob [mailto:bob@x]" (Outlook's plain text) names the address in brackets.
    const name = (a.name ?? "").replace(/\s*\[mailto:[^\]]*\]\s*/i, "").trim();
    if (email.includes("@")) out.push({ email, name });
    else {
      const bracketed = /mailto:([^\]\s]+@[^\]\s]+)/i.exec(a.name ?? "")?.[1];
      if (bracketed) out.push({ email: bracketed.toLowerCase(), name });
    }
  }
  return out;
}

/** The forwarded original of an inline block in a segmented body, or null. */
export function inlineForwarded(analysis: ReplyAnalysis, subject: string): MapperForwarded | null {
  const segments = analysis.segments;
  let at = segments.findIndex((s) => s.kind === "forwarded_header");
  // Outlook forwards with the same header block it replies with; the subject tells a forward apart.
  if (at < 0 && FORWARD_SUBJECT.test(subject)) {
    at = segments.findIndex(
      (s) => s.kind === "quoted_header" && s.detectors.some((d) => /outlook|header_block|original/.test(d)),
    );
  }
  const header = segments[at];
  if (header === undefined) return null;
  const fields = new Map<string, string>();
  for (const line of header.content.split("\n")) {
    const f = headerField(line.trim());
    if (f && !fields.has(f.field)) fields.set(f.field, f.value);
  }
  const body: string[] = [];
  for (const s of segments.slice(at + 1)) {
    if (s.kind !== "forwarded_content" && s.kind !== "quoted_content") break;
    body.push(s.content);
  }
  const messageId = /<[^<>\s]+>/.exec(fields.get("message_id") ?? "")?.[0] ?? null;
  return {
    from: people(fields.get("from")),
    to: people(fields.get("to")),
    cc: people(fields.get("cc")),
    date: forwardedDate(fields.get("sent")),
    subject: fields.get("subject") ?? "",
    message_id: messageId,
    text: body.join("\n\n"),
  };
}

/** Longest forwarded text kept: the same bound as the body the segmenter reads. */
export const MAX_FORWARDED_TEXT = 2_000_000;

function cutText(text: string): string {
  if (text.length <= MAX_FORWARDED_TEXT) return text;
  const high = text.charCodeAt(MAX_FORWARDED_TEXT - 1);
  return text.slice(0, high >= 0xd800 && high <= 0xdbff ? MAX_FORWARDED_TEXT - 1 : MAX_FORWARDED_TEXT);
}

/** The first attached or encapsulated message, parsed, or null. */
export async function attachedForwarded(
  parts: readonly UnderstandingPart[],
): Promise<MapperForwarded | null> {
  const part = parts.find((p) => p.contentType === "message/rfc822" || p.contentType === "message/global");
  if (part === undefined) return null;
  let message: NormalizedMessage;
  try {
    ({ message } = await parseMessage(part.bytes, {
      receivedAt: new Date(0),
      inboundDomain: "invalid",
      newUuid: () => "none",
    }));
  } catch (error) {
    // An empty or unreadable attached message forwards nothing; it is not a failure of the analysis.
    if (error instanceof MessageParseError) return null;
    throw error;
  }
  return {
    from: message.from,
    to: message.to,
    cc: message.cc,
    date: message.date,
    subject: message.subject,
    message_id: message.message_id_is_synthetic ? null : message.message_id,
    text: cutText(message.text.trim()),
  };
}
