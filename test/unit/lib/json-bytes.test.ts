import { describe, expect, test } from "bun:test";
import { jsonBytes } from "../../../services/lib/json-bytes.ts";

const expected = (v: unknown) => new Uint8Array(Buffer.from(JSON.stringify(v) as string, "utf8"));

describe("jsonBytes", () => {
  test("gives the bytes of JSON.stringify for values with and without large strings", () => {
    const values: unknown[] = [
      null,
      "short",
      { a: 1, b: ["x", { c: 'quote " back\\slash \n\t\u0001 é 😀' }] },
      { text: 'long enough to be left out\n"quoted" é 😀 \ud800 lone', n: [1, 2.5, true, null] },
      ["long enough to be left out, twice", "long enough to be left out, twice"],
      { toJSON: () => ({ inner: "long enough to be left out by toJSON" }) },
      { skipped: undefined, f: () => 1, kept: "long enough to be left out" },
    ];
    for (const v of values) expect(jsonBytes(v, 10)).toEqual(expected(v));
  });

  test("every kind of character is escaped and encoded as JSON.stringify does", () => {
    const units: number[] = [];
    for (let c = 0; c < 0x900; c++) units.push(c);
    for (const c of [0xfffd, 0xffff, 0xe000, 0x7ff, 0x800, 0x2028, 0x2029]) units.push(c);
    // a pair, lone halves (high at the end, low at the start, high before a non-low), a reversed pair
    const s = `${String.fromCharCode(0xdc00)}${String.fromCharCode(...units)}😀\ud800x\udfff\udc00\ud800${String.fromCharCode(0xd83d)}`;
    expect(jsonBytes({ s }, 1)).toEqual(expected({ s }));
    expect(jsonBytes([s, { k: s }], 1)).toEqual(expected([s, { k: s }]));
  });

  test("a string over 1 MiB characters with pairs and escapes throughout", () => {
    const s = `${"a".repeat(1024 * 1024 - 1)}😀${'b\n"'.repeat(400_000)}`;
    expect(jsonBytes({ text: s })).toEqual(expected({ text: s }));
  });

  test("undefined where JSON.stringify gives undefined", () => {
    expect(jsonBytes(undefined)).toBeUndefined();
    expect(jsonBytes(() => 1)).toBeUndefined();
  });
});
