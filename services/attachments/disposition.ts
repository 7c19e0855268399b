/**
 * `Content-Disposition: attachment` for downloads (RFC 6266), shared by the app proxy and S3 presigning.
 *
 * Always emits both parameters: a quoted ASCII `filename` for old user agents and `filename*` in the
 * RFC 8187 `UTF-8''<pct-encoded>` form, which RFC 6266 §4.3 says recipients prefer. docs/attachments.md fixes
 * the `filename*=UTF-8''…` form, so it is present even for plain ASCII names.
 */
import { encodeExtended } from "content-disposition";

const FALLBACK_NAME = "download";

/**
 * Control characters (C0, DEL, C1) can never be part of a header value (RFC 9110 §5.5) and make no sense
 * in a filename; path separators would let a name pick a directory on the recipient's disk.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE_IN_NAME = /[\u0000-\u001f\u007f-\u009f/\\]/g;
/**
 * RFC 6266 Appendix D: in the fallback avoid `%` (some agents percent-decode it) and `"`/`\` (quoted-pair
 * handling is unreliable); anything outside printable ASCII is replaced too.
 */
const UNSAFE_IN_FALLBACK = /[^\u0020-\u007e]|["\\%]/gu;

/** The filename as it will be offered: NFC, without control characters or path separators, never empty. */
export function safeFilename(filename: string): string {
  const cleaned = filename.normalize("NFC").replace(UNSAFE_IN_NAME, "_").trim();
  // "." and ".." are not names a recipient should create.
  return cleaned === "" || /^\.+$/.test(cleaned) ? FALLBACK_NAME : cleaned;
}

/** The ASCII `filename` fallback for `name` (already passed through `safeFilename`). */
export function asciiFallback(name: string): string {
  const ascii = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .replace(UNSAFE_IN_FALLBACK, "_");
  return ascii.replace(/^[_ .]+$/, FALLBACK_NAME);
}

/**
 * `attachment; filename="<ascii>"; filename*=UTF-8''<pct-encoded>` for a user-supplied filename.
 * The result contains only visible ASCII, so it is a valid header value whatever the input.
 */
export function attachmentDisposition(filename: string): string {
  const name = safeFilename(filename);
  return `attachment; filename="${asciiFallback(name)}"; filename*=${encodeExtended(name)}`;
}
