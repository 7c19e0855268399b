/**
 * Text of a MIME part in its declared charset (RFC 2045 §5.1, RFC 2046 §4.1.2), as UTF-8.
 *
 * The runtime's WHATWG `TextDecoder` knows every charset mail uses in practice (ISO-8859-x,
 * windows-125x, KOI8, Shift_JIS, EUC-JP, ISO-2022-JP, GBK, Big5, EUC-KR, UTF-16); this module
 * only maps the labels mail clients write that the Encoding Standard does not list, and decides
 * what to do when the label is missing, unknown or wrong.
 */

/** Labels outside the Encoding Standard that name an encoding it has (after the normalisation below). */
const ALIASES: Record<string, string> = {
  // WHATWG shift_jis is the Windows-31J table, euc-kr the cp949 table, so the vendor names map to them.
  cp932: "shift_jis",
  windows31j: "shift_jis",
  mskanji: "shift_jis",
  cp936: "gbk",
  cp949: "euc-kr",
  uhc: "euc-kr",
  cp950: "big5",
  tis620: "windows-874",
  iso2022jp1: "iso-2022-jp",
  iso2022jp2: "iso-2022-jp",
  iso88598i: "iso-8859-8",
};

const utf8Strict = new TextDecoder("utf-8", { fatal: true });
const utf8Lossy = new TextDecoder("utf-8");

const windows1252 = new TextDecoder("windows-1252");

/** Windows-1252 bytes as text (the superset of ISO-8859-1 that legacy mail is written in). */
export function decodeWindows1252(bytes: Uint8Array): string {
  return windows1252.decode(bytes);
}

/**
 * Counts the well-formed multi-byte UTF-8 sequences and the bytes that belong to none (RFC 3629
 * §4 shapes, without the overlong and surrogate checks a strict decoder adds). One pass over bytes.
 */
function utf8Shape(bytes: Uint8Array): { valid: number; broken: number } {
  let valid = 0;
  let broken = 0;
  const n = bytes.length;
  for (let i = 0; i < n; ) {
    const b = bytes[i] as number;
    if (b < 0x80) {
      i++;
      continue;
    }
    const length = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    let ok = length > 0 && i + length <= n;
    for (let k = 1; ok && k < length; k++) ok = ((bytes[i + k] as number) & 0xc0) === 0x80;
    if (ok) {
      valid++;
      i += length;
    } else {
      broken++;
      i++;
    }
  }
  return { valid, broken };
}

function decoderFor(label: string): TextDecoder | null {
  try {
    return new TextDecoder(label);
  } catch {
    return null;
  }
}

/** The decoder for a declared charset label, or null when neither the label nor an alias is known. */
function knownDecoder(label: string): TextDecoder | null {
  const direct = decoderFor(label);
  if (direct) return direct;
  const bare = label.replace(/^(?:x-|cs)/, "").replace(/[\s._-]+/g, "");
  const windows = /^(?:cp|windows|ms|ibm)(125\d)$/.exec(bare);
  const alias = ALIASES[bare] ?? (windows ? `windows-${windows[1]}` : bare);
  return decoderFor(alias);
}

/**
 * UTF-8 when the bytes are UTF-8, else Windows-1252 (legacy 8-bit mail). Text that is mostly UTF-8
 * with a few broken sequences (a truncated line, one pasted Latin-1 word) stays UTF-8 with U+FFFD
 * for the broken bytes: reading all of it as Windows-1252 would garble every correct character.
 */
export function decodeUtf8OrWindows1252(bytes: Uint8Array): string {
  try {
    return utf8Strict.decode(bytes);
  } catch {
    const { valid, broken } = utf8Shape(bytes);
    return valid > broken ? utf8Lossy.decode(bytes) : decodeWindows1252(bytes);
  }
}

/**
 * Decodes text bytes by their declared charset. A missing or unknown label, or a body declared
 * UTF-8 or US-ASCII that is not valid UTF-8, is read as UTF-8 when it is valid and as
 * windows-1252 otherwise: mail that lies about its charset almost always holds Latin-1 text.
 * Never throws.
 */
export function decodeCharset(bytes: Uint8Array, charset: string | undefined): string {
  const decoder = declaredDecoder(charset);
  return decoder === null ? decodeUtf8OrWindows1252(bytes) : decoder.decode(bytes);
}

/**
 * The decoder of a declared charset, or null when the text is read by {@link decodeUtf8OrWindows1252}
 * (no label, a UTF-8 or US-ASCII label, or one no decoder knows).
 */
function declaredDecoder(charset: string | undefined): TextDecoder | null {
  const label = (charset ?? "").trim().toLowerCase();
  if (label === "" || /^(?:utf-?8|us-?ascii|ascii|unicode-1-1-utf-8)$/.test(label)) return null;
  const decoder = knownDecoder(label);
  return !decoder || decoder.encoding === "utf-8" ? null : decoder;
}

/**
 * True when text in this charset is read by {@link decodeUtf8OrWindows1252}: its CR LF bytes are CR LF
 * in the text whatever surrounds them, so its line ends can be folded in the bytes (lines.ts).
 */
export function readsAsUtf8OrWindows1252(charset: string | undefined): boolean {
  return declaredDecoder(charset) === null;
}
