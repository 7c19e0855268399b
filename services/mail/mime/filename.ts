/**
 * Attachment filename sanitising: the name a sender chose, made safe to write to any file system
 * and to show in a UI, without losing non-ASCII letters.
 */

/** Longest sanitised name in characters; the extension is kept when a name is shortened. */
export const MAX_FILENAME_LENGTH = 200;

/** Extensions for fallback names, by MIME type; anything else gets `.bin`. */
const EXTENSIONS: Record<string, string> = {
  "application/pdf": "pdf",
  "application/zip": "zip",
  "application/json": "json",
  "application/xml": "xml",
  "application/gzip": "gz",
  "application/ics": "ics",
  "application/pgp-signature": "asc",
  "application/pkcs7-signature": "p7s",
  "application/msword": "doc",
  "application/vnd.ms-excel": "xls",
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/gif": "gif",
  "image/webp": "webp",
  "image/bmp": "bmp",
  "image/tiff": "tif",
  "image/svg+xml": "svg",
  "image/heic": "heic",
  "text/plain": "txt",
  "text/html": "html",
  "text/csv": "csv",
  "text/calendar": "ics",
  "text/xml": "xml",
  "message/rfc822": "eml",
  "message/global": "eml",
};

/** File extension (without dot) used for a part of this type that has no usable filename. */
export function extensionFor(contentType: string): string {
  return EXTENSIONS[contentType] ?? "bin";
}

// C0 and C1 controls, DEL, and the bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069) that
// make `invoice\u202Efdp.exe` display as `invoiceexe.pdf`.
const UNSAFE = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/gu;
// Characters Windows forbids in names; replaced so a saved file keeps the rest of its name.
const RESERVED = /[<>:"|?*]/g;

/**
 * Sanitises a decoded filename: keeps the last path segment (both `/` and `\` separate), drops
 * control and bidi-override characters, replaces Windows-reserved characters with `_`, removes
 * leading dots and surrounding spaces (and trailing dots, which Windows drops), normalises to NFC
 * and caps the length. Returns "" when nothing usable remains.
 */
export function sanitizeFilename(name: string): string {
  const segments = name.normalize("NFC").replace(UNSAFE, "").split(/[/\\]/);
  let clean = (segments[segments.length - 1] ?? "").replace(RESERVED, "_").trim();
  clean = clean.replace(/^[.\s]+/, "").replace(/[.\s]+$/, "");
  if (clean.length > MAX_FILENAME_LENGTH) {
    const dot = clean.lastIndexOf(".");
    const ext = dot > 0 && clean.length - dot <= 16 ? clean.slice(dot) : "";
    clean = Array.from(clean.slice(0, clean.length - ext.length))
      .slice(0, MAX_FILENAME_LENGTH - ext.length)
      .join("")
      .trimEnd()
      .concat(ext);
  }
  return clean;
}

/** The sanitised name, or `attachment-<ordinal>.<ext>` when the part has none that survives. */
export function attachmentFilename(name: string | undefined, ordinal: number, contentType: string): string {
  const clean = name ? sanitizeFilename(name) : "";
  return clean || `attachment-${ordinal}.${extensionFor(contentType)}`;
}
