/**
 * Shapes the mapper sees. Copied from the service's message model (docs/parsing.md, "The message") rather than
 * imported: the mapper is a pure library and depends on nothing in services/.
 */

/** Any JSON value. */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/** An address as the mapper sees it: lowercased email, decoded display name or "". */
export interface MapperPerson {
  email: string;
  name: string;
}

/** Attachment descriptor (spec table "Attachment descriptor"). */
export interface MapperAttachment {
  id: string;
  filename: string;
  content_type: string;
  size: number;
  is_inline: boolean;
  content_id?: string;
  sha256?: string;
}

/** The `message` object of the evaluation root. */
export interface MapperMessage {
  message_id: string;
  message_id_is_synthetic?: boolean;
  subject: string;
  date?: string | null;
  received_at?: string;
  from: MapperPerson[];
  to: MapperPerson[];
  cc?: MapperPerson[];
  reply_to?: MapperPerson[];
  headers: Record<string, string>;
  headers_multi?: Record<string, string[]>;
  text: string;
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
