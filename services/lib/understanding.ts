/**
 * What the service understands about a message (docs/parsing.md, "What the service understands"), as
 * everything downstream of ingest reads it: the mapper's `message`, generic@2, route rules, the event
 * detail's `message.mail`. Intake computes the fields and stores them in the parsed message; a message
 * stored before a field existed, or by a path that did not compute it (a pasted preview, an inline
 * preview message), gets the field's default here, so readers never see a hole:
 *
 * - `thread_id`: computed from the headers by the same rule intake uses;
 * - `reply_text`: the trimmed `text`;
 * - `text_source`: `"text"` when there is a text body, `"html"` when only an HTML body, else `"none"`;
 * - `forwarded`: null; `auth`: every result `none`; `spam`: null; `message_id_conflict`: false;
 * - `auto`: from the `Auto-Submitted`, `List-Id`, `List-Unsubscribe` and `Precedence` headers only.
 */
import { type MapperAuto, type MessageUnderstanding, noAuth, type TextSource } from "../../mapper/types.ts";
import type { NormalizedMessage } from "./message.ts";

/** The first `<…>` Message-ID in a header value, brackets kept; null when there is none. */
export function firstMessageId(value: string | undefined): string | null {
  if (value === undefined) return null;
  const match = /<[^<>\s]+>/.exec(value);
  return match ? match[0] : null;
}

/** The thread a message belongs to: the first Message-ID of References, else of In-Reply-To, else its own. */
export function threadIdOf(message: Pick<NormalizedMessage, "headers" | "message_id">): string {
  return (
    firstMessageId(message.headers.references) ??
    firstMessageId(message.headers["in-reply-to"]) ??
    message.message_id
  );
}

/** `auto` from headers alone (no DSN parsing): what a message stored without the analysis gets. */
export function autoFromHeaders(headers: Readonly<Record<string, string>>): MapperAuto {
  const autoSubmitted = headers["auto-submitted"]?.trim() || null;
  const listId = headers["list-id"]?.trim() || null;
  const precedence = headers.precedence?.trim().toLowerCase() ?? "";
  const submittedWord = autoSubmitted?.split(";")[0]?.trim().toLowerCase() ?? "no";
  let kind: MapperAuto["kind"] = "none";
  if (submittedWord === "auto-replied") kind = "auto_reply";
  else if (listId !== null || headers["list-unsubscribe"] !== undefined || /^(list|bulk)$/.test(precedence))
    kind = "list";
  else if (submittedWord !== "no") kind = "auto_generated";
  return { kind, auto_submitted: autoSubmitted, list_id: listId, dsn: null };
}

function textSourceOf(message: Pick<NormalizedMessage, "text" | "html">): TextSource {
  if (message.text !== "") return "text";
  return message.html !== "" ? "html" : "none";
}

/**
 * The complete understanding of a stored (or previewed) message: the fields it carries as they are,
 * the absent ones defaulted (see the module comment).
 */
export function understandingOf(message: NormalizedMessage): MessageUnderstanding {
  return {
    thread_id: message.thread_id ?? threadIdOf(message),
    reply_text: message.reply_text ?? message.text.trim(),
    text_source: message.text_source ?? textSourceOf(message),
    forwarded: message.forwarded ?? null,
    auto: message.auto ?? autoFromHeaders(message.headers),
    auth: message.auth ?? noAuth(),
    spam: message.spam ?? null,
    message_id_conflict: message.message_id_conflict ?? false,
  };
}

/** The message with every understanding field present (the mapper's `message`). */
export function withUnderstanding(message: NormalizedMessage): NormalizedMessage & MessageUnderstanding {
  return { ...message, ...understandingOf(message) };
}
