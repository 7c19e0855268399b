import { describe, expect, test } from "bun:test";
import { REDACTED, redactUrl } from "../../../services/lib/redact-url.ts";

describe("redactUrl", () => {
  const cases: [string, string, string][] = [
    [
      "a plain URL is unchanged byte for byte",
      "https://Hooks.Example.com:8443/in/path",
      "https://Hooks.Example.com:8443/in/path",
    ],
    [
      "every query value, names and order kept",
      "https://h.example/in?token=s3cr3t&tenant=acme",
      "https://h.example/in?token=***&tenant=***",
    ],
    ["a repeated name", "https://h.example/?k=1&k=2", "https://h.example/?k=***&k=***"],
    [
      "a value holding = and encoded bytes",
      "https://h.example/?sig=a%3Db==&x=%E2%9C%93",
      "https://h.example/?sig=***&x=***",
    ],
    ["an empty value stays empty", "https://h.example/?debug=&k=v", "https://h.example/?debug=&k=***"],
    [
      "a bare word may be the token itself",
      "https://h.example/hook?AbCdEf0123456789",
      "https://h.example/hook?***",
    ],
    ["empty segments are kept", "https://h.example/?a=1&&b=2", "https://h.example/?a=***&&b=***"],
    ["user and password", "https://user:pa55@h.example/in", "https://***:***@h.example/in"],
    ["a user alone", "https://apikey@h.example/in?x=1", "https://***@h.example/in?x=***"],
    ["a fragment", "https://h.example/in#access_token=abc", "https://h.example/in#***"],
    ["an IPv6 host and port", "http://[::1]:8080/p?t=1", "http://[::1]:8080/p?t=***"],
    ["not an http(s) URL: cut at ? and userinfo dropped", "user:pw@host/p?token=abc", "***@host/p?***"],
    ["text that is no URL at all is unchanged", "not a url", "not a url"],
  ];
  for (const [name, input, expected] of cases) {
    test(`masks ${name}`, () => {
      expect(redactUrl(input)).toBe(expected);
      expect(redactUrl(expected), "idempotent").toBe(expected);
    });
  }

  test("no secret survives in any of the forms", () => {
    for (const secret of ["s3cr3t", "pa55", "apikey", "AbCdEf0123456789", "access_token=abc"]) {
      for (const [, input] of cases) expect(redactUrl(input)).not.toContain(secret);
    }
  });

  test("the placeholder is the one secret headers use", () => {
    expect(REDACTED).toBe("***");
  });
});
