/**
 * The MIME policy of ingest (spec Limits "allowed attachment MIME prefixes", docs/ingest.md): every
 * attachment's declared type starts with an allowed prefix, and its content, as sniffed by
 * `file-type`, agrees with the declared type. A violation discards the message's events with
 * `last_error = mime_discard:<reason>`.
 *
 * Agreement is judged leniently where a strict comparison would discard ordinary mail: aliases are
 * one type, container formats are one family, a generic declaration makes no claim, and bytes that
 * file-type does not recognise (plain text, CSV, JSON, SVG, …) cannot contradict anything.
 */
import { fileTypeFromBuffer } from "file-type";
import {
  type AttachmentPolicy,
  POLICY_ACTIONS,
  type PolicyAction,
  type PolicyNote,
} from "../lib/attachment-policy.ts";
import type { ExtractedAttachment } from "./extract.ts";

export type { AttachmentPolicy, PolicyAction, PolicyNote };

/** Declared types must start with one of these (spec Limits). */
export const ALLOWED_TYPE_PREFIXES = ["application/", "image/", "text/"] as const;

/** Why a message is discarded; `last_error` is `mime_discard:` + reason. */
export type MimePolicyReason = "disallowed_attachment_type" | "content_type_mismatch";

/** The first attachment that breaks the policy. */
export interface MimePolicyViolation {
  reason: MimePolicyReason;
  attachment_id: string;
  detail: string;
}

/** The `last_error` text of an event discarded for this violation (spec Errors). */
export function mimeDiscardError(violation: Pick<MimePolicyViolation, "reason">): string {
  return `mime_discard:${violation.reason}`;
}

/** Other names of one type, mapped to the name file-type reports. */
const ALIASES: Record<string, string> = {
  "image/jpg": "image/jpeg",
  "image/pjpeg": "image/jpeg",
  "image/jpe": "image/jpeg",
  "image/x-png": "image/png",
  "image/x-ms-bmp": "image/bmp",
  "image/x-bmp": "image/bmp",
  "image/vnd.microsoft.icon": "image/x-icon",
  "image/ico": "image/x-icon",
  "image/x-tiff": "image/tiff",
  "application/x-pdf": "application/pdf",
  "application/acrobat": "application/pdf",
  "application/x-gzip": "application/gzip",
  "application/x-gzip-compressed": "application/gzip",
  "application/x-bzip": "application/x-bzip2",
  "application/vnd.rar": "application/x-rar-compressed",
  "application/x-rar": "application/x-rar-compressed",
  "application/x-zip-compressed": "application/zip",
  "application/zip-compressed": "application/zip",
  "application/x-zip": "application/zip",
  "application/x-gtar": "application/x-tar",
  "text/rtf": "application/rtf",
  "application/x-rtf": "application/rtf",
  "text/xml": "application/xml",
  "application/ics": "text/calendar",
  "text/x-vcalendar": "text/calendar",
  "text/x-vcard": "text/vcard",
  "text/directory": "text/vcard",
  "application/x-msdos-program": "application/x-msdownload",
  "application/x-dosexec": "application/x-msdownload",
  "application/x-ms-dos-executable": "application/x-msdownload",
  "application/vnd.microsoft.portable-executable": "application/x-msdownload",
  "application/x-eps": "application/eps",
  "application/vnd.sqlite3": "application/x-sqlite3",
  "application/font-woff": "font/woff",
  "application/x-font-woff": "font/woff",
  "application/x-font-ttf": "font/ttf",
  "application/font-sfnt": "font/ttf",
  "application/x-font-otf": "font/otf",
  "application/vnd.ms-opentype": "font/otf",
};

/** Declarations that claim nothing about the content ("some bytes"). */
const GENERIC = new Set([
  "application/octet-stream",
  "application/x-octet-stream",
  "application/binary",
  "application/x-binary",
  "application/download",
  "application/x-download",
  "application/force-download",
  "application/unknown",
  "application/save",
]);

/** Formats that share one container, so file-type may name any member for any other. */
const FAMILIES: Array<[string, (type: string) => boolean]> = [
  [
    "zip",
    (t) =>
      /^application\/(zip|java-archive|vnd\.android\.package-archive|x-xpinstall|vnd\.apple\.(keynote|numbers|pages)|vnd\.visio)$/.test(
        t,
      ) ||
      /\+zip$/.test(t) ||
      /^application\/vnd\.(openxmlformats-officedocument\.|oasis\.opendocument\.|ms-[\w-]+\.macroenabled\.12$)/.test(
        t,
      ) ||
      t === "model/3mf",
  ],
  ["cfb", (t) => /^application\/(x-cfb|x-ole-storage|x-msi|vnd\.ms-outlook|vnd\.ms-project)$/.test(t)],
  ["png", (t) => t === "image/png" || t === "image/apng"],
  ["heif", (t) => /^image\/(heic|heif)(-sequence)?$/.test(t)],
  ["ogg", (t) => /^(application|audio|video)\/ogg(;.*)?$/.test(t)],
  ["mp4", (t) => /^(application|audio|video)\/mp4$|^audio\/x-m4a$|^video\/x-m4v$/.test(t)],
  ["asf", (t) => /^(application\/vnd\.ms-asf|audio\/x-ms-asf|video\/x-ms-asf)$/.test(t)],
  ["postscript", (t) => t === "application/postscript" || t === "application/eps"],
];

/** Legacy Office types: senders use them for OLE files, OOXML zips, RTF and XML/HTML exports alike. */
const LEGACY_OFFICE = /^application\/(msword|vnd\.ms-(excel|powerpoint|word|visio|project))$/;

/** Text formats file-type recognises; they never contradict a `text/*` declaration. */
const TEXTUAL = new Set([
  "application/xml",
  "application/rtf",
  "application/postscript",
  "application/pgp-encrypted",
  "application/x-ms-regedit",
  "text/calendar",
  "text/vcard",
  "text/vtt",
]);

function canonical(type: string): string {
  const bare = type.toLowerCase().trim();
  return ALIASES[bare] ?? bare;
}

function familyOf(type: string): string | undefined {
  return FAMILIES.find(([, member]) => member(type))?.[0];
}

/** Whether the declared type is allowed at all (spec Limits). */
export function isAllowedAttachmentType(contentType: string): boolean {
  return ALLOWED_TYPE_PREFIXES.some((prefix) => contentType.toLowerCase().startsWith(prefix));
}

/** Whether a type file-type detected agrees with the declared one (the rules in the file comment). */
export function declaredTypeAgrees(declaredType: string, detectedType: string): boolean {
  const declared = canonical(declaredType);
  const detected = canonical(detectedType);
  if (declared === detected || GENERIC.has(declared)) return true;
  const family = familyOf(declared);
  if (family !== undefined && family === familyOf(detected)) return true;
  if (declared.startsWith("text/") && TEXTUAL.has(detected)) return true;
  if (declared.endsWith("+xml") && detected === "application/xml") return true;
  if (LEGACY_OFFICE.test(declared)) {
    const detectedFamily = familyOf(detected);
    return (
      detectedFamily === "zip" ||
      detectedFamily === "cfb" ||
      detected === "application/rtf" ||
      detected === "application/xml"
    );
  }
  return false;
}

type PolicyInput = Pick<ExtractedAttachment, "descriptor" | "bytes">;

function label(attachment: PolicyInput): string {
  return `attachment ${attachment.descriptor.id} (${JSON.stringify(attachment.descriptor.filename)})`;
}

/**
 * Checks the extracted attachments (skipped ones are not part of the message and are not checked).
 * A disallowed type anywhere is reported before any mismatch; within a reason, the first
 * attachment in part order is reported. Returns null when every attachment passes.
 */
export async function checkMimePolicy(
  attachments: readonly PolicyInput[],
): Promise<MimePolicyViolation | null> {
  for (const attachment of attachments) {
    const type = attachment.descriptor.content_type;
    if (!isAllowedAttachmentType(type)) {
      return {
        reason: "disallowed_attachment_type",
        attachment_id: attachment.descriptor.id,
        detail: `${label(attachment)} has type ${type}; allowed prefixes are ${ALLOWED_TYPE_PREFIXES.join(" ")}`,
      };
    }
  }
  for (const attachment of attachments) {
    const detected = await fileTypeFromBuffer(attachment.bytes);
    const declared = attachment.descriptor.content_type;
    if (detected && !declaredTypeAgrees(declared, detected.mime)) {
      return {
        reason: "content_type_mismatch",
        attachment_id: attachment.descriptor.id,
        detail: `${label(attachment)} is declared ${declared} but its content is ${detected.mime}`,
      };
    }
  }
  return null;
}

/** The service-wide policy: the allowed prefixes, and a violation discards the events. */
export const DEFAULT_ATTACHMENT_POLICY: AttachmentPolicy = {
  allowed_prefixes: [...ALLOWED_TYPE_PREFIXES],
  on_disallowed: "discard",
  on_mismatch: "discard",
};

/** One attachment as the policy judges it: its declared type and what its content was sniffed as. */
export interface AttachmentFinding {
  attachment_id: string;
  filename: string;
  content_type: string;
  /** the type file-type detected when it contradicts the declared one, else null */
  mismatch: string | null;
}

/**
 * Sniffs every attachment once per message (file-type), so each route's policy can be judged without
 * reading the bytes again.
 */
export async function attachmentFindings(attachments: readonly PolicyInput[]): Promise<AttachmentFinding[]> {
  const out: AttachmentFinding[] = [];
  for (const a of attachments) {
    const detected = await fileTypeFromBuffer(a.bytes);
    const declared = a.descriptor.content_type;
    out.push({
      attachment_id: a.descriptor.id,
      filename: a.descriptor.filename,
      content_type: declared,
      mismatch: detected && !declaredTypeAgrees(declared, detected.mime) ? detected.mime : null,
    });
  }
  return out;
}

/** A route's verdict on a message: discard its event for `discard`, else deliver with these notes. */
export interface PolicyVerdict {
  discard: MimePolicyReason | null;
  notes: PolicyNote[];
}

/**
 * Judges a message's attachments by one route's policy. An attachment whose declared type has no
 * allowed prefix is `disallowed_attachment_type`; one allowed whose content contradicts its declared type
 * is `content_type_mismatch`. Any offence whose action is `discard` discards the event (a disallowed type
 * is reported before a mismatch, as the service-wide policy always did); `strip` and `deliver` are noted.
 */
export function judgeAttachments(
  findings: readonly AttachmentFinding[],
  policy: AttachmentPolicy = DEFAULT_ATTACHMENT_POLICY,
): PolicyVerdict {
  const prefixes = policy.allowed_prefixes.map((p) => p.toLowerCase());
  const notes: PolicyNote[] = [];
  let disallowedDiscard = false;
  let mismatchDiscard = false;
  for (const f of findings) {
    const label = `attachment ${f.attachment_id} (${JSON.stringify(f.filename)})`;
    const allowed = prefixes.some((p) => f.content_type.toLowerCase().startsWith(p));
    if (!allowed) {
      if (policy.on_disallowed === "discard") disallowedDiscard = true;
      else
        notes.push({
          attachment_id: f.attachment_id,
          filename: f.filename,
          reason: "disallowed_attachment_type",
          action: policy.on_disallowed,
          detail: `${label} has type ${f.content_type}; allowed prefixes are ${prefixes.join(" ")}`,
        });
    } else if (f.mismatch !== null) {
      if (policy.on_mismatch === "discard") mismatchDiscard = true;
      else
        notes.push({
          attachment_id: f.attachment_id,
          filename: f.filename,
          reason: "content_type_mismatch",
          action: policy.on_mismatch,
          detail: `${label} is declared ${f.content_type} but its content is ${f.mismatch}`,
        });
    }
  }
  const discard = disallowedDiscard
    ? "disallowed_attachment_type"
    : mismatchDiscard
      ? "content_type_mismatch"
      : null;
  return { discard, notes: discard === null ? notes : [] };
}

/** The problems of an `attachment_policy` value, as `[path, message]` pairs under `path`; empty when valid. */
export function attachmentPolicyProblems(value: unknown, path: string): { path: string; message: string }[] {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return [{ path, message: "must be an object {allowed_prefixes, on_disallowed, on_mismatch} or null" }];
  const v = value as Record<string, unknown>;
  const problems: { path: string; message: string }[] = [];
  for (const key of Object.keys(v)) {
    if (!["allowed_prefixes", "on_disallowed", "on_mismatch"].includes(key))
      problems.push({ path: `${path}/${key}`, message: `unknown key "${key}"` });
  }
  const prefixes = v.allowed_prefixes;
  if (prefixes !== undefined) {
    if (!Array.isArray(prefixes) || prefixes.length > 100)
      problems.push({
        path: `${path}/allowed_prefixes`,
        message: "must be an array of at most 100 type prefixes",
      });
    else
      prefixes.forEach((p, i) => {
        if (typeof p !== "string" || p.trim() === "" || p.length > 200 || /\s/.test(p))
          problems.push({
            path: `${path}/allowed_prefixes/${i}`,
            message: 'must be a MIME type prefix such as "image/" or "application/pdf"',
          });
      });
  }
  for (const key of ["on_disallowed", "on_mismatch"]) {
    const action = v[key];
    if (action !== undefined && !(POLICY_ACTIONS as readonly unknown[]).includes(action))
      problems.push({ path: `${path}/${key}`, message: `must be one of ${POLICY_ACTIONS.join(", ")}` });
  }
  return problems;
}

/** A valid policy value with its omitted members filled from {@link DEFAULT_ATTACHMENT_POLICY}. */
export function completeAttachmentPolicy(value: Partial<AttachmentPolicy>): AttachmentPolicy {
  return {
    allowed_prefixes: value.allowed_prefixes ?? [...DEFAULT_ATTACHMENT_POLICY.allowed_prefixes],
    on_disallowed: value.on_disallowed ?? DEFAULT_ATTACHMENT_POLICY.on_disallowed,
    on_mismatch: value.on_mismatch ?? DEFAULT_ATTACHMENT_POLICY.on_mismatch,
  };
}

/** Whether attachment `id` (as stored, possibly with the Message-ID conflict suffix) is the noted `noted`. */
export function isNotedAttachment(id: string, noted: string): boolean {
  return id === noted || (id.startsWith(`${noted}-`) && /^-[0-9a-f]{12}$/.test(id.slice(noted.length)));
}
