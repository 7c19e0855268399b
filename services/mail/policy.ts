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
import type { ExtractedAttachment } from "./extract.ts";

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
export function mimeDiscardError(violation: MimePolicyViolation): string {
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
