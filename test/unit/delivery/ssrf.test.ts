import { describe, expect, test } from "bun:test";
import { blockedReason, type Lookup, parseIp, resolveTarget } from "../../../services/delivery/ssrf.ts";

describe("blockedReason", () => {
  test.each([
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["10.0.0.1", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["169.254.169.254", "metadata"],
    ["169.254.1.1", "link_local"],
    ["100.64.0.1", "cgnat"],
    ["100.127.255.255", "cgnat"],
    ["100.100.100.200", "metadata"],
    ["0.0.0.0", "unspecified"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["255.255.255.255", "reserved"],
    ["192.0.0.170", "reserved"],
    ["198.18.0.1", "reserved"],
    ["::1", "loopback"],
    ["::", "unspecified"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fd00:ec2::254", "metadata"],
    ["fe80::1", "link_local"],
    ["fe80::1%eth0", "link_local"],
    ["febf::1", "link_local"],
    ["fec0::1", "private"],
    ["ff02::1", "multicast"],
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:7f00:1", "loopback"],
    ["::FFFF:10.1.2.3", "private"],
    ["::ffff:169.254.169.254", "metadata"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["::127.0.0.1", "loopback"],
    ["64:ff9b::10.0.0.1", "private"],
    ["64:ff9b::7f00:1", "loopback"],
    ["2002:7f00:1::", "loopback"],
    ["2002:a9fe:a9fe::1", "metadata"],
    ["2001:0:4136:e378::1", "reserved"],
    ["not-an-ip", "invalid"],
    ["1.2.3", "invalid"],
  ])("%s is refused as %s", (address, reason) => {
    expect(blockedReason(address)).toBe(reason as never);
  });

  test.each([
    "8.8.8.8",
    "1.1.1.1",
    "172.15.255.255",
    "172.32.0.1",
    "100.63.255.255",
    "100.128.0.1",
    "169.253.255.255",
    "193.0.0.1",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "fe00::1",
  ])("%s is public", (address) => {
    expect(blockedReason(address)).toBeNull();
  });
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
    expect(r).toEqual({ ok: false, networkError: "ssrf_blocked: 127.0.0.1", blockedAddress: "127.0.0.1" });
  });

  test("refuses when any answer is private, even if another is public", async () => {
    const lookup = fake({ "mixed.example": ["93.184.216.34", "10.0.0.5"] });
    const r = await resolveTarget("mixed.example", { allowPrivate: false, lookup });
    expect(r.ok ? "" : r.networkError).toBe("ssrf_blocked: 10.0.0.5");
  });

  test("checks IP literals without a lookup, brackets included", async () => {
    const lookup: Lookup = () => Promise.reject(new Error("must not be called"));
    const v6 = await resolveTarget("[::1]", { allowPrivate: false, lookup });
    expect(v6.ok ? "" : v6.networkError).toBe("ssrf_blocked: ::1");
    const pub = await resolveTarget("8.8.8.8", { allowPrivate: false, lookup });
    expect(pub.ok && pub.address).toEqual({ address: "8.8.8.8", family: 4 });
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
