/**
 * Hostile JSON for the fuzzers, as fast-check arbitraries of JSON *text*: building text (not values)
 * keeps `__proto__` an own key, lets numbers such as `1e309` and `-0` reach the parser as written, and
 * allows duplicate keys and nesting deeper than any generator of values would.
 */
import fc from "fast-check";

/** Keys that trip naive object handling (prototype pollution, accessor names, empty, odd unicode). */
export const HOSTILE_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "then",
  "length",
  "",
  "$ref",
  "a.b",
  "[0]",
  "\u0000",
  "\ud800",
  "é",
] as const;

/** Number literals outside the comfortable range. */
export const HOSTILE_NUMBERS = [
  "1e309",
  "-1e309",
  "-0",
  "0",
  "1e-400",
  "9007199254740993",
  "123456789012345678901234567890",
  "-1",
  "0.5",
  "1e21",
  "2147483648",
] as const;

/** Strings: short random, unicode (lone surrogates included), huge, and shapes of ids and paths. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ maxLength: 12 }), weight: 4 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 12 }), weight: 2 },
  { arbitrary: fc.constantFrom(...HOSTILE_KEYS), weight: 2 },
  {
    arbitrary: fc.constantFrom(
      "00000000-0000-0000-0000-000000000000",
      "ep_",
      "../../etc/passwd",
      "<script>alert(1)</script>",
      "' or 1=1 --",
      "%s%n",
      "\r\nX-Injected: 1",
      "a".repeat(70_000),
      "\u202e\ufeff",
      "2024-13-45T99:99:99Z",
      "http://[::1]:99999/",
    ),
    weight: 1,
  },
  { arbitrary: fc.nat({ max: 300_000 }).map((n) => "x".repeat(n)), weight: 1 },
);

/** Any JSON text, hostile in every leaf; objects are entry lists (duplicates and `__proto__` kept). */
export const hostileJson: fc.Arbitrary<string> = fc.letrec<{ v: string }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom("null", "true", "false", "{}", "[]", '""'),
    fc.constantFrom(...HOSTILE_NUMBERS),
    fc.integer().map(String),
    hostileString.map((s) => JSON.stringify(s)),
    fc.array(tie("v"), { maxLength: 4 }).map((a) => `[${a.join(",")}]`),
    fc
      .array(fc.tuple(fc.oneof(hostileString, fc.constantFrom(...HOSTILE_KEYS)), tie("v")), { maxLength: 4 })
      .map((es) => `{${es.map(([k, v]) => `${JSON.stringify(k)}:${v}`).join(",")}}`),
    fc
      .tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom("[", '{"a":'))
      .map(([n, open]) => `${open.repeat(n)}1${(open === "[" ? "]" : "}").repeat(n)}`),
  ),
})).v;

/**
 * JSON text shaped like `example`: same keys and nesting, each leaf kept, swapped for a hostile value,
 * or dropped; sometimes an extra hostile key. Reaches past the first validation layer of an operation.
 */
export function likeExample(example: unknown, depth = 0): fc.Arbitrary<string> {
  const leaf = fc.oneof(
    { arbitrary: fc.constant(JSON.stringify(example)), weight: 3 },
    { arbitrary: hostileJson, weight: 1 },
  );
  if (depth > 8 || example === null || typeof example !== "object") return leaf;
  if (Array.isArray(example)) {
    if (example.length === 0) return leaf;
    const item = fc.oneof(...example.map((e) => likeExample(e, depth + 1)));
    return fc.oneof(
      { arbitrary: fc.array(item, { minLength: 0, maxLength: 4 }).map((a) => `[${a.join(",")}]`), weight: 4 },
      { arbitrary: hostileJson, weight: 1 },
    );
  }
  const entries = Object.entries(example as Record<string, unknown>).map(([k, v]) =>
    fc.option(
      fc
        .tuple(fc.oneof({ arbitrary: fc.constant(k), weight: 9 }, hostileString), likeExample(v, depth + 1))
        .map(([key, text]) => `${JSON.stringify(key)}:${text}`),
      { freq: 8 },
    ),
  );
  const extra = fc.option(
    fc.tuple(fc.constantFrom(...HOSTILE_KEYS), hostileJson).map(([k, v]) => `${JSON.stringify(k)}:${v}`),
    { freq: 5 },
  );
  return fc.oneof(
    {
      arbitrary: fc
        .tuple(fc.tuple(...entries), extra)
        .map(([es, x]) => `{${[...es, x].filter((e): e is string => e !== null).join(",")}}`),
      weight: 6,
    },
    { arbitrary: hostileJson, weight: 1 },
  );
}
