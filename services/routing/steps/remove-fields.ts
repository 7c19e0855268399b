/**
 * `remove_fields` (docs/routing.md § `remove_fields`): clears or removes message fields before the map
 * step sees them. The message id, the received time and each attachment's `id`, `content_type`, `size`
 * and `is_inline` cannot be removed: idempotency and download links depend on them. The paths MailWebhook
 * documents for those (`attachments[*].content_type`, `attachments[*].size`, and `attachments[*].blob_key`,
 * a storage key our payloads never carry) are accepted and leave the attachments as they are, so its
 * route configs save unchanged.
 */
import { Type } from "@sinclair/typebox";
import type { NormalizedMessage } from "../../lib/message.ts";
import { HEADER_NAME, pointer, type ValidationIssue } from "../issues.ts";
import { ARG_LIMITS, checkStringList, rejectUnknownArgs, stringListSchema } from "./args.ts";
import type { TransformStep } from "./types.ts";

/** `remove_fields` paths other than `headers.<name>`, and what removing each does to a copy. */
const FIELD_REMOVERS: Record<string, (m: NormalizedMessage) => void> = {
  subject: (m) => {
    m.subject = "";
  },
  date: (m) => {
    m.date = null;
  },
  text: (m) => {
    m.text = "";
    // What is derived from the text body goes with it: the reply text and a forwarded original's text.
    m.reply_text = "";
    if (m.forwarded) m.forwarded = { ...m.forwarded, text: "" };
  },
  html: (m) => {
    m.html = "";
  },
  from: (m) => {
    m.from = [];
  },
  to: (m) => {
    m.to = [];
  },
  cc: (m) => {
    m.cc = [];
  },
  reply_to: (m) => {
    m.reply_to = [];
  },
  headers: (m) => {
    m.headers = {};
    m.headers_multi = {};
  },
  // An empty list, not a missing key: generic@1 always carries `body.attachments` (docs/routing.md).
  attachments: (m) => {
    m.attachments = [];
  },
  "attachments[*].filename": (m) => {
    m.attachments = m.attachments.map((a) => ({ ...a, filename: "" }));
  },
  "attachments[*].content_id": (m) => {
    m.attachments = m.attachments.map(({ content_id: _, ...a }) => a);
  },
  "attachments[*].sha256": (m) => {
    m.attachments = m.attachments.map(({ sha256: _, ...a }) => a);
  },
};

/** Attachment fields a path may name that are kept as they are (see the file comment). */
const KEPT_ATTACHMENT_PATHS: readonly string[] = [
  "attachments[*].content_type",
  "attachments[*].size",
  "attachments[*].blob_key",
];

/** Every path `remove_fields` accepts, for error messages and docs; `headers.<name>` is a pattern. */
export const REMOVABLE_FIELD_PATHS: readonly string[] = [...Object.keys(FIELD_REMOVERS), "headers.<name>"];

/** Every path accepted: the removable ones and the kept attachment fields. */
const ACCEPTED_LITERAL_PATHS: readonly string[] = [...Object.keys(FIELD_REMOVERS), ...KEPT_ATTACHMENT_PATHS];

const HEADER_PREFIX = "headers.";

/** The arguments: `{paths: [field, …]}`. */
const RemoveFieldsArgs = Type.Object(
  {
    paths: stringListSchema(
      Type.Union([
        Type.Union(ACCEPTED_LITERAL_PATHS.map((path) => Type.Literal(path))),
        // `headers.` then an RFC 5322 field-name (HEADER_NAME without its `^`).
        Type.String({
          pattern: `^headers\\.${HEADER_NAME.source.slice(1)}`,
          maxLength: ARG_LIMITS.maxStringLength,
        }),
      ]),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ paths: ["html", "headers.x-internal-id", "attachments[*].sha256"] }],
  },
);

/** Null when `path` is a removable field, else the reason. */
export function removableFieldError(path: string): string | null {
  if (path in FIELD_REMOVERS || KEPT_ATTACHMENT_PATHS.includes(path)) return null;
  if (path.startsWith(HEADER_PREFIX) && HEADER_NAME.test(path.slice(HEADER_PREFIX.length))) return null;
  return `cannot remove "${path}"; removable paths: ${REMOVABLE_FIELD_PATHS.join(", ")}`;
}

/** Removes `path` from `m` (a copy the caller owns); header names are matched lowercased. */
function removeField(m: NormalizedMessage, path: string): void {
  const remover = FIELD_REMOVERS[path];
  if (remover !== undefined) {
    remover(m);
    return;
  }
  if (KEPT_ATTACHMENT_PATHS.includes(path)) return;
  if (!path.startsWith(HEADER_PREFIX)) throw new Error(`remove_fields: unsupported path ${path}`);
  const name = path.slice(HEADER_PREFIX.length).toLowerCase();
  const { [name]: _h, ...headers } = m.headers;
  const { [name]: _hm, ...multi } = m.headers_multi;
  m.headers = headers;
  m.headers_multi = multi;
}

/** The `remove_fields` step. */
export const removeFieldsStep = {
  name: "remove_fields",
  kind: "transform",
  summary: "Removes or clears message fields before the map step sees them.",
  args: RemoveFieldsArgs,
  validate(args, path) {
    const issues: ValidationIssue[] = [];
    rejectUnknownArgs(args, ["paths"], path, issues);
    if (args.paths === undefined) {
      issues.push({
        path: pointer(path, "paths"),
        message: `required: fields to remove (${REMOVABLE_FIELD_PATHS.join(", ")})`,
      });
    } else {
      checkStringList(args.paths, pointer(path, "paths"), removableFieldError, issues);
    }
    return issues;
  },
  apply(message, args) {
    // Every remover replaces a top-level field of the copy and never writes into a shared object.
    const next = { ...message };
    for (const path of args.paths) removeField(next, path);
    return next;
  },
} as const satisfies TransformStep<typeof RemoveFieldsArgs>;
