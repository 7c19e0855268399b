/**
 * Shapes the mapper sees, and the one declaration of the normalised message model (docs/parsing.md,
 * "The message"). The mapper is a pure library and depends on nothing in services/, so the model is
 * declared here and services/lib/message.ts derives the service's stricter `NormalizedMessage` (every
 * field present) from `MapperMessage`. The mapper itself also accepts messages that omit the optional
 * fields.
 */

/** Any JSON value. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** One address. `email` is lowercased; `name` is the decoded display name or "". */
export interface MapperPerson {
  email: string;
  name: string;
}

/** Attachment descriptor exactly as the spec's table; no bytes, no URL, no storage fields. */
export interface MapperAttachment {
  /** stable within the message: derived from the MIME part position */
  id: string;
  filename: string;
  content_type: string;
  size: number;
  is_inline: boolean;
  content_id?: string;
  /** lowercase hex SHA-256 of the bytes */
  sha256?: string;
}

/**
 * The `message` object of the evaluation root. The service always sends every field; the optional ones
 * may be absent in messages handed to the mapper directly (the REPL, tests).
 */
export interface MapperMessage {
  /** the Message-ID header value including angle brackets, e.g. `<abc@example.com>` */
  message_id: string;
  message_id_is_synthetic?: boolean;
  subject: string;
  /** RFC 3339 UTC, whole seconds, or null when the Date header is absent or unparseable */
  date?: string | null;
  /** RFC 3339 UTC time the service accepted the message */
  received_at?: string;
  from: MapperPerson[];
  to: MapperPerson[];
  cc?: MapperPerson[];
  reply_to?: MapperPerson[];
  /** lowercase header name → value; repeated headers joined with ", " */
  headers: Record<string, string>;
  /** lowercase header name → all values, only for headers that occur more than once */
  headers_multi?: Record<string, string[]>;
  /** plain-text body, "" when absent */
  text: string;
  /** HTML body, "" when absent */
  html: string;
  attachments: MapperAttachment[];
}

/** The `ctx` object of the evaluation root. `now` is the only clock the mapper ever reads. */
export interface MapperContext {
  event_id?: string;
  project_id?: string;
  route_id?: string;
  source_type?: string;
  raw_size_bytes?: number;
  now?: string;
  [key: string]: unknown;
}

/** Input of a compiled mapper. */
export interface MapperInput {
  message: MapperMessage | Record<string, unknown>;
  ctx: MapperContext;
  meta?: Record<string, unknown>;
}

/** The v1 config (`map.custom_json` args). */
export interface MapperConfig {
  version: "v1";
  vars?: { name: string; expr: unknown; description?: string }[];
  output: unknown;
  meta?: Record<string, unknown>;
}
