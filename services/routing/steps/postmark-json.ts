/**
 * `map.postmark_json` (docs/receivers.md § Postmark-compatible body): the body of Postmark's inbound
 * webhook, field for field, so code written for Postmark (Rails Action Mailbox's Postmark ingress,
 * django-anymail's Postmark inbound view, the Postmark SDK types) reads it unchanged.
 *
 * Where the service's model differs from Postmark's:
 * - `MessageID` is Postmark's own id of the inbound message, not the Message-ID header; here it is the
 *   event id (a UUID, stable across retries). The Message-ID header is in `Headers`.
 * - `Headers` lists the message's headers except those Postmark gives as fields of their own (From, To,
 *   Cc, Bcc, Subject, Date, Reply-To) and the MIME structure headers (Content-Type,
 *   Content-Transfer-Encoding), which describe the raw message, not this JSON. Names are the usual
 *   spelling (`Message-ID`, `X-Spam-Status`): the service keeps header names lowercased.
 * - `RawEmail` (with `include_raw_email`) is the raw message as text: bytes that are not UTF-8 become
 *   U+FFFD. `map.raw_mime` sends the exact bytes.
 */
import { type Static, Type } from "@sinclair/typebox";
import type { NormalizedMessage } from "../../lib/message.ts";
import { pointer, type ValidationIssue } from "../issues.ts";
import { rejectUnknownArgs } from "./args.ts";
import type { JsonBody, MapDeps, MapInput, MapStep } from "./types.ts";

const PostmarkJsonArgs = Type.Object(
  {
    include_raw_email: Type.Optional(
      Type.Boolean({ default: false, description: "add RawEmail: the raw message as text" }),
    ),
  },
  { additionalProperties: false, examples: [{}, { include_raw_email: true }] },
);

/** One address as Postmark gives it in `FromFull`, `ToFull`, `CcFull`. */
export interface PostmarkAddress {
  Email: string;
  Name: string;
  MailboxHash: string;
}

/** Headers left out of `Headers` (lowercase). */
const OWN_FIELD_HEADERS = new Set([
  "from",
  "to",
  "cc",
  "bcc",
  "subject",
  "date",
  "reply-to",
  "content-type",
  "content-transfer-encoding",
]);

/** Header name words spelled in capitals. */
const UPPER_WORDS = new Set(["id", "mime", "dkim", "arc", "spf", "smtp", "ip", "ms", "uid", "bimi", "dmarc"]);

/** `x-spam-status` → `X-Spam-Status`, `message-id` → `Message-ID`. */
export function headerSpelling(name: string): string {
  return name
    .split("-")
    .map((w) => (UPPER_WORDS.has(w) ? w.toUpperCase() : w.charAt(0).toUpperCase() + w.slice(1)))
    .join("-");
}

/** The `+tag` of an address's local part, or "". */
export function mailboxHash(email: string): string {
  const local = email.slice(0, Math.max(email.lastIndexOf("@"), 0));
  const plus = local.indexOf("+");
  return plus < 0 ? "" : local.slice(plus + 1);
}

function full(p: { email: string; name: string }): PostmarkAddress {
  return { Email: p.email, Name: p.name, MailboxHash: mailboxHash(p.email) };
}

/** An address list as a header-style string: `"Name" <email>, email`. */
function addressLine(list: readonly { email: string; name: string }[]): string {
  return list
    .map((p) =>
      p.name === "" ? p.email : `"${p.name.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}" <${p.email}>`,
    )
    .join(", ");
}

/** `Headers`: every header but the excluded ones, repeated ones once per value, in stored order. */
function headerList(m: NormalizedMessage): { Name: string; Value: string }[] {
  const out: { Name: string; Value: string }[] = [];
  for (const [name, value] of Object.entries(m.headers)) {
    if (OWN_FIELD_HEADERS.has(name)) continue;
    const values = m.headers_multi[name] ?? [value];
    for (const v of values) out.push({ Name: headerSpelling(name), Value: v });
  }
  return out;
}

/** RFC 5322 date of an RFC 3339 time, for messages without a Date header. */
function rfc5322Date(iso: string | undefined): string {
  const d = iso === undefined ? null : new Date(iso);
  return d === null || Number.isNaN(d.getTime()) ? "" : d.toUTCString().replace("GMT", "+0000");
}

/** Builds the Postmark body; attachment bytes and the raw message are read through `deps`. */
export async function buildPostmarkBody(
  args: Static<typeof PostmarkJsonArgs>,
  input: MapInput,
  deps: Pick<MapDeps, "readRaw" | "readAttachment">,
): Promise<Record<string, unknown>> {
  const m = input.message;
  const from = m.from[0] ?? { email: "", name: "" };
  const to = m.to;
  const cc = m.cc ?? [];
  const original = input.envelope?.rcpt_to[0] ?? to[0]?.email ?? "";
  const attachments = [];
  for (const a of m.attachments) {
    if (deps.readAttachment === undefined) throw new Error("attachment contents are not available here");
    const bytes = await deps.readAttachment(a.id);
    attachments.push({
      Name: a.filename,
      Content: Buffer.from(bytes).toString("base64"),
      ContentType: a.content_type,
      ContentLength: a.size,
      ContentID: (a.content_id ?? "").replace(/^<(.*)>$/, "$1"),
    });
  }
  const body: Record<string, unknown> = {
    FromName: from.name,
    MessageStream: "inbound",
    From: from.email,
    FromFull: full(from),
    To: addressLine(to),
    ToFull: to.map(full),
    Cc: addressLine(cc),
    CcFull: cc.map(full),
    Bcc: "",
    BccFull: [],
    OriginalRecipient: original,
    Subject: m.subject,
    MessageID: input.event?.id ?? "",
    ReplyTo: addressLine(m.reply_to ?? []),
    MailboxHash: mailboxHash(original),
    Date: m.headers.date ?? rfc5322Date(m.received_at ?? undefined),
    TextBody: m.text,
    HtmlBody: m.html,
    StrippedTextReply: m.reply_text !== undefined && m.reply_text !== "" ? m.reply_text : m.text,
    Tag: "",
    Headers: headerList(m),
    Attachments: attachments,
  };
  if (args.include_raw_email === true) {
    if (deps.readRaw === undefined) throw new Error("the raw message is not available here");
    body.RawEmail = new TextDecoder("utf-8").decode(await deps.readRaw());
  }
  return body;
}

/** The `map.postmark_json` step. */
export const postmarkJsonStep = {
  name: "map.postmark_json",
  kind: "map",
  summary: "POSTs the body of Postmark's inbound webhook (From, ToFull, TextBody, Headers, Attachments, …).",
  args: PostmarkJsonArgs,
  validate(args, path) {
    const issues: ValidationIssue[] = [];
    rejectUnknownArgs(args, ["include_raw_email"], path, issues);
    if (args.include_raw_email !== undefined && typeof args.include_raw_email !== "boolean")
      issues.push({ path: pointer(path, "include_raw_email"), message: "must be a boolean" });
    return issues;
  },
  async build(args, input, deps): Promise<JsonBody> {
    return {
      kind: "json",
      contentType: "application/json",
      value: await buildPostmarkBody(args, input, deps),
    };
  },
} as const satisfies MapStep<typeof PostmarkJsonArgs>;
