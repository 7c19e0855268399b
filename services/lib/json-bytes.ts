/**
 * A value's JSON text as UTF-8 bytes without ever holding that text as a string: exactly the bytes of
 * `Buffer.from(JSON.stringify(value))`. Used for webhook bodies that carry a very large message body
 * (delivery/build-body.ts): `JSON.stringify` of a 49 MB body builds its text in a buffer that grows by
 * doubling and is then copied to fit (about three times the body at its peak), and the text is then
 * encoded to bytes once more. Here the value is serialised with each string of `largeFrom` characters
 * or more left out (a placeholder), the size of the result is counted, and one buffer of that size is
 * filled: the small JSON text, and each large string escaped and encoded character by character.
 */
import { randomUUID } from "node:crypto";

/** Strings from this many characters on are written without building their JSON text by default. */
export const LARGE_STRING_CHARS = 1024 * 1024;

const HEX = "0123456789abcdef";

/** The short escapes of JSON.stringify, by character code (0: none). */
const SHORT = new Uint8Array(0x60);
for (const [code, letter] of [
  [0x22, '"'],
  [0x5c, "\\"],
  [0x08, "b"],
  [0x0c, "f"],
  [0x0a, "n"],
  [0x0d, "r"],
  [0x09, "t"],
] as const)
  SHORT[code] = letter.charCodeAt(0);

/**
 * The JSON text of `s` without its quotes, as JSON.stringify escapes it (the quote, the backslash and
 * control characters; an unpaired surrogate as a `\u` escape), written as UTF-8 into `out` at `pos`;
 * returns the position after it. With `out` null only counts. A loop over the characters: no string
 * is made, so a 50 MB string leaves no garbage behind.
 */
function writeEscaped(s: string, out: Uint8Array | null, pos: number): number {
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      const short = c < 0x60 ? (SHORT[c] as number) : 0;
      if (short !== 0) {
        if (out) {
          out[pos] = 0x5c;
          out[pos + 1] = short;
        }
        pos += 2;
      } else if (c < 0x20) {
        if (out) {
          out[pos] = 0x5c;
          out[pos + 1] = 0x75; // u
          out[pos + 2] = 0x30;
          out[pos + 3] = 0x30;
          out[pos + 4] = HEX.charCodeAt(c >> 4);
          out[pos + 5] = HEX.charCodeAt(c & 15);
        }
        pos += 6;
      } else {
        if (out) out[pos] = c;
        pos += 1;
      }
    } else if (c < 0x800) {
      if (out) {
        out[pos] = 0xc0 | (c >> 6);
        out[pos + 1] = 0x80 | (c & 63);
      }
      pos += 2;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < n ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        if (out) {
          out[pos] = 0xf0 | (cp >> 18);
          out[pos + 1] = 0x80 | ((cp >> 12) & 63);
          out[pos + 2] = 0x80 | ((cp >> 6) & 63);
          out[pos + 3] = 0x80 | (cp & 63);
        }
        pos += 4;
        i++;
      } else {
        if (out) {
          out[pos] = 0x5c;
          out[pos + 1] = 0x75;
          for (let k = 0; k < 4; k++) out[pos + 2 + k] = HEX.charCodeAt((c >> (12 - 4 * k)) & 15);
        }
        pos += 6;
      }
    } else {
      if (out) {
        out[pos] = 0xe0 | (c >> 12);
        out[pos + 1] = 0x80 | ((c >> 6) & 63);
        out[pos + 2] = 0x80 | (c & 63);
      }
      pos += 3;
    }
  }
  return pos;
}

/**
 * The UTF-8 bytes of `JSON.stringify(value)`, or undefined where that is undefined (a function, a
 * symbol, undefined itself). `toJSON` methods apply as they do there.
 */
export function jsonBytes(value: unknown, largeFrom = LARGE_STRING_CHARS): Uint8Array | undefined {
  const nonce = randomUUID();
  const large: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== "string" || v.length < largeFrom) return v;
    large.push(v);
    return `@@${nonce}:${large.length - 1}@@`;
  });
  if (text === undefined) return undefined;
  // The text around the placeholders, and which large string each placeholder stands for.
  const segments: string[] = [];
  const order: number[] = [];
  const placeholder = new RegExp(`"@@${nonce}:(\\d+)@@"`, "g");
  let from = 0;
  for (const m of text.matchAll(placeholder)) {
    segments.push(text.slice(from, m.index));
    order.push(Number(m[1]));
    from = m.index + m[0].length;
  }
  segments.push(text.slice(from));

  let size = 0;
  for (const segment of segments) size += Buffer.byteLength(segment, "utf8");
  for (const i of order) {
    size += 2 + writeEscaped(large[i] as string, null, 0); // with its quotes
  }
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  segments.forEach((segment, k) => {
    pos += out.write(segment, pos, "utf8");
    const i = order[k];
    if (i === undefined) return;
    out[pos++] = 0x22;
    pos = writeEscaped(large[i] as string, out, pos);
    out[pos++] = 0x22;
  });
  if (pos !== size) throw new Error(`jsonBytes wrote ${pos} bytes of ${size}`);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}
