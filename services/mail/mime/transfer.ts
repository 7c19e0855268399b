/**
 * Content-Transfer-Encoding decoders (RFC 2045 §6) that keep every byte of the content.
 *
 * Parsers that read a body line by line re-join the lines with LF, which turns the CRLF of a 7bit,
 * 8bit or quoted-printable attachment into LF. Attachment bytes must be exact (their sha256 is part
 * of the descriptor), so they are decoded here from the raw bytes, line breaks as they were sent.
 */

const CR = 0x0d;
const LF = 0x0a;
const EQUALS = 0x3d;

const BASE64_VALUES = (() => {
  const table = new Int8Array(256).fill(-1);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (let i = 0; i < alphabet.length; i++) table[alphabet.charCodeAt(i)] = i;
  return table;
})();

/**
 * RFC 2045 §6.8: characters outside the alphabet are ignored. `=` ends the current group, so two
 * base64 bodies glued together (padding in the middle) still decode to both.
 */
export function decodeBase64(input: Uint8Array): Uint8Array {
  const out = new Uint8Array(Math.floor((input.length * 3) / 4) + 3);
  const n = input.length;
  let length = 0;
  let bits = 0;
  let count = 0;
  // An indexed loop over plain locals: this runs over every byte of every base64 attachment (an
  // iterator-based loop made it half of the CPU of a 1 MB message).
  for (let i = 0; i < n; i++) {
    const byte = input[i] as number;
    const value = BASE64_VALUES[byte] as number;
    if (value < 0) {
      if (byte === EQUALS) {
        // A partial group holds whole bytes: 2 chars → 1 byte, 3 chars → 2 bytes (padded or not).
        if (count === 2) out[length++] = (bits >> 4) & 0xff;
        else if (count === 3) {
          out[length++] = (bits >> 10) & 0xff;
          out[length++] = (bits >> 2) & 0xff;
        }
        bits = 0;
        count = 0;
      }
      continue;
    }
    bits = (bits << 6) | value;
    if (++count === 4) {
      out[length++] = (bits >> 16) & 0xff;
      out[length++] = (bits >> 8) & 0xff;
      out[length++] = bits & 0xff;
      bits = 0;
      count = 0;
    }
  }
  if (count === 2) out[length++] = (bits >> 4) & 0xff;
  else if (count === 3) {
    out[length++] = (bits >> 10) & 0xff;
    out[length++] = (bits >> 2) & 0xff;
  }
  return fitted(out, length);
}

/**
 * The first `length` bytes of a decoder's output buffer, sized for the worst case. Nearly full (a
 * base64 body's line breaks are ~3% of it), they are returned as a view: a copy would hold the bytes
 * twice at once, 35 MB more while two 17.5 MB attachments are decoded. Else copied, so a mostly
 * wasted buffer is not kept alive.
 */
function fitted(out: Uint8Array, length: number): Uint8Array {
  return length >= out.length * 0.9 ? out.subarray(0, length) : out.slice(0, length);
}

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1;
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30;
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37;
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57; // lowercase: RFC 2045 §6.7 (1) robustness
  return -1;
}

/**
 * RFC 2045 §6.7. A hard line break is copied as it appears in the message (CRLF stays CRLF),
 * trailing whitespace before it is transport padding and dropped (rule 3), `=` at the end of a
 * line is a soft break (rule 5), and an `=` not followed by two hex digits is kept literally.
 */
export function decodeQuotedPrintable(input: Uint8Array): Uint8Array {
  const out = new Uint8Array(input.length);
  let length = 0;
  let pos = 0;
  while (pos < input.length) {
    let lineEnd = input.indexOf(LF, pos);
    const hasBreak = lineEnd >= 0;
    if (!hasBreak) lineEnd = input.length;
    let contentEnd = lineEnd;
    if (hasBreak && contentEnd > pos && input[contentEnd - 1] === CR) contentEnd--;
    const breakStart = contentEnd;
    while (contentEnd > pos && (input[contentEnd - 1] === 0x20 || input[contentEnd - 1] === 0x09))
      contentEnd--;
    const soft = contentEnd > pos && input[contentEnd - 1] === EQUALS;
    if (soft) contentEnd--;
    for (let i = pos; i < contentEnd; i++) {
      const byte = input[i] ?? 0;
      if (byte === EQUALS) {
        const high = hexValue(input[i + 1]);
        const low = hexValue(input[i + 2]);
        if (high >= 0 && low >= 0 && i + 2 < contentEnd) {
          out[length++] = (high << 4) | low;
          i += 2;
          continue;
        }
      }
      out[length++] = byte;
    }
    if (hasBreak && !soft) {
      for (let i = breakStart; i <= lineEnd; i++) out[length++] = input[i] ?? 0;
    }
    pos = lineEnd + 1;
  }
  return fitted(out, length);
}

/**
 * Decodes a part body by its Content-Transfer-Encoding token. `7bit`, `8bit`, `binary` and
 * unknown tokens are identity encodings (RFC 2045 §6.4: an unknown encoding is left as is).
 */
export function decodeTransferEncoding(body: Uint8Array, encoding: string): Uint8Array {
  if (encoding === "base64") return decodeBase64(body);
  if (encoding === "quoted-printable") return decodeQuotedPrintable(body);
  return body.slice();
}
