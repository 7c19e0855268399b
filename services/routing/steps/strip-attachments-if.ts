/**
 * `strip_attachments_if` (docs/routing.md § `strip_attachments_if`): drops every attachment that meets
 * ALL the conditions given; "this OR that" is two steps. At least one condition must be given, so an
 * empty step never strips everything (an empty `mime_in` is no condition). Filename patterns run on RE2
 * (mapper/regex.ts), never on the host regex engine.
 *
 * Sizes: `max_size_kb` is MailWebhook's condition, "larger than this many KiB". `min_size_bytes` and
 * `max_size_bytes` bound the sizes of the attachments to strip ("at least", "at most"), as they always
 * have, so stored routes keep stripping what they stripped.
 */
import { type Static, Type } from "@sinclair/typebox";
import { regexError, regexTest } from "../../../mapper/regex.ts";
import type { AttachmentDescriptor } from "../../lib/message.ts";
import { bareMimeType, globMatch, MIME_GLOB, mimeGlobError } from "../glob.ts";
import { pointer, type ValidationIssue } from "../issues.ts";
import { ARG_LIMITS, checkStringList, rejectUnknownArgs, stringListSchema } from "./args.ts";
import type { TransformStep } from "./types.ts";

const byteCount = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

/** The arguments: the conditions, each optional, at least one given. */
const StripAttachmentsIfArgs = Type.Object(
  {
    mime_in: Type.Optional(
      Type.Array(Type.String({ pattern: MIME_GLOB.source, maxLength: ARG_LIMITS.maxStringLength }), {
        maxItems: ARG_LIMITS.maxListLength,
      }),
    ),
    filename_glob: Type.Optional(
      stringListSchema(Type.String({ minLength: 1, maxLength: ARG_LIMITS.maxStringLength })),
    ),
    filename_regex: Type.Optional(
      Type.String({ minLength: 1, description: "RE2 pattern searched in the filename, case-insensitive" }),
    ),
    max_size_kb: Type.Optional(
      Type.Number({
        minimum: 0,
        description: "strip attachments larger than this many KiB (1 KiB = 1024 bytes)",
      }),
    ),
    min_size_bytes: Type.Optional(byteCount),
    max_size_bytes: Type.Optional(byteCount),
    is_inline: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [
      { mime_in: ["image/*"], max_size_bytes: 10_240, is_inline: true },
      { mime_in: ["application/octet-stream"], max_size_kb: 1024, filename_regex: "(?i)\\.(exe|scr)$" },
    ],
  },
);

/** `strip_attachments_if` args. Every condition given must hold for an attachment to be stripped. */
export type StripConditions = Static<typeof StripAttachmentsIfArgs>;

/** The argument names `strip_attachments_if` accepts, in the schema's order. */
export const STRIP_CONDITION_KEYS = Object.keys(
  StripAttachmentsIfArgs.properties,
) as (keyof StripConditions)[];

/** True when `a` meets every condition given in `c`. */
export function attachmentMatches(a: AttachmentDescriptor, c: StripConditions): boolean {
  if (c.mime_in !== undefined && c.mime_in.length > 0) {
    const mime = bareMimeType(a.content_type);
    if (!c.mime_in.some((g) => globMatch(g.trim(), mime))) return false;
  }
  if (c.filename_glob !== undefined && !c.filename_glob.some((g) => globMatch(g, a.filename))) return false;
  if (c.filename_regex !== undefined && regexTest(`(?i)${c.filename_regex}`, a.filename) !== true)
    return false;
  if (c.max_size_kb !== undefined && !(a.size > c.max_size_kb * 1024)) return false;
  if (c.min_size_bytes !== undefined && a.size < c.min_size_bytes) return false;
  if (c.max_size_bytes !== undefined && a.size > c.max_size_bytes) return false;
  if (c.is_inline !== undefined && a.is_inline !== c.is_inline) return false;
  return true;
}

function validateConditions(args: Readonly<Record<string, unknown>>, path: string): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  rejectUnknownArgs(args, STRIP_CONDITION_KEYS, path, issues);
  const given = (k: string) =>
    args[k] !== undefined && !(k === "mime_in" && Array.isArray(args[k]) && args[k].length === 0);
  if (!STRIP_CONDITION_KEYS.some(given)) {
    issues.push({
      path,
      message: `needs at least one condition (an empty mime_in is none): ${STRIP_CONDITION_KEYS.join(", ")}`,
    });
    return issues;
  }
  if (given("mime_in")) checkStringList(args.mime_in, pointer(path, "mime_in"), mimeGlobError, issues);
  if (args.filename_glob !== undefined) {
    const nonEmpty = (s: string) => (s === "" ? "must not be empty" : null);
    checkStringList(args.filename_glob, pointer(path, "filename_glob"), nonEmpty, issues);
  }
  if (args.filename_regex !== undefined) {
    const at = pointer(path, "filename_regex");
    if (typeof args.filename_regex !== "string" || args.filename_regex === "") {
      issues.push({ path: at, message: "must be a non-empty RE2 pattern string" });
    } else {
      const err = regexError(`(?i)${args.filename_regex}`);
      if (err !== null) issues.push({ path: at, message: `invalid RE2 regular expression: ${err}` });
    }
  }
  for (const key of ["min_size_bytes", "max_size_bytes"] as const) {
    const v = args[key];
    if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) >= 0)) {
      issues.push({ path: pointer(path, key), message: "must be a non-negative integer (bytes)" });
    }
  }
  const kb = args.max_size_kb;
  if (kb !== undefined && !(typeof kb === "number" && Number.isFinite(kb) && kb >= 0)) {
    issues.push({ path: pointer(path, "max_size_kb"), message: "must be a non-negative number (KiB)" });
  }
  const { min_size_bytes: min, max_size_bytes: max } = args;
  if (typeof min === "number" && typeof max === "number" && min > max) {
    issues.push({ path: pointer(path, "min_size_bytes"), message: "must not exceed max_size_bytes" });
  }
  if (args.is_inline !== undefined && typeof args.is_inline !== "boolean") {
    issues.push({ path: pointer(path, "is_inline"), message: "must be a boolean" });
  }
  return issues;
}

/** The `strip_attachments_if` step. */
export const stripAttachmentsIfStep = {
  name: "strip_attachments_if",
  kind: "transform",
  summary: "Removes every attachment that meets all the conditions given.",
  args: StripAttachmentsIfArgs,
  validate: validateConditions,
  apply(message, conditions) {
    return { ...message, attachments: message.attachments.filter((a) => !attachmentMatches(a, conditions)) };
  },
} as const satisfies TransformStep<typeof StripAttachmentsIfArgs>;
