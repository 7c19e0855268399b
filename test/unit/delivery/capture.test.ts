import { describe, expect, test } from "bun:test";
import {
  bodyPreview,
  REDACTED,
  requestCapture,
  responseCapture,
} from "../../../services/delivery/capture.ts";

describe("requestCapture", () => {
  const request = {
    url: "https://hooks.example.com/in?x=1",
    headers: {
      "Content-Type": "application/json",
      "X-Service-Signature": "t=1, kid=k, v1=abc=",
      "webhook-id": "id",
      "webhook-timestamp": "1",
      "webhook-signature": "v1,abc=",
      "X-Idempotency-Key": "key",
      Authorization: "Bearer secret-token",
      "X-Tenant-Token": "tenant-secret",
      "X-Public": "visible",
    },
    body: '{"a":1}',
  };

  test("redacts both signatures, credentials and headers marked secret (case-insensitively)", () => {
    const c = requestCapture(request, { secretHeaderNames: ["x-tenant-token"] });
    expect(c).toEqual({
      method: "POST",
      url: "https://hooks.example.com/in?x=***",
      headers: {
        "Content-Type": "application/json",
        "X-Service-Signature": REDACTED,
        "webhook-id": "id",
        "webhook-timestamp": "1",
        "webhook-signature": REDACTED,
        "X-Idempotency-Key": "key",
        Authorization: REDACTED,
        "X-Tenant-Token": REDACTED,
        "X-Public": "visible",
      },
      body_preview: '{"a":1}',
    });
    expect(JSON.stringify(c)).not.toContain("tenant-secret");
  });

  test("masks credentials in the endpoint URL: userinfo and every query value, names kept", () => {
    const c = requestCapture({
      ...request,
      url: "https://bot:pa55word@hooks.example.com/in?token=s3cr3t-token&tenant=acme&flag",
    });
    expect(c.url).toBe("https://***:***@hooks.example.com/in?token=***&tenant=***&***");
    for (const secret of ["bot", "pa55word", "s3cr3t-token", "acme"])
      expect(JSON.stringify(c)).not.toContain(secret);
  });

  test("does not mutate the headers it was given", () => {
    requestCapture(request);
    expect(request.headers["X-Service-Signature"]).toBe("t=1, kid=k, v1=abc=");
  });

  test("caps the body preview at 16 KiB", () => {
    const c = requestCapture({ ...request, body: "a".repeat(20_000) });
    expect(c.body_preview).toHaveLength(16_384);
    const bytes = requestCapture({ ...request, body: new Uint8Array(20_000).fill(0x62) });
    expect(bytes.body_preview).toBe("b".repeat(16_384));
  });
});

describe("responseCapture", () => {
  test("maps a dispatch result to the documented field names (docs/api.md)", () => {
    const c = responseCapture({
      status: 503,
      headers: { "retry-after": "30" },
      bodyPreview: "busy",
      networkError: null,
    });
    expect(c).toEqual({
      status: 503,
      headers: { "retry-after": "30" },
      body_preview: "busy",
      network_error: null,
    });
  });

  test("a network error has status 0 and an empty preview", () => {
    const c = responseCapture({
      status: 0,
      headers: {},
      bodyPreview: "",
      networkError: "timeout after 10000 ms",
    });
    expect(c).toEqual({ status: 0, headers: {}, body_preview: "", network_error: "timeout after 10000 ms" });
  });
});

describe("bodyPreview", () => {
  test("counts UTF-8 bytes and drops a character cut by the cap", () => {
    const text = `${"a".repeat(16_383)}é tail`; // é is 2 bytes and straddles the 16 KiB boundary
    expect(bodyPreview(text)).toBe("a".repeat(16_383));
  });

  test("a long body's preview is its first 16 KiB, whatever its length or its characters' widths", () => {
    expect(bodyPreview("b".repeat(5_000_000))).toBe("b".repeat(16_384));
    // 3-byte characters: 5,461 whole ones fit in 16 KiB
    expect(bodyPreview("€".repeat(100_000))).toBe("€".repeat(5_461));
    expect(bodyPreview("short")).toBe("short");
  });

  test("replaces invalid UTF-8 instead of throwing", () => {
    expect(bodyPreview(new Uint8Array([0x61, 0xff, 0x62]))).toBe("a\uFFFDb");
  });
});
