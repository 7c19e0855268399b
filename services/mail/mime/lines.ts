/**
 * CRLF line ends folded to LF in the bytes of a body, before they are decoded to text.
 *
 * The body text of a message has LF line ends. Folding them in the decoded string (`replace`) makes a
 * second string as large as the first, while the raw message the bytes come from is still held: three
 * copies of a large plain-text body at once (a 49 MB body raised the service's peak memory by over 3×
 * its size). Folded in the bytes instead, in place, the decoder makes the one string that is kept.
 *
 * Only for decoders in which a CR byte followed by an LF byte always decodes to CR LF, whatever comes
 * before it (UTF-8 and the single-byte encodings): there, folding the bytes and folding the text give
 * the same string.
 */

const CR = 0x0d;
const LF = 0x0a;

/** Bits per word of the set of folded line ends. */
const WORD_BITS = 32;

/** What {@link foldCrlfInPlace} did: the folded length, and how to put the bytes back as they were. */
export interface Folded {
  /** the bytes `[0, length)` of the array are the folded text */
  length: number;
  /** puts back every CR removed (the array is again exactly as before the fold) */
  restore(): void;
}

/**
 * Folds each CR LF of `bytes` into LF in place, moving the bytes after it down (a lone CR or LF stays):
 * `bytes.subarray(0, length)` is then the folded text; the bytes after it are stale until
 * {@link Folded.restore}. Which LFs lost a CR is kept as one bit per byte of the result (an eighth of
 * its size), not as a list of offsets, which would be larger than the text itself for very short lines.
 * The search for CRs and the moves are native (`indexOf`, `copyWithin`).
 */
export function foldCrlfInPlace(bytes: Uint8Array): Folded {
  const n = bytes.length;
  let cr = nextCrlf(bytes, 0);
  if (cr < 0) return { length: n, restore: () => {} };
  // bit i: the byte at i of the result is an LF whose CR was removed
  const folded = new Uint32Array(Math.ceil(n / WORD_BITS));
  let removed = 0;
  let read = cr;
  let write = cr;
  for (;;) {
    // bytes[read] is the CR of a CR LF: skip it; its LF lands at `write`.
    folded[write >>> 5] = (folded[write >>> 5] as number) | (1 << (write & 31));
    removed++;
    read++;
    cr = nextCrlf(bytes, read + 1);
    const end = cr < 0 ? n : cr;
    bytes.copyWithin(write, read, end);
    write += end - read;
    read = end;
    if (cr < 0) break;
  }
  const length = write;
  return {
    length,
    restore() {
      // From the last folded LF down: the text from it to the next one moves up by the CRs before it
      // (its own included), and its CR goes back in front of it.
      let end = length;
      let k = removed;
      for (let w = folded.length - 1; w >= 0 && k > 0; w--) {
        let word = folded[w] as number;
        while (word !== 0) {
          const bit = 31 - Math.clz32(word);
          word &= ~(1 << bit);
          const at = w * WORD_BITS + bit;
          bytes.copyWithin(at + k, at, end);
          bytes[at + k - 1] = CR;
          end = at;
          k--;
        }
      }
    },
  };
}

/** Offset of the next CR that is followed by an LF, from `from` on; -1 when none. */
function nextCrlf(bytes: Uint8Array, from: number): number {
  for (let cr = bytes.indexOf(CR, from); cr >= 0; cr = bytes.indexOf(CR, cr + 1)) {
    if (bytes[cr + 1] === LF) return cr;
  }
  return -1;
}
