import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../../services/config.ts";
import { addressTag, normalizeDomain } from "../../../services/resources/domains.ts";

describe("DNS_SERVERS", () => {
  test("unset means the system's resolvers; none means no lookups", () => {
    expect(loadConfig({}).dnsServers).toBeNull();
    expect(loadConfig({ DNS_SERVERS: "none" }).dnsServers).toEqual([]);
  });

  test("reads host[:port] entries, IPv6 bracketed when it has a port, port 53 by default", () => {
    expect(loadConfig({ DNS_SERVERS: "127.0.0.1:5353, 10.0.0.2,[::1]:53535,::1" }).dnsServers).toEqual([
      { host: "127.0.0.1", port: 5353 },
      { host: "10.0.0.2", port: 53 },
      { host: "::1", port: 53535 },
      { host: "::1", port: 53 },
    ]);
  });

  test("refuses a name or a bad port, naming the variable", () => {
    for (const value of ["dns.example.com", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:x", "[::1]:", ","]) {
      let error: unknown;
      try {
        loadConfig({ DNS_SERVERS: value });
      } catch (e) {
        error = e;
      }
      expect(error, value).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems.join("\n")).toContain("DNS_SERVERS");
    }
  });
});

describe("own domain and address rules", () => {
  test("domains are stored lowercase, without the trailing dot, IDNs as punycode", () => {
    expect(normalizeDomain("Example.COM.")).toEqual({ domain: "example.com" });
    expect(normalizeDomain("bücher.example")).toEqual({ domain: "xn--bcher-kva.example" });
    for (const bad of ["", "com", "a..b", "-a.com", "10.0.0.1", "a_b.com"]) {
      expect("problem" in normalizeDomain(bad), bad).toBe(true);
    }
  });

  test("the tag is what follows the first +, as sent; none without a + or after an empty one", () => {
    expect(addressTag("sales+EU@example.com")).toBe("EU");
    expect(addressTag("sales+a+b@example.com")).toBe("a+b");
    expect(addressTag("sales@example.com")).toBeNull();
    expect(addressTag("sales+@example.com")).toBeNull();
  });
});
