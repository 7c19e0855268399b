/**
 * The `generic@1` body (docs/routing.md, "The generic@1 body"), declared once as a TypeBox schema: the
 * builder's type (`GenericBody`, services/routing/generic-body.ts) is derived from it, and the JSON
 * Schema (2020-12) served at `GET /v1/schemas/transform/generic@1` is the same object. Ordering and
 * determinism rules cannot be expressed in JSON Schema; the builder enforces them and its tests check
 * them, and the builder's output is validated against this schema.
 */
import { type Static, type TSchema, type TUnsafe, Type } from "@sinclair/typebox";
import { AUTH_RESULTS, AUTO_KINDS } from "../../../mapper/types.ts";
import { SOURCE_TYPES, type SourceType } from "../../lib/message.ts";

/** One of `values`, published as `enum` (as the schema always was), typed as their union. */
const oneOf = <const T extends readonly string[]>(values: T) => Type.Unsafe<T[number]>({ enum: [...values] });

/** Exactly `value`, published as `const`, typed as that literal. */
const exactly = <const T extends string>(value: T) => Type.Unsafe<T>({ const: value });

/** Whole-second RFC 3339 UTC, as the builder emits. */
const TIME = Type.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z$" });

const PERSON = Type.Object(
  {
    email: Type.String({ description: "lowercased address" }),
    name: Type.String({ description: "display name, empty when absent" }),
  },
  { additionalProperties: false },
);

const ATTACHMENT = Type.Object(
  {
    id: Type.String({ minLength: 1, description: "stable id within the message; {attachment_id} in URLs" }),
    filename: Type.String(),
    content_type: Type.String(),
    size: Type.Integer({ minimum: 0, description: "bytes" }),
    is_inline: Type.Boolean(),
    content_id: Type.Optional(Type.String({ minLength: 1 })),
    sha256: Type.Optional(Type.String({ pattern: "^[0-9a-f]{64}$" })),
  },
  { additionalProperties: false },
);

/**
 * Lowercase RFC 5322 field name → value, repeated headers joined with ", ". Written as `propertyNames`
 * plus `additionalProperties`, which TypeBox's `Record` (a `patternProperties` form) does not emit.
 */
const HEADERS: TUnsafe<Record<string, string>> = Type.Unsafe<Record<string, string>>({
  type: "object",
  minProperties: 1,
  propertyNames: { pattern: "^[!-9;-@\\[-~]+$" },
  additionalProperties: { type: "string", minLength: 1 },
});

const ENVELOPE = Type.Object(
  {
    mail_from: Type.String({ description: "SMTP MAIL FROM; empty for the null reverse-path" }),
    rcpt_to: Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true }),
  },
  { additionalProperties: false },
);

/** The generic@1 body. Optional members are omitted (not null, not empty) when there is nothing to say. */
export const GenericBodySchema = Type.Object(
  {
    schema: Type.Object({ name: exactly("generic"), version: exactly("1") }, { additionalProperties: false }),
    event: Type.Object(
      {
        id: Type.String({ minLength: 1 }),
        project_id: Type.String({ minLength: 1 }),
        route_id: Type.String({ minLength: 1 }),
        created_at: TIME,
      },
      { additionalProperties: false },
    ),
    message: Type.Object(
      {
        message_id: Type.String({ minLength: 1, description: "Message-ID header value with angle brackets" }),
        message_id_type: oneOf(["original", "synthetic"]),
        subject: Type.String(),
        date: Type.Union([TIME, Type.Null()], {
          description: "Date header; null when absent or unparseable",
        }),
        from: Type.Array(PERSON),
        to: Type.Array(PERSON),
        cc: Type.Optional(Type.Array(PERSON, { minItems: 1 })),
        reply_to: Type.Optional(Type.Array(PERSON, { minItems: 1 })),
        headers: Type.Optional(HEADERS),
      },
      { additionalProperties: false },
    ),
    body: Type.Object(
      {
        text: Type.Optional(Type.String({ minLength: 1 })),
        html: Type.Optional(Type.String({ minLength: 1 })),
        attachments: Type.Array(ATTACHMENT, { uniqueItems: true }),
      },
      { additionalProperties: false },
    ),
    meta: Type.Object(
      {
        source: Type.Unsafe<SourceType>({ enum: [...SOURCE_TYPES] }),
        raw_size_bytes: Type.Integer({ minimum: 0 }),
        received_at: TIME,
      },
      { additionalProperties: false },
    ),
    envelope: Type.Optional(ENVELOPE),
  },
  { additionalProperties: false },
);

/** The generic@1 body, as `buildGenericBody` returns it. */
export type GenericBody = Static<typeof GenericBodySchema>;

/** A generic@1 attachment: the descriptor, optional fields omitted when absent. */
export type GenericAttachment = Static<typeof ATTACHMENT>;

/**
 * One of `values` as a union of literals: the members added in generic@2 are also part of API views,
 * which the API validates, so they use TypeBox kinds (published as `anyOf` of `const`).
 */
const literals = <const T extends readonly string[]>(values: T) =>
  Type.Union(values.map((v) => Type.Literal(v))) as unknown as TUnsafe<T[number]>;

const RESULT = literals(AUTH_RESULTS);
const NULLABLE_STRING = Type.Union([Type.String(), Type.Null()]);

const AUTO = Type.Object(
  {
    kind: literals(AUTO_KINDS),
    auto_submitted: Type.Union([Type.String(), Type.Null()], { description: "Auto-Submitted header" }),
    list_id: Type.Union([Type.String(), Type.Null()], { description: "List-Id header" }),
    dsn: Type.Union([
      Type.Object(
        {
          action: NULLABLE_STRING,
          status: NULLABLE_STRING,
          final_recipient: NULLABLE_STRING,
          diagnostic_code: NULLABLE_STRING,
          original_message_id: NULLABLE_STRING,
        },
        { additionalProperties: false },
      ),
      Type.Null(),
    ]),
  },
  { additionalProperties: false },
);

const AUTH = Type.Object(
  {
    source: literals(["smtp", "trusted_header", "none"]),
    spf: Type.Object({ result: RESULT, domain: NULLABLE_STRING }, { additionalProperties: false }),
    dkim: Type.Array(
      Type.Object(
        { result: RESULT, domain: Type.String(), selector: NULLABLE_STRING, aligned: Type.Boolean() },
        { additionalProperties: false },
      ),
    ),
    dmarc: Type.Object(
      {
        result: RESULT,
        policy: Type.Union([literals(["none", "quarantine", "reject"]), Type.Null()]),
        domain: NULLABLE_STRING,
      },
      { additionalProperties: false },
    ),
    arc: Type.Object({ result: RESULT }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);

/** A forwarded original; `date` as `dateSchema` (whole seconds in the body, as stored in the detail). */
const forwardedSchema = (dateSchema: TSchema) =>
  Type.Union([
    Type.Object(
      {
        from: Type.Array(PERSON),
        to: Type.Array(PERSON),
        cc: Type.Array(PERSON),
        date: Type.Union([dateSchema, Type.Null()]),
        subject: Type.String(),
        message_id: NULLABLE_STRING,
        text: Type.String(),
      },
      { additionalProperties: false },
    ),
    Type.Null(),
  ]);
const FORWARDED = forwardedSchema(TIME);

const SPAM = Type.Union(
  [
    Type.Object(
      { score: Type.Number(), action: Type.String(), symbols: Type.Array(Type.String()) },
      { additionalProperties: false },
    ),
    Type.Null(),
  ],
  { description: "rspamd's verdict; null when no scanner is configured or it failed" },
);

/** What the service understands about a message (the event detail's `message.mail`). */
export const MessageUnderstandingSchema = Type.Object(
  {
    thread_id: Type.String(),
    reply_text: Type.String(),
    text_source: literals(["text", "html", "none"]),
    forwarded: forwardedSchema(Type.String()),
    auto: AUTO,
    auth: AUTH,
    spam: SPAM,
    message_id_conflict: Type.Boolean(),
  },
  { additionalProperties: false },
);

/**
 * The generic@2 body: every generic@1 member (the schema's version reads "2") plus what the service
 * understands about the message (docs/routing.md, "The generic@2 body").
 */
export const GenericBodyV2Schema = Type.Object(
  {
    schema: Type.Object({ name: exactly("generic"), version: exactly("2") }, { additionalProperties: false }),
    event: GenericBodySchema.properties.event,
    message: Type.Object(
      {
        ...GenericBodySchema.properties.message.properties,
        thread_id: Type.String({
          minLength: 1,
          description: "first Message-ID of References, else In-Reply-To, else its own",
        }),
        auto: AUTO,
        auth: AUTH,
        forwarded: FORWARDED,
        message_id_conflict: Type.Boolean({
          description: "the project already held a message with this Message-ID and other bytes",
        }),
      },
      { additionalProperties: false },
    ),
    body: Type.Object(
      {
        ...GenericBodySchema.properties.body.properties,
        reply_text: Type.String({ description: "the new content of the text body" }),
        text_source: literals(["text", "html", "none"]),
      },
      { additionalProperties: false },
    ),
    meta: GenericBodySchema.properties.meta,
    envelope: Type.Optional(ENVELOPE),
    spam: SPAM,
  },
  { additionalProperties: false },
);

/** The generic@2 body, as `buildGenericBody` returns it for version "2". */
export type GenericBodyV2 = Static<typeof GenericBodyV2Schema>;

/** The generic@2 JSON Schema document with `$id` `{schemaBase}/transform/generic@2`. */
export function genericV2Schema(schemaBase: string): Record<string, unknown> {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `${schemaBase.replace(/\/+$/, "")}/transform/generic@2`,
    title: "mailhook generic@2",
    description: 'Body delivered by the map.generic_json pipeline step with args {"version": "2"}.',
    ...GenericBodyV2Schema,
  };
}

/** The generic@1 JSON Schema document with `$id` `{schemaBase}/transform/generic@1`. */
export function genericSchema(schemaBase: string): Record<string, unknown> {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `${schemaBase.replace(/\/+$/, "")}/transform/generic@1`,
    title: "mailhook generic@1",
    description: "Body delivered by the map.generic_json pipeline step.",
    ...GenericBodySchema,
  };
}
