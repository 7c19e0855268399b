/**
 * What the intake does to a parsed message before it can be stored: make every string storable in
 * Postgres, and give a message without a Message-ID a deterministic synthetic one. Both are pure.
 */

// NUL and unpaired UTF-16 surrogates: Postgres text and jsonb cannot hold them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The same pattern without the `g` flag, for a stateless test. */
const HAS_UNSTORABLE = new RegExp(UNSTORABLE.source);

/**
 * The value with every string (keys included) made storable in Postgres text/jsonb: NUL and lone
 * surrogates become U+FFFD. Mail with a NUL in a header or a body is rare but real (broken charsets).
 * Copy on write: what needs no change is returned as is (the common case allocates nothing).
 */
export function storable<T>(value: T): T {
  if (typeof value === "string") {
    return (HAS_UNSTORABLE.test(value) ? value.replace(UNSTORABLE, "\ufffd") : value) as T;
  }
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const s = storable(v);
      if (s !== v) {
        out ??= value.slice();
        out[i] = s;
      }
    }
    return (out ?? value) as T;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    let changed = false;
    for (const e of entries) {
      const k = storable(e[0]);
      const v = storable(e[1]);
      if (k !== e[0] || v !== e[1]) {
        changed = true;
        e[0] = k;
        e[1] = v;
      }
    }
    // fromEntries defines own properties, so a "__proto__" key stays a plain key.
    return (changed ? Object.fromEntries(entries) : value) as T;
  }
  return value;
}

/**
 * A deterministic UUID (version 8, RFC 9562 §5.8) for a message without Message-ID, derived from the
 * project and the raw bytes: the same raw message ingested twice gets the same synthetic id and is
 * therefore deduplicated like any other.
 */
export function syntheticMessageUuid(projectId: string, rawSha256: string): string {
  const h = new Bun.CryptoHasher("sha256").update(`${projectId}|${rawSha256}`).digest("hex");
  const variant = ((Number.parseInt(h.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
