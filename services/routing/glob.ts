/**
 * Case-insensitive glob matching for MIME types (`image/*`) and filenames (`*.pdf`).
 *
 * `*` matches any run of characters (including `/`, so `*` alone matches every type), `?` matches one
 * character, everything else is literal. Hand-written rather than translated to a RegExp: user input must
 * never reach the JS regex engine (see mapper/regex.ts), and the two-pointer algorithm below is
 * O(pattern × value) in the worst case with no backtracking blow-up.
 */

/** True when `value` matches the glob `pattern`, ignoring ASCII case. */
export function globMatch(pattern: string, value: string): boolean {
  const p = pattern.toLowerCase();
  const v = value.toLowerCase();
  let pi = 0;
  let vi = 0;
  let starP = -1;
  let starV = 0;
  while (vi < v.length) {
    const pc = p[pi];
    if (pc === "*") {
      starP = pi++;
      starV = vi;
    } else if (pc !== undefined && (pc === "?" || pc === v[vi])) {
      pi++;
      vi++;
    } else if (starP >= 0) {
      pi = starP + 1;
      vi = ++starV;
    } else {
      return false;
    }
  }
  while (p[pi] === "*") pi++;
  return pi === p.length;
}

/** `type/subtype` built from RFC 6838 restricted-name characters plus the glob wildcards, or `*`. */
export const MIME_GLOB = /^(?:\*|[A-Za-z0-9!#$&^_.+*?-]+\/[A-Za-z0-9!#$&^_.+*?-]+)$/;

/** Null when `pattern` is a usable MIME glob, else the reason. */
export function mimeGlobError(pattern: string): string | null {
  return MIME_GLOB.test(pattern) ? null : "must be a MIME type or glob such as image/png, image/* or *";
}

/** The bare MIME type of a content type, lowercased, without parameters (`text/plain; charset=x`). */
export function bareMimeType(contentType: string): string {
  const semi = contentType.indexOf(";");
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}
