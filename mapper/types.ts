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
  thread_id?: string;
  reply_text?: string;
  text_source?: TextSource;
  forwarded?: MapperForwarded | null;
  auto?: MapperAuto;
  auth?: MapperAuth;
  spam?: MapperSpam | null;
  message_id_conflict?: boolean;
}

/**
 * What the service understands about a message beyond its parse (docs/parsing.md, "What the service
 * understands"): computed once at intake and stored with the message, then shown to the mapper as
 * `message.*`, in the event detail as `message.mail` and in generic@2.
 */
export interface MessageUnderstanding {
  /** the first Message-ID of References (else of In-Reply-To, else the message's own), brackets kept */
  thread_id: string;
  /** the new content of the text body: quotes, a trailing forward block and the signature removed */
  reply_text: string;
  /** where `text` came from: the text body, derived from the HTML body, or no body at all */
  text_source: TextSource;
  /** the first forwarded original found (inline forward block or attached message/rfc822), or null */
  forwarded: MapperForwarded | null;
  auto: MapperAuto;
  auth: MapperAuth;
  /** null when no scanner is configured (or the scanner failed) */
  spam: MapperSpam | null;
  /** true when the project already holds a message with this Message-ID and different bytes */
  message_id_conflict: boolean;
}

export type TextSource = "text" | "html" | "none";

/** A forwarded original. */
export interface MapperForwarded {
  from: MapperPerson[];
  to: MapperPerson[];
  cc: MapperPerson[];
  /** RFC 3339 UTC, or null when absent or unparseable */
  date: string | null;
  subject: string;
  message_id: string | null;
  text: string;
}

/** What kind of automated mail a message is, `none` for mail a person wrote. */
export const AUTO_KINDS = [
  "none",
  "auto_reply",
  "bounce",
  "delivery_report",
  "read_receipt",
  "list",
  "auto_generated",
] as const;
export type AutoKind = (typeof AUTO_KINDS)[number];

/** RFC 3464 facts of the first failed (else first) recipient of a delivery status notification. */
export interface MapperDsn {
  action: string | null;
  status: string | null;
  final_recipient: string | null;
  diagnostic_code: string | null;
  original_message_id: string | null;
}

export interface MapperAuto {
  kind: AutoKind;
  /** the Auto-Submitted header value, or null */
  auto_submitted: string | null;
  /** the List-Id header value, or null */
  list_id: string | null;
  dsn: MapperDsn | null;
}

/** RFC 8601 result words, lowercase. */
export const AUTH_RESULTS = [
  "pass",
  "fail",
  "softfail",
  "neutral",
  "none",
  "temperror",
  "permerror",
] as const;
export type AuthResult = (typeof AUTH_RESULTS)[number];

/** Where an authentication verdict came from. */
export type AuthSource = "smtp" | "trusted_header" | "none";

export interface MapperAuth {
  source: AuthSource;
  spf: { result: AuthResult; domain: string | null };
  dkim: { result: AuthResult; domain: string; selector: string | null; aligned: boolean }[];
  dmarc: { result: AuthResult; policy: "none" | "quarantine" | "reject" | null; domain: string | null };
  arc: { result: AuthResult };
}

/** A spam verdict from rspamd. */
export interface MapperSpam {
  score: number;
  action: string;
  symbols: string[];
}

/** The verdict of a message nothing was computed for: every result `none`. */
export function noAuth(): MapperAuth {
  return {
    source: "none",
    spf: { result: "none", domain: null },
    dkim: [],
    dmarc: { result: "none", policy: null, domain: null },
    arc: { result: "none" },
  };
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
