// Which Authentication-Results field a message not received over our SMTP is judged by
// (services/ingest/trust/auth-results.ts): the topmost of a trusted authserv-id, in the trace section,
// with no untrusted receiver above it.
import { describe, expect, test } from "bun:test";
import { headerSection, trustedHeaderAuth } from "../../../../services/ingest/trust/auth-results.ts";
import { authResult } from "../../../../services/ingest/trust/results.ts";

const TRUSTED = ["mx.trusted.test"];
const BODY = [
  "From: Alice <alice@good.test>",
  "To: bob@example.org",
  "Subject: hi",
  "Message-ID: <1@good.test>",
  "",
  "body",
  "",
];

function header(...lines: string[]): Buffer {
  return headerSection(Buffer.from([...lines, ...BODY].join("\r\n")));
}

const PASS =
  "mx.trusted.test; spf=pass smtp.mailfrom=alice@good.test; dkim=pass header.d=good.test header.s=s1; dmarc=pass (p=REJECT sp=NONE) header.from=good.test";
const FAIL =
  "mx.trusted.test; spf=fail smtp.mailfrom=alice@good.test; dkim=none; dmarc=fail (p=reject) header.from=good.test";

describe("trusted Authentication-Results", () => {
  test("the topmost trusted field of the trace section is the verdict, mapped to message.auth", () => {
    const auth = trustedHeaderAuth(
      header(
        `Authentication-Results: ${PASS}`,
        "Received: from a by mx.trusted.test",
        `Authentication-Results: ${FAIL}`,
      ),
      TRUSTED,
    );
    expect(auth).toEqual({
      source: "trusted_header",
      spf: { result: "pass", domain: "good.test" },
      dkim: [{ result: "pass", domain: "good.test", selector: "s1", aligned: true }],
      dmarc: { result: "pass", policy: "reject", domain: "good.test" },
      arc: { result: "none" },
    });
  });

  test.each([
    ["no field at all", []],
    ["only an untrusted id", ["Authentication-Results: mx.other.test; spf=pass smtp.mailfrom=a@good.test"]],
    [
      "an untrusted receiver above the trusted field (it could have forged it)",
      ["Authentication-Results: mx.other.test; spf=none", `Authentication-Results: ${PASS}`],
    ],
    ["a trusted id as a prefix of another", ["Authentication-Results: mx.trusted.test.evil.test; spf=pass"]],
  ])("no verdict: %s", (_name, lines) => {
    const auth = trustedHeaderAuth(header(...lines), TRUSTED);
    expect(auth.source).toBe("none");
    expect(auth.spf.result).toBe("none");
    expect(auth.dkim).toEqual([]);
  });

  test("a trusted field below the author's own fields (a header injected by the sender) is never used", () => {
    const raw = Buffer.from(
      [
        "Received: from x by relay.test",
        "From: alice@good.test",
        `Authentication-Results: ${PASS}`,
        "Subject: hi",
        "",
        "b",
      ].join("\r\n"),
    );
    expect(trustedHeaderAuth(headerSection(raw), TRUSTED).source).toBe("none");
  });

  test("without TRUSTED_AUTHSERV_IDS nothing is trusted", () => {
    expect(trustedHeaderAuth(header(`Authentication-Results: ${PASS}`), []).source).toBe("none");
  });

  test("authserv-ids compare case-insensitively and may carry a version", () => {
    const auth = trustedHeaderAuth(
      header("Authentication-Results: MX.Trusted.Test 1; spf=softfail smtp.mailfrom=x@soft.test"),
      TRUSTED,
    );
    expect(auth.source).toBe("trusted_header");
    expect(auth.spf).toEqual({ result: "softfail", domain: "soft.test" });
  });

  test("Gmail's layout: internal Received and ARC fields above its Authentication-Results", () => {
    const auth = trustedHeaderAuth(
      header(
        "Delivered-To: bob@gmail.test",
        "Received: by 2002:a05:6a10:1234:b0:1 with SMTP id x; Tue, 1 Apr 2025 10:00:01 -0700 (PDT)",
        "ARC-Authentication-Results: i=1; mx.google.com; dkim=pass header.i=@good.test",
        "Return-Path: <alice@good.test>",
        "Received: from mail.good.test (mail.good.test. [192.0.2.1]) by mx.google.com with ESMTPS id y",
        "Received-SPF: pass (google.com: domain of alice@good.test designates 192.0.2.1 as permitted sender)",
        "Authentication-Results: mx.google.com;\r\n       dkim=pass header.i=@good.test header.s=s1 header.b=abc;\r\n       spf=pass (google.com: domain) smtp.mailfrom=alice@good.test;\r\n       dmarc=pass (p=QUARANTINE sp=NONE dis=NONE) header.from=good.test",
      ),
      ["mx.google.com"],
    );
    expect(auth).toEqual({
      source: "trusted_header",
      spf: { result: "pass", domain: "good.test" },
      dkim: [{ result: "pass", domain: "good.test", selector: "s1", aligned: true }],
      dmarc: { result: "pass", policy: "quarantine", domain: "good.test" },
      arc: { result: "none" },
    });
  });

  test("several DKIM results; a failing or foreign signature is not aligned; policy.dmarc is read", () => {
    const auth = trustedHeaderAuth(
      header(
        "Authentication-Results: mx.trusted.test; dkim=pass header.d=esp.test header.s=a; dkim=fail (body hash did not verify) header.d=good.test header.s=b; dkim=pass header.i=@mail.good.test; dmarc=pass policy.dmarc=none header.from=good.test; arc=pass",
      ),
      TRUSTED,
    );
    expect(auth.dkim).toEqual([
      { result: "pass", domain: "esp.test", selector: "a", aligned: false },
      { result: "fail", domain: "good.test", selector: "b", aligned: false },
      { result: "pass", domain: "mail.good.test", selector: null, aligned: true },
    ]);
    expect(auth.dmarc).toEqual({ result: "pass", policy: "none", domain: "good.test" });
    expect(auth.arc).toEqual({ result: "pass" });
  });
});

describe("result words", () => {
  test.each([
    ["PASS", "pass"],
    ["temperr", "temperror"],
    ["permerr", "permerror"],
    ["hardfail", "fail"],
    ["policy", "neutral"],
    ["skipped", "none"],
    ["bestguesspass", "neutral"],
    ["", "none"],
    [undefined, "none"],
  ])("%p reads %p", (word, expected) => {
    expect(authResult(word)).toBe(expected as ReturnType<typeof authResult>);
  });
});
