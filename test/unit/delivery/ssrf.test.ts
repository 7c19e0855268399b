/**
 * The SSRF guard, table-driven: every range it blocks (IPv4, IPv6, and each IPv6 form that carries an
 * IPv4 address; the rows are in ssrf-ranges.ts) with addresses inside and just outside it, every IPv4
 * row re-checked in each embedding form, then spellings, public examples, malformed input and the
 * resolver. A completeness check fails when the guard gains a range the rows do not cover.
 */
import { describe, expect, test } from "bun:test";
import {
  type BlockReason,
  blockedReason,
  IPV4_EMBEDDINGS,
  type Lookup,
  parseIp,
  resolveTarget,
  V4_RULES,
  V6_RULES,
} from "../../../services/lib/ssrf.ts";
import { EMBEDDING_TABLE, V4_TABLE, V6_TABLE } from "./ssrf-ranges.ts";

const ruleNames = (rules: readonly (readonly [string, number, ...unknown[]])[]) =>
  rules.map(([prefix, bits]) => `${prefix}/${bits}`).sort();

describe("the guard's tables are covered here", () => {
  test("every blocked IPv4 range has a row", () => {
    expect(V4_TABLE.map((r) => r.range).sort()).toEqual(ruleNames(V4_RULES));
  });
  test("every blocked IPv6 range has a row", () => {
    expect(V6_TABLE.map((r) => r.range).sort()).toEqual(ruleNames(V6_RULES));
  });
  test("every IPv6 form carrying an IPv4 address has a row", () => {
    const forms = IPV4_EMBEDDINGS.map((e): [string, number] => [e.prefix, e.bits]);
    expect(EMBEDDING_TABLE.map((r) => r.range).sort()).toEqual(ruleNames(forms));
  });
});

for (const [family, table] of [
  ["IPv4", V4_TABLE],
  ["IPv6", V6_TABLE],
] as const) {
  describe(`blockedReason over every blocked ${family} range`, () => {
    for (const row of table) {
      test(`${row.range}: inside is ${row.reason}, just outside is not`, () => {
        for (const address of row.inside)
          expect([address, blockedReason(address)]).toEqual([address, row.reason]);
        for (const [address, reason] of row.outside)
          expect([address, blockedReason(address)]).toEqual([address, reason]);
      });
    }
  });
}

describe("an IPv6 address carrying an IPv4 address is judged like the IPv4 address", () => {
  for (const form of EMBEDDING_TABLE) {
    test(`${form.range}: every IPv4 row, inside and just outside, in this form`, () => {
      for (const row of V4_TABLE) {
        for (const v4 of row.inside) {
          expect([form.embed(v4), blockedReason(form.embed(v4))]).toEqual([form.embed(v4), row.reason]);
        }
        for (const [v4, reason] of row.outside) {
          expect([form.embed(v4), blockedReason(form.embed(v4))]).toEqual([form.embed(v4), reason]);
        }
      }
    });
    test(`${form.range}: just outside the form, 127.0.0.1 in the same place is not judged`, () => {
      for (const address of form.outside) expect([address, blockedReason(address)]).toEqual([address, null]);
    });
  }

  test.each([
    ["::ffff:0:7f00:1", "loopback"],
    ["::ffff:0:127.0.0.1", "loopback"],
    ["::FFFF:0:7F00:1", "loopback"],
    ["0:0:0:0:ffff:0:7f00:1", "loopback"],
    ["0000:0000:0000:0000:ffff:0000:7f00:0001", "loopback"],
    ["::ffff:0:a9fe:a9fe", "metadata"],
    ["::ffff:0:10.1.2.3", "private"],
    ["::ffff:0:a83f:8110", "metadata"],
    ["::ffff:168.63.129.16", "metadata"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::FFFF:10.1.2.3", "private"],
    ["64:ff9b::7f00:1", "loopback"],
    ["2002:a9fe:a9fe::1", "metadata"],
  ])("the spelling %s is refused as %s", (address, reason) => {
    expect(blockedReason(address)).toBe(reason as BlockReason);
  });
});

describe("blockedReason on public and malformed input", () => {
  test.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "168.63.129.15",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "2a00:1450:4001:80b::200e",
    "::ffff:8.8.8.8",
    "::ffff:0:8.8.8.8",
    "::ffff:0:808:808",
    "::8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "fe00::1",
  ])("%s is public", (address) => {
    expect(blockedReason(address)).toBeNull();
  });

  test.each(["not-an-ip", "1.2.3", "1.2.3.256", "::ffff:0:1.2.3", "[::1]", "", "12345::1"])(
    "%s is invalid",
    (address) => {
      expect(blockedReason(address)).toBe("invalid");
    },
  );
});

describe("parseIp", () => {
  test("expands compressed IPv6 and embedded IPv4", () => {
    expect(Array.from(parseIp("::ffff:1.2.3.4")!)).toEqual([
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 1, 2, 3, 4,
    ]);
    expect(Array.from(parseIp("1:2::8")!)).toEqual([0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8]);
    expect(parseIp("[::1]")).toBeNull();
  });
});

describe("resolveTarget", () => {
  const fake =
    (answers: Record<string, string[]>): Lookup =>
    async (host) => {
      const list = answers[host];
      if (!list) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
      return list.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));
    };

  test("refuses a name that resolves to loopback", async () => {
    const r = await resolveTarget("evil.example", {
      allowPrivate: false,
      lookup: fake({ "evil.example": ["127.0.0.1"] }),
    });
    expect(r).toEqual({ ok: false, networkError: "ssrf_blocked:127.0.0.1", blockedAddress: "127.0.0.1" });
  });

  test("refuses when any answer is private, even if another is public", async () => {
    const lookup = fake({ "mixed.example": ["93.184.216.34", "10.0.0.5"] });
    const r = await resolveTarget("mixed.example", { allowPrivate: false, lookup });
    expect(r.ok ? "" : r.networkError).toBe("ssrf_blocked:10.0.0.5");
  });

  test("checks IP literals without a lookup, brackets included", async () => {
    const lookup: Lookup = () => Promise.reject(new Error("must not be called"));
    const v6 = await resolveTarget("[::1]", { allowPrivate: false, lookup });
    expect(v6.ok ? "" : v6.networkError).toBe("ssrf_blocked:::1");
    const pub = await resolveTarget("8.8.8.8", { allowPrivate: false, lookup });
    expect(pub.ok && pub.address).toEqual({ address: "8.8.8.8", family: 4 });
  });

  test("refuses the WireServer and SIIT-embedded loopback as literals and as DNS answers", async () => {
    const lookup = fake({ "wire.example": ["168.63.129.16"], "siit.example": ["::ffff:0:7f00:1"] });
    for (const [host, address] of [
      ["168.63.129.16", "168.63.129.16"],
      ["[::ffff:0:7f00:1]", "::ffff:0:7f00:1"],
      ["wire.example", "168.63.129.16"],
      ["siit.example", "::ffff:0:7f00:1"],
    ] as const) {
      const r = await resolveTarget(host, { allowPrivate: false, lookup });
      expect(r).toEqual({ ok: false, networkError: `ssrf_blocked:${address}`, blockedAddress: address });
    }
  });

  test("prefers the first IPv4 answer", async () => {
    const lookup = fake({ "dual.example": ["2606:4700::1", "93.184.216.34", "93.184.216.35"] });
    const r = await resolveTarget("dual.example", { allowPrivate: false, lookup });
    expect(r.ok && r.address.address).toBe("93.184.216.34");
  });

  test("allowPrivate lets private answers through", async () => {
    const r = await resolveTarget("evil.example", {
      allowPrivate: true,
      lookup: fake({ "evil.example": ["127.0.0.1"] }),
    });
    expect(r.ok && r.address.address).toBe("127.0.0.1");
  });

  test("reports resolver failures and empty answers as dns_error", async () => {
    const lookup = fake({ "empty.example": [] });
    const missing = await resolveTarget("nope.example", { allowPrivate: false, lookup });
    expect(missing.ok ? "" : missing.networkError).toBe("dns_error: ENOTFOUND nope.example");
    const empty = await resolveTarget("empty.example", { allowPrivate: false, lookup });
    expect(empty.ok ? "" : empty.networkError).toBe("dns_error: no addresses empty.example");
  });

  test("an answer that is not an IP is refused even with allowPrivate", async () => {
    const r = await resolveTarget("odd.example", {
      allowPrivate: true,
      lookup: fake({ "odd.example": ["garbage"] }),
    });
    expect(r.ok).toBe(false);
  });
});
