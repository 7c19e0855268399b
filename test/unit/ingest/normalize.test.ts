import { describe, expect, test } from "bun:test";
import { storable, syntheticMessageUuid } from "../../../services/ingest/normalize.ts";
import { isUuid } from "../../../services/lib/ids.ts";

describe("storable", () => {
  test("a value with nothing to replace is returned as is (no copy)", () => {
    const v = { subject: "héllo 👋", to: [{ email: "a@b", name: "" }], n: 3, ok: true, none: null };
    expect(storable(v)).toBe(v);
    expect(storable(v.to)).toBe(v.to);
  });

  test("NUL and lone surrogates become U+FFFD in nested strings and keys; the input is not changed", () => {
    const v = {
      subject: "a\u0000b",
      headers: { "x-\u0000": "lone \ud800 high", ok: "fine" },
      list: ["keep", "low \udc00 alone", "pair 👋"],
    };
    const copy = structuredClone(v);
    const out = storable(v) as unknown;
    expect(out).toEqual({
      subject: "a\ufffdb",
      headers: { "x-\ufffd": "lone \ufffd high", ok: "fine" },
      list: ["keep", "low \ufffd alone", "pair 👋"],
    });
    expect(v).toEqual(copy);
    expect((out as typeof v).list).not.toBe(v.list);
  });

  test("a __proto__ key stays an own, plain key", () => {
    const v = JSON.parse('{"__proto__": "x\\u0000", "a": 1}');
    const out = storable(v) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(out, "__proto__")?.value).toBe("x\ufffd");
  });
});

describe("syntheticMessageUuid", () => {
  const sha = "ab".repeat(32);

  test("is a version 8, RFC 9562 variant UUID", () => {
    const id = syntheticMessageUuid("prj_1", sha);
    expect(isUuid(id)).toBe(true);
    expect(id.charAt(14)).toBe("8");
    expect("89ab").toContain(id.charAt(19));
  });

  test("the same project and raw bytes give the same id; another project or raw message another one", () => {
    const id = syntheticMessageUuid("prj_1", sha);
    expect(syntheticMessageUuid("prj_1", sha)).toBe(id);
    expect(syntheticMessageUuid("prj_2", sha)).not.toBe(id);
    expect(syntheticMessageUuid("prj_1", "cd".repeat(32))).not.toBe(id);
  });
});
