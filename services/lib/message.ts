/**
 * The normalised message model (docs/parsing.md, "The message"): what the mapper, the generic body and
 * route rules see. Produced by `services/ingest/parse.ts` from the raw RFC 5322 bytes. The fields are
 * declared once, in the mapper's `MapperMessage` (mapper/types.ts, documented there); the service's
 * message is that shape with every field present.
 */
import type {
  MapperAttachment,
  MapperMessage,
  MapperPerson,
  MessageUnderstanding,
} from "../../mapper/types.ts";

/** One address. `email` is lowercased; `name` is the decoded display name or "". */
export type Person = MapperPerson;

/** Attachment descriptor exactly as the spec's table; no bytes, no URL, no storage fields. */
export type AttachmentDescriptor = MapperAttachment;

/** A parsed message as the service stores and delivers it: {@link MapperMessage} with every field present. */
export type NormalizedMessage = Required<Omit<MapperMessage, keyof MessageUnderstanding>> &
  Partial<MessageUnderstanding>;

/** SMTP envelope, kept for `source_type = smtp`. */
export interface Envelope {
  mail_from: string;
  rcpt_to: string[];
  /** the client's HELO/EHLO name (absent in messages stored before it was kept) */
  helo?: string;
  /** the connecting address (absent in messages stored before it was kept) */
  client_ip?: string;
  /** the `+tag` of the first recipient (`box+tag@…`), absent (or null) without one */
  tag?: string | null;
}

/**
 * Where a message came in: one name per intake source (docs/architecture.md, "Adding an intake source").
 * Stored as `messages.source_type` and published as generic@1 `meta.source`, so a new value is a change
 * of that public schema.
 */
export const SOURCE_TYPES = ["smtp", "api", "imap"] as const;

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
