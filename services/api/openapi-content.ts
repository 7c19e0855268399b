/**
 * What the OpenAPI document says beyond the operations' schemas: the bodies the service POSTs to
 * endpoints (`webhooks`) and examples on the main operations (by operationId). openapi-document.ts
 * puts them in place.
 */
import { NotificationBodySchema } from "../resources/notifications.ts";
import { GenericBodySchema, GenericBodyV2Schema } from "../routing/schemas/generic.ts";
import type { OperationExamples, WebhookDoc } from "./openapi-document.ts";
import { Event, EventStatus } from "./schemas.ts";

type Json = WebhookDoc["schema"];

const SIGNED =
  "Signed with both schemes (X-Service-Signature and Standard Webhooks' webhook-* headers) and carrying X-Idempotency-Key, the same on every attempt and replay; see docs/delivery.md.";

const str = { type: "string" };
const fullAddress = {
  type: "object",
  required: ["Email", "Name", "MailboxHash"],
  properties: { Email: str, Name: str, MailboxHash: str },
};
const addressList = { type: "array", items: { $ref: "#/components/schemas/PostmarkAddress" } };

/** The body of Postmark's inbound webhook, as `map.postmark_json` sends it. */
const POSTMARK_BODY: Json = {
  $id: "#/components/schemas/PostmarkInbound",
  type: "object",
  required: [
    "From",
    "FromFull",
    "FromName",
    "To",
    "ToFull",
    "Cc",
    "CcFull",
    "Bcc",
    "BccFull",
    "OriginalRecipient",
    "Subject",
    "MessageID",
    "ReplyTo",
    "MailboxHash",
    "Date",
    "TextBody",
    "HtmlBody",
    "StrippedTextReply",
    "Tag",
    "Headers",
    "Attachments",
    "MessageStream",
  ],
  properties: {
    From: str,
    FromName: str,
    FromFull: { ...fullAddress, $id: "#/components/schemas/PostmarkAddress" },
    To: str,
    ToFull: addressList,
    Cc: str,
    CcFull: addressList,
    Bcc: str,
    BccFull: addressList,
    OriginalRecipient: {
      type: "string",
      description: "the envelope recipient (SMTP), else the first To address",
    },
    Subject: str,
    MessageID: {
      type: "string",
      description: "the event id (Postmark's own id here); the Message-ID header is in Headers",
    },
    ReplyTo: str,
    MailboxHash: { type: "string", description: "the +tag of OriginalRecipient" },
    Date: str,
    TextBody: str,
    HtmlBody: str,
    StrippedTextReply: str,
    Tag: str,
    MessageStream: { type: "string", enum: ["inbound"] },
    Headers: {
      type: "array",
      items: { type: "object", required: ["Name", "Value"], properties: { Name: str, Value: str } },
    },
    Attachments: {
      type: "array",
      items: {
        type: "object",
        required: ["Name", "Content", "ContentType", "ContentLength", "ContentID"],
        properties: {
          Name: str,
          Content: { type: "string", contentEncoding: "base64" },
          ContentType: str,
          ContentLength: { type: "integer" },
          ContentID: str,
        },
      },
    },
    RawEmail: { type: "string", description: "the raw message, only with include_raw_email" },
  },
};

/** Every body a route's final step can deliver, and the service's own notifications. */
export const API_WEBHOOKS: WebhookDoc[] = [
  {
    name: "generic@1",
    summary: "map.generic_json (args {}): the message as generic@1 JSON",
    description: `The body of a route whose pipeline ends in map.generic_json with {}. ${SIGNED}`,
    contentType: "application/json",
    schema: { ...(GenericBodySchema as unknown as Json), $id: "#/components/schemas/GenericV1" },
  },
  {
    name: "generic@2",
    summary: 'map.generic_json (args {"version": "2"}): generic@1 plus what the service understands',
    description: `Every generic@1 field plus the thread, the reply without its quotes, the forwarded original, automated-mail and authentication verdicts, the spam verdict and the Message-ID conflict flag (docs/routing.md). ${SIGNED}`,
    contentType: "application/json",
    schema: { ...(GenericBodyV2Schema as unknown as Json), $id: "#/components/schemas/GenericV2" },
  },
  {
    name: "postmark_json",
    summary: "map.postmark_json: the body of Postmark's inbound webhook",
    description: `The fields and shapes Postmark's inbound webhook sends, for Postmark consumers (docs/receivers.md says exactly what matches). ${SIGNED}`,
    contentType: "application/json",
    schema: POSTMARK_BODY,
  },
  {
    name: "raw_mime",
    summary: "map.raw_mime: the stored message itself",
    description: `The raw RFC 5322 bytes as received. ${SIGNED}`,
    contentType: "message/rfc822",
    schema: { type: "string", format: "binary" },
  },
  {
    name: "slack_simple",
    summary: "map.slack_simple: a Slack message",
    description: `What a Slack incoming webhook takes: the channel and a short text (subject, sender, body), with &, < and > of the mail escaped. ${SIGNED}`,
    contentType: "application/json",
    schema: {
      type: "object",
      required: ["channel", "text"],
      properties: { channel: str, text: str },
      additionalProperties: false,
    },
  },
  {
    name: "telegram_simple",
    summary: "map.telegram_simple: a Telegram sendMessage body",
    description: `What the Bot API's sendMessage takes: the chat and a short text, with parse_mode when the route sets one. ${SIGNED}`,
    contentType: "application/json",
    schema: {
      type: "object",
      required: ["chat_id", "text"],
      properties: { chat_id: str, text: str, parse_mode: { type: "string", enum: ["HTML", "MarkdownV2"] } },
      additionalProperties: false,
    },
  },
  {
    name: "notification",
    summary: "an operational notification, sent to the project's notification endpoint",
    description:
      "Sent when the project subscribed to its type (PATCH /v1/project, notifications). data by type: event.dead {event_id, route_id, last_error, attempts}; endpoint.circuit_opened and endpoint.circuit_closed {endpoint_id, url, consecutive_failures, since}; message.held and message.rejected {message_id, msg_id (held only), project, rule, reason, from, subject}; route.silent {route_id, name, expect_mail_within, last_matched_at}. Signed with both schemes with the project's notification secret; webhook-id is the notification id. Retried up to 5 times over about ten minutes; see docs/delivery.md.",
    contentType: "application/json",
    schema: { ...(NotificationBodySchema as unknown as Json), $id: "#/components/schemas/Notification" },
  },
];

const EVENT_ID = "0193f1c2-7d1e-7a53-9b1c-4c1d2e3f4a5b";
const ROUTE = {
  name: "invoices",
  endpoint_id: "ep_01jd3x4k5m6n7p8q9r0s",
  signing_secret_kid: "kid_01jd3x4k5m6n7p8q",
  rule: { subject_contains: ["invoice", "receipt"] },
  pipeline: { steps: [{ name: "map.generic_json", args: {} }] },
};

/** Shared shapes published in `components.schemas` although no operation returns them alone. */
export const API_SCHEMAS = [Event, EventStatus] as unknown as Json[];

/** Examples on the operations a new user calls first. */
export const API_EXAMPLES: Record<string, OperationExamples> = {
  createEndpoint: {
    request: {
      url: "https://example.com/hooks/mail",
      headers: { Authorization: "Bearer abc" },
      secret_headers: ["authorization"],
      timeout_s: 10,
    },
  },
  createRoute: { request: ROUTE },
  replayEvent: { responses: { "202": { queued: true, event_id: EVENT_ID } } },
  previewMapper: {
    request: {
      config: { version: "v1", output: { subject: { var: "message.subject" } } },
      message: { subject: "Invoice 2041", from: [{ email: "ada@example.com", name: "Ada" }] },
    },
    responses: { "200": { output: { subject: "Invoice 2041" } } },
  },
  validateMapperConfig: {
    request: { config: { version: "v1", output: { subject: { var: "message.subject" } } } },
  },
};
