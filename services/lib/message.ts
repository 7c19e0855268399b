/**
 * The normalised message model (contract section 4): what the mapper, the generic body and route rules
 * see. Produced by `services/ingest/parse.ts` from the raw RFC 5322 bytes.
 */

/** One address. `email` is lowercased; `name` is the decoded display name or "". */
export interface Person {
  email: string;
  name: string;
}

/** Attachment descriptor exactly as the spec's table; no bytes, no URL, no storage fields. */
export interface AttachmentDescriptor {
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

export interface NormalizedMessage {
  /** the Message-ID header value including angle brackets, e.g. `<abc@example.com>` */
  message_id: string;
  message_id_is_synthetic: boolean;
  subject: string;
  /** RFC 3339 UTC, whole seconds, or null when the Date header is absent or unparseable */
  date: string | null;
  /** RFC 3339 UTC time the service accepted the message */
  received_at: string;
  from: Person[];
  to: Person[];
  cc: Person[];
  reply_to: Person[];
  /** lowercase header name → value; repeated headers joined with ", " */
  headers: Record<string, string>;
  /** lowercase header name → all values, only for headers that occur more than once */
  headers_multi: Record<string, string[]>;
  /** plain-text body, "" when absent */
  text: string;
  /** HTML body, "" when absent */
  html: string;
  attachments: AttachmentDescriptor[];
}

/** SMTP envelope, kept for `source_type = smtp`. */
export interface Envelope {
  mail_from: string;
  rcpt_to: string[];
}

/**
 * Where a message came in: one name per intake source (docs/architecture.md, "Adding an intake source").
 * Stored as `messages.source_type` and published as generic@1 `meta.source`, so a new value is a change
 * of that public schema.
 */
export const SOURCE_TYPES = ["smtp", "api"] as const;

/** One of {@link SOURCE_TYPES}. */
export type SourceType = (typeof SOURCE_TYPES)[number];

/**
 * The pipeline's metadata a mapper sees as `meta` (the same facts as generic@1's `meta`): where the
 * message came from. Delivery and every preview build it here, so a mapper reading `meta.*` previews as
 * it delivers.
 */
export function pipelineMeta(
  source: SourceType,
  rawSizeBytes: number,
  receivedAt: string,
): { source: SourceType; raw_size_bytes: number; received_at: string } {
  return { source, raw_size_bytes: rawSizeBytes, received_at: receivedAt };
}
