/**
 * `Range` request header parsing for byte ranges (RFC 9110 §14.1.2, §14.2), single range only
 * (docs/attachments.md).
 *
 * Decisions where the RFC leaves a choice:
 * - More than one range (`bytes=0-1,5-9`) is answered with the whole representation (`kind: "none"`,
 *   i.e. 200). RFC 9110 §14.2 lets a server ignore `Range`; doing so avoids multipart/byteranges and the
 *   overlapping-range amplification of §17.15. Every spec must still be well-formed, else `invalid`.
 * - A range unit other than `bytes` is ignored (`none`), as §14.2 requires ("MUST ignore a Range header
 *   field that contains a range unit it does not understand").
 * - A present but malformed header is `invalid` (the API answers 400 `attachments.range_invalid`) rather
 *   than ignored, so a broken client learns about it.
 */

/** The outcome of parsing; `start`/`end` are inclusive offsets within the representation. */
export type RangeResult =
  | { kind: "none" }
  | { kind: "range"; start: number; end: number }
  | { kind: "invalid" }
  | { kind: "unsatisfiable" };

/** Specs of the form `first-"` / `first-last` / `-suffix`, digits only (RFC 9110 §14.1.2 ABNF). */
const SPEC = /^(?:(\d+)-(\d*)|-(\d+))$/;
/** `range-unit "=" range-set`; the unit is a token, compared case-insensitively (§14.1). */
const SPECIFIER = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)=(.*)$/s;

type Spec = { first: number; last: number | null } | { suffix: number };

/**
 * Parse a `Range` header against a representation of `size` bytes.
 * `null` (no header) → `none`; `bytes=a-b` with `b ≥ size` clamps to `size - 1`; a first byte at or past
 * the end, `-0`, or any range of an empty representation → `unsatisfiable` (RFC 9110 §14.1.2).
 */
export function parseRange(header: string | null, size: number): RangeResult {
  if (header === null) return { kind: "none" };
  const m = SPECIFIER.exec(header.trim());
  if (!m) return { kind: "invalid" };
  const [, unit = "", set = ""] = m;
  if (unit.toLowerCase() !== "bytes") return { kind: "none" };

  // range-set = range-spec *( OWS "," OWS range-spec ); empty list elements are tolerated (§5.6.1).
  const parts = set
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "");
  const specs: Spec[] = [];
  for (const part of parts) {
    const spec = parseSpec(part);
    if (spec === null) return { kind: "invalid" };
    specs.push(spec);
  }
  const [only] = specs;
  if (only === undefined) return { kind: "invalid" };
  if (specs.length > 1) return { kind: "none" };
  return resolve(only, size);
}

function parseSpec(part: string): Spec | null {
  const m = SPEC.exec(part);
  if (!m) return null;
  const [, first, last, suffix] = m;
  if (suffix !== undefined) return { suffix: Number(suffix) };
  const firstPos = Number(first);
  if (last === undefined || last === "") return { first: firstPos, last: null };
  const lastPos = Number(last);
  // "A client MUST NOT generate an int-range with a last-pos less than first-pos" (§14.1.2): malformed.
  return lastPos < firstPos ? null : { first: firstPos, last: lastPos };
}

function resolve(spec: Spec, size: number): RangeResult {
  if ("suffix" in spec) {
    // A suffix-length of 0, or any suffix of an empty representation, selects nothing (§14.1.2).
    if (spec.suffix === 0 || size === 0) return { kind: "unsatisfiable" };
    return { kind: "range", start: Math.max(0, size - spec.suffix), end: size - 1 };
  }
  // "satisfiable if the first-pos is less than the current length of the selected representation".
  if (spec.first >= size) return { kind: "unsatisfiable" };
  const end = spec.last === null ? size - 1 : Math.min(spec.last, size - 1);
  return { kind: "range", start: spec.first, end };
}
