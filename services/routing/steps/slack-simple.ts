/**
 * `map.slack_simple` (docs/routing.md § Chat steps): a Slack message body, `{channel, text}`, for
 * `chat.postMessage` (bot token in the endpoint's `Authorization` header) or an incoming webhook (which
 * posts to its own channel). Slack reads `&`, `<` and `>` in `text` as markup (`<!channel>`, links), so
 * the mail content is escaped as `&amp;`, `&lt;`, `&gt;`: it is shown literally and cannot ping anyone.
 */
import { type Static, Type } from "@sinclair/typebox";
import type { ValidationIssue } from "../issues.ts";
import { rejectUnknownArgs } from "./args.ts";
import {
  CHAT_DEFAULTS,
  chatText,
  MAX_PREFIX_LENGTH,
  validateChatOptions,
  validateDestination,
} from "./chat-text.ts";
import type { MapStep } from "./types.ts";

/** Slack truncates a message's `text` beyond 40,000 characters. */
export const SLACK_MAX_CHARS = 40_000;

const SlackSimpleArgs = Type.Object(
  {
    channel: Type.String({ minLength: 1, maxLength: 256, description: "the channel ID, e.g. C0123456789" }),
    max_chars: Type.Optional(
      Type.Integer({ minimum: 1, maximum: SLACK_MAX_CHARS, default: CHAT_DEFAULTS.max_chars }),
    ),
    include_from: Type.Optional(Type.Boolean({ default: CHAT_DEFAULTS.include_from })),
    prefix: Type.Optional(Type.String({ maxLength: MAX_PREFIX_LENGTH, default: CHAT_DEFAULTS.prefix })),
  },
  {
    additionalProperties: false,
    examples: [
      { channel: "C0123456789" },
      { channel: "C0123456789", prefix: "[Ops]", max_chars: 700, include_from: true },
    ],
  },
);

/** Escapes Slack's three control characters. */
export function escapeSlack(s: string): string {
  return s.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** The `map.slack_simple` step. */
export const slackSimpleStep = {
  name: "map.slack_simple",
  kind: "map",
  summary: "POSTs a short Slack message: {channel, text} with the subject, sender and text.",
  args: SlackSimpleArgs,
  validate(args, path) {
    const issues: ValidationIssue[] = [];
    rejectUnknownArgs(args, Object.keys(SlackSimpleArgs.properties), path, issues);
    validateDestination(args, "channel", path, issues);
    validateChatOptions(args, path, SLACK_MAX_CHARS, issues);
    return issues;
  },
  build(args: Static<typeof SlackSimpleArgs>, input) {
    return {
      kind: "json",
      contentType: "application/json",
      value: { channel: args.channel, text: chatText(input.message, args, escapeSlack) },
    };
  },
} as const satisfies MapStep<typeof SlackSimpleArgs>;
