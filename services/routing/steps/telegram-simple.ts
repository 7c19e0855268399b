/**
 * `map.telegram_simple` (docs/routing.md § Chat steps): a Telegram Bot API `sendMessage` body,
 * `{chat_id, text}` (the bot token is in the endpoint URL). Without `parse_mode` Telegram shows the
 * text as is and nothing needs escaping. With `parse_mode` ("HTML" or "MarkdownV2", so the prefix may
 * carry markup) the mail content is escaped the way that mode requires, so it still shows literally.
 * Telegram refuses a text over 4096 characters, hence the bound on `max_chars`.
 */
import { type Static, Type } from "@sinclair/typebox";
import { pointer, type ValidationIssue } from "../issues.ts";
import { rejectUnknownArgs } from "./args.ts";
import {
  CHAT_DEFAULTS,
  chatText,
  MAX_PREFIX_LENGTH,
  validateChatOptions,
  validateDestination,
} from "./chat-text.ts";
import type { MapStep } from "./types.ts";

/** Telegram's limit on a message's text. */
export const TELEGRAM_MAX_CHARS = 4096;

const PARSE_MODES = ["HTML", "MarkdownV2"] as const;

const TelegramSimpleArgs = Type.Object(
  {
    chat_id: Type.String({
      minLength: 1,
      maxLength: 256,
      description: 'the chat id as a string ("-1001234567890") or "@channelusername"',
    }),
    max_chars: Type.Optional(
      Type.Integer({ minimum: 1, maximum: TELEGRAM_MAX_CHARS, default: CHAT_DEFAULTS.max_chars }),
    ),
    include_from: Type.Optional(Type.Boolean({ default: CHAT_DEFAULTS.include_from })),
    prefix: Type.Optional(Type.String({ maxLength: MAX_PREFIX_LENGTH, default: CHAT_DEFAULTS.prefix })),
    parse_mode: Type.Optional(Type.Union(PARSE_MODES.map((m) => Type.Literal(m)))),
  },
  {
    additionalProperties: false,
    examples: [
      { chat_id: "-10012345" },
      { chat_id: "-1001234567890", prefix: "<b>[Billing]</b>", parse_mode: "HTML", max_chars: 700 },
    ],
  },
);

/** Escapes text for `parse_mode: "HTML"`: `<`, `>` and `&` as entities. */
export function escapeTelegramHtml(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** Escapes text for `parse_mode: "MarkdownV2"`: every reserved character, and `\`, gets a `\`. */
export function escapeTelegramMarkdownV2(s: string): string {
  return s.replace(/[_*[\]()~`>#+\-=|{}.!\\]/g, (c) => `\\${c}`);
}

/** The `map.telegram_simple` step. */
export const telegramSimpleStep = {
  name: "map.telegram_simple",
  kind: "map",
  summary: "POSTs a short Telegram sendMessage body: {chat_id, text} with the subject, sender and text.",
  args: TelegramSimpleArgs,
  validate(args, path) {
    const issues: ValidationIssue[] = [];
    rejectUnknownArgs(args, Object.keys(TelegramSimpleArgs.properties), path, issues);
    validateDestination(args, "chat_id", path, issues);
    validateChatOptions(args, path, TELEGRAM_MAX_CHARS, issues);
    const mode = args.parse_mode;
    if (mode !== undefined && !(PARSE_MODES as readonly unknown[]).includes(mode))
      issues.push({ path: pointer(path, "parse_mode"), message: `must be one of ${PARSE_MODES.join(", ")}` });
    return issues;
  },
  build(args: Static<typeof TelegramSimpleArgs>, input) {
    const escapeText =
      args.parse_mode === "HTML"
        ? escapeTelegramHtml
        : args.parse_mode === "MarkdownV2"
          ? escapeTelegramMarkdownV2
          : (s: string) => s;
    const text = chatText(input.message, args, escapeText);
    return {
      kind: "json",
      contentType: "application/json",
      value:
        args.parse_mode === undefined
          ? { chat_id: args.chat_id, text }
          : { chat_id: args.chat_id, text, parse_mode: args.parse_mode },
    };
  },
} as const satisfies MapStep<typeof TelegramSimpleArgs>;
