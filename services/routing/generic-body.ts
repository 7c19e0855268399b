/**
 * The `map.generic_json` output, schema `generic@1` (docs/routing.md). Deterministic: the same input
 * gives a byte-identical `JSON.stringify`, because every object is built in a fixed key order, every list
 * is sorted by code-unit comparison (never locale-dependent), and times are normalised to whole seconds.
 * The body's shape is declared once, as the schema in ./schemas/generic.ts that is also published.
 */
import type {
  AttachmentDescriptor,
  Envelope,
  NormalizedMessage,
  Person,
  SourceType,
} from "../lib/message.ts";
import { understandingOf } from "../lib/understanding.ts";
import type { GenericAttachment, GenericBody, GenericBodyV2 } from "./schemas/generic.ts";

export type { GenericAttachment, GenericBody, GenericBodyV2 };

/** Input to `buildGenericBody`. */
export interface GenericBodyInput {
  event: { id: string; project_id: string; route_id: string; created_at: string | Date };
  /** the message after the pipeline's transform steps */
  message: NormalizedMessage;
  rawSizeBytes: number;
  sourceType: SourceType;
  /** the SMTP envelope, when the message came over SMTP */
  envelope?: Envelope;
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** RFC 3339 UTC with whole seconds and `Z` (fraction truncated); throws RangeError on an invalid time. */
export function toWholeSecondsUtc(value: string | Date): string {
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) throw new RangeError(`invalid time: ${String(value)}`);
  return `${date.toISOString().slice(0, 19)}Z`;
}

function people(list: readonly Person[]): Person[] {
  return list
    .map((p) => ({ email: p.email.trim().toLowerCase(), name: p.name.trim() }))
    .sort((a, b) => compare(a.email, b.email) || compare(a.name, b.name));
}

/** Lowercased names, unfolded trimmed values, empty values dropped, names sorted. */
function normaliseHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const merged = new Map<string, string[]>();
  for (const name of Object.keys(headers).sort(compare)) {
    const value = (headers[name] ?? "").replace(/\r?\n[\t ]*/g, " ").trim();
    if (value === "") continue;
    const key = name.toLowerCase();
    merged.set(key, [...(merged.get(key) ?? []), value]);
  }
  const out: Record<string, string> = {};
  for (const key of [...merged.keys()].sort(compare)) out[key] = (merged.get(key) ?? []).join(", ");
  return out;
}

function attachment(a: AttachmentDescriptor): GenericAttachment {
  const out: GenericAttachment = {
    id: a.id,
    filename: a.filename,
    content_type: a.content_type,
    size: a.size,
    is_inline: a.is_inline,
  };
  if (a.content_id) out.content_id = a.content_id;
  if (a.sha256) out.sha256 = a.sha256;
  return out;
}

function dateOrNull(value: string | null): string | null {
  if (value === null) return null;
  try {
    return toWholeSecondsUtc(value);
  } catch {
    return null;
  }
}

/**
 * Builds the generic@2 body for one event: the generic@1 body with the schema version "2", what the
 * service understands about the message (defaults for a message stored before it was computed) in
 * `message` and `body`, and `spam`. Key order is fixed as the schema lists the members.
 */
export function buildGenericBodyV2(input: GenericBodyInput): GenericBodyV2 {
  const v1 = buildGenericBody(input);
  const u = understandingOf(input.message);
  const forwarded =
    u.forwarded === null
      ? null
      : {
          from: people(u.forwarded.from),
          to: people(u.forwarded.to),
          cc: people(u.forwarded.cc),
          date: dateOrNull(u.forwarded.date),
          subject: u.forwarded.subject,
          message_id: u.forwarded.message_id,
          text: u.forwarded.text,
        };
  const { text, html, attachments } = v1.body;
  const out: GenericBodyV2 = {
    schema: { name: "generic", version: "2" },
    event: v1.event,
    message: {
      ...v1.message,
      thread_id: u.thread_id,
      auto: {
        kind: u.auto.kind,
        auto_submitted: u.auto.auto_submitted,
        list_id: u.auto.list_id,
        dsn: u.auto.dsn === null ? null : { ...u.auto.dsn },
      },
      auth: {
        source: u.auth.source,
        spf: { result: u.auth.spf.result, domain: u.auth.spf.domain },
        dkim: u.auth.dkim.map((d) => ({
          result: d.result,
          domain: d.domain,
          selector: d.selector,
          aligned: d.aligned,
        })),
        dmarc: { result: u.auth.dmarc.result, policy: u.auth.dmarc.policy, domain: u.auth.dmarc.domain },
        arc: { result: u.auth.arc.result },
      },
      forwarded,
      message_id_conflict: u.message_id_conflict,
    },
    body: {
      ...(text !== undefined ? { text } : {}),
      ...(html !== undefined ? { html } : {}),
      attachments,
      reply_text: u.reply_text,
      text_source: u.text_source,
    },
    meta: v1.meta,
    ...(v1.envelope !== undefined ? { envelope: v1.envelope } : {}),
    spam:
      u.spam === null ? null : { score: u.spam.score, action: u.spam.action, symbols: [...u.spam.symbols] },
  };
  return out;
}

/** Builds the generic@1 body for one event. */
export function buildGenericBody(input: GenericBodyInput): GenericBody {
  const { event, message: m, envelope } = input;
  const message: GenericBody["message"] = {
    message_id: m.message_id,
    message_id_type: m.message_id_is_synthetic ? "synthetic" : "original",
    subject: m.subject,
    date: dateOrNull(m.date),
    from: people(m.from),
    to: people(m.to),
  };
  if (m.cc.length > 0) message.cc = people(m.cc);
  if (m.reply_to.length > 0) message.reply_to = people(m.reply_to);
  const headers = normaliseHeaders(m.headers);
  if (Object.keys(headers).length > 0) message.headers = headers;

  // Key order text, html, attachments is part of the byte-identical output.
  const body: GenericBody["body"] = {
    ...(m.text !== "" ? { text: m.text } : {}),
    ...(m.html !== "" ? { html: m.html } : {}),
    attachments: m.attachments
      .map(attachment)
      .sort((a, b) => compare(a.filename, b.filename) || a.size - b.size || compare(a.id, b.id)),
  };

  const out: GenericBody = {
    schema: { name: "generic", version: "1" },
    event: {
      id: event.id,
      project_id: event.project_id,
      route_id: event.route_id,
      created_at: toWholeSecondsUtc(event.created_at),
    },
    message,
    body,
    meta: {
      source: input.sourceType,
      raw_size_bytes: input.rawSizeBytes,
      received_at: toWholeSecondsUtc(m.received_at),
    },
  };
  if (envelope !== undefined) {
    const rcpt = [...new Set(envelope.rcpt_to.map((r) => r.trim().toLowerCase()))].sort(compare);
    out.envelope = { mail_from: envelope.mail_from.trim().toLowerCase(), rcpt_to: rcpt };
  }
  return out;
}
