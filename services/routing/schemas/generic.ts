/**
 * JSON Schema (2020-12) for the `generic@1` body built by services/routing/generic-body.ts, served at
 * `GET /v1/schemas/transform/generic@1` (contract section 2). Ordering and determinism rules cannot be
 * expressed in JSON Schema; the builder enforces them and its tests check them.
 */
import { SOURCE_TYPES } from "../../lib/message.ts";

/** Whole-second RFC 3339 UTC, as the builder emits (contract section 4). */
const TIME = { type: "string", pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$" } as const;

const PEOPLE = {
  type: "array",
  items: {
    type: "object",
    additionalProperties: false,
    required: ["email", "name"],
    properties: {
      email: { type: "string", description: "lowercased address" },
      name: { type: "string", description: "display name, empty when absent" },
    },
  },
} as const;

const NON_EMPTY_PEOPLE = { ...PEOPLE, minItems: 1 } as const;

const ATTACHMENT = {
  type: "object",
  additionalProperties: false,
  required: ["id", "filename", "content_type", "size", "is_inline"],
  properties: {
    id: {
      type: "string",
      minLength: 1,
      description: "stable id within the message; {attachment_id} in URLs",
    },
    filename: { type: "string" },
    content_type: { type: "string" },
    size: { type: "integer", minimum: 0, description: "bytes" },
    is_inline: { type: "boolean" },
    content_id: { type: "string", minLength: 1 },
    sha256: { type: "string", pattern: "^[0-9a-f]{64}$" },
  },
} as const;

/** The generic@1 JSON Schema document with `$id` `{schemaBase}/transform/generic@1`. */
export function genericSchema(schemaBase: string): Record<string, unknown> {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `${schemaBase.replace(/\/+$/, "")}/transform/generic@1`,
    title: "mailhook generic@1",
    description: "Body delivered by the map.generic_json pipeline step.",
    type: "object",
    additionalProperties: false,
    required: ["schema", "event", "message", "body", "meta"],
    properties: {
      schema: {
        type: "object",
        additionalProperties: false,
        required: ["name", "version"],
        properties: { name: { const: "generic" }, version: { const: "1" } },
      },
      event: {
        type: "object",
        additionalProperties: false,
        required: ["id", "project_id", "route_id", "created_at"],
        properties: {
          id: { type: "string", minLength: 1 },
          project_id: { type: "string", minLength: 1 },
          route_id: { type: "string", minLength: 1 },
          created_at: TIME,
        },
      },
      message: {
        type: "object",
        additionalProperties: false,
        required: ["message_id", "message_id_type", "subject", "date", "from", "to"],
        properties: {
          message_id: {
            type: "string",
            minLength: 1,
            description: "Message-ID header value with angle brackets",
          },
          message_id_type: { enum: ["original", "synthetic"] },
          subject: { type: "string" },
          date: {
            anyOf: [TIME, { type: "null" }],
            description: "Date header; null when absent or unparseable",
          },
          from: PEOPLE,
          to: PEOPLE,
          cc: NON_EMPTY_PEOPLE,
          reply_to: NON_EMPTY_PEOPLE,
          headers: {
            type: "object",
            minProperties: 1,
            // lowercase RFC 5322 field names; repeated headers joined with ", "
            propertyNames: { pattern: "^[!-9;-@\\[-~]+$" },
            additionalProperties: { type: "string", minLength: 1 },
          },
        },
      },
      body: {
        type: "object",
        additionalProperties: false,
        required: ["attachments"],
        properties: {
          text: { type: "string", minLength: 1 },
          html: { type: "string", minLength: 1 },
          attachments: { type: "array", uniqueItems: true, items: ATTACHMENT },
        },
      },
      meta: {
        type: "object",
        additionalProperties: false,
        required: ["source", "raw_size_bytes", "received_at"],
        properties: {
          source: { enum: [...SOURCE_TYPES] },
          raw_size_bytes: { type: "integer", minimum: 0 },
          received_at: TIME,
        },
      },
      envelope: {
        type: "object",
        additionalProperties: false,
        required: ["mail_from", "rcpt_to"],
        properties: {
          mail_from: { type: "string", description: "SMTP MAIL FROM; empty for the null reverse-path" },
          rcpt_to: { type: "array", uniqueItems: true, items: { type: "string", minLength: 1 } },
        },
      },
    },
  };
}
