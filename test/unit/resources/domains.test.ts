// The pure rules of own domains and addresses: how a domain is stored, and what the +tag is.
import { describe, expect, test } from "bun:test";
import { addressTag, normalizeDomain } from "../../../services/resources/domains.ts";

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
