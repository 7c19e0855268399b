/**
 * The text of the chat steps (`map.slack_simple`, `map.telegram_simple`; docs/routing.md § Chat
 * steps): one short message built from the subject, the sender and the text body, cut to a length.
 *
 *   <prefix> Subject: <subject>
 *   From: <name> <email>          (with include_from)
 *   <text body>
 *
 * The prefix is inserted as written (it may carry the chat's own markup: a Slack `<!here>`, Telegram
 * HTML); everything taken from the email is escaped by the chat's `escape`, so mail content is shown
 * literally and can never ping a channel or inject a link. Lengths count UTF-16 code units (as Telegram
 * counts characters) of the text before escaping; a cut never splits a surrogate pair and ends with "…".
 */
import type { NormalizedMessage } from "../../lib/message.ts";
import { pointer, type ValidationIssue } from "../issues.ts";
import { renderHtmlText } from "./html-to-text.ts";

/** The options both chat steps take. */
export interface ChatTextOptions {
  prefix?: string;
  include_from?: boolean;
  max_chars?: number;
}

/** Defaults (MailWebhook's). */
export const CHAT_DEFAULTS = { max_chars: 800, include_from: true, prefix: "" } as const;

/** Longest prefix accepted. */
export const MAX_PREFIX_LENGTH = 200;

const ELLIPSIS = "…";

/** `s` cut to at most `max` UTF-16 code units, ending with "…" when cut. */
export function truncateChars(s: string, max: number): string {
  if (s.length <= max) return s;
  if (max <= 0) return "";
  let cut = max - ELLIPSIS.length;
  const last = s.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return `${s.slice(0, cut)}${ELLIPSIS}`;
}

/** The sender as `Name <email>`, or the bare address when it has no name. */
function sender(m: NormalizedMessage): string {
  const first = m.from[0];
  if (first === undefined) return "(unknown sender)";
  return first.name.trim() === "" ? first.email : `${first.name} <${first.email}>`;
}

/** The body text: `text`, or a rendering of the HTML when the message has no text body. */
function bodyText(m: NormalizedMessage): string {
  if (m.text.trim() !== "") return m.text.trim();
  // The text is cut to at most 40,000 characters: the first 200,000 characters of HTML are plenty.
  if (m.html.trim() !== "") return renderHtmlText(m.html.slice(0, 200_000), { width: 0 });
  return "";
}

/** The chat text of `m` under `opts`, with mail content passed through `escapeText`. */
export function chatText(
  m: NormalizedMessage,
  opts: ChatTextOptions,
  escapeText: (s: string) => string,
): string {
  const max = opts.max_chars ?? CHAT_DEFAULTS.max_chars;
  const prefix = opts.prefix ?? CHAT_DEFAULTS.prefix;
  const lead = prefix === "" || /\s$/.test(prefix) ? prefix : `${prefix} `;
  const lines = [`Subject: ${m.subject.trim() === "" ? "(no subject)" : m.subject.trim()}`];
  if (opts.include_from ?? CHAT_DEFAULTS.include_from) lines.push(`From: ${sender(m)}`);
  const body = bodyText(m);
  if (body !== "") lines.push(body);
  return `${lead}${escapeText(truncateChars(lines.join("\n"), Math.max(max - lead.length, 0)))}`;
}

/** Checks `prefix`, `include_from` and `max_chars` (at most `maxChars`), with paths under `path`. */
export function validateChatOptions(
  args: Readonly<Record<string, unknown>>,
  path: string,
  maxChars: number,
  issues: ValidationIssue[],
): void {
  const { prefix, include_from: includeFrom, max_chars: max } = args;
  if (prefix !== undefined && (typeof prefix !== "string" || prefix.length > MAX_PREFIX_LENGTH))
    issues.push({
      path: pointer(path, "prefix"),
      message: `must be a string of at most ${MAX_PREFIX_LENGTH} characters`,
    });
  if (includeFrom !== undefined && typeof includeFrom !== "boolean")
    issues.push({ path: pointer(path, "include_from"), message: "must be a boolean" });
  if (max !== undefined && !(Number.isInteger(max) && (max as number) >= 1 && (max as number) <= maxChars))
    issues.push({ path: pointer(path, "max_chars"), message: `must be an integer from 1 to ${maxChars}` });
  if (typeof prefix === "string" && typeof max === "number" && prefix.length >= max)
    issues.push({ path: pointer(path, "prefix"), message: "must be shorter than max_chars" });
}

/** Checks a required destination argument (`channel`, `chat_id`): a non-empty string. */
export function validateDestination(
  args: Readonly<Record<string, unknown>>,
  key: string,
  path: string,
  issues: ValidationIssue[],
): void {
  const v = args[key];
  if (typeof v !== "string" || v.trim() === "" || v.length > 256)
    issues.push({
      path: pointer(path, key),
      message:
        v === undefined
          ? `required: the destination ${key} (a non-empty string)`
          : `must be a non-empty string of at most 256 characters${typeof v === "number" ? ` (write "${v}")` : ""}`,
    });
}
