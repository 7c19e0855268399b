import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import {
  idempotencyKey,
  newSigningSecret,
  signatureHeaders,
  verifyServiceSignature,
} from "../../../services/lib/signing.ts";

// A fixed secret: "whsec_" + base64 of the bytes 0x00..0x1f.
const SECRET = `whsec_${Buffer.from(Array.from({ length: 32 }, (_, i) => i)).toString("base64")}`;
const BODY = '{"message":{"message_id":"<a@b>"},"body":{"attachments":[]},"note":"héllo ✓"}';
const T = 1_700_000_000;
const ID = idempotencyKey("<A@example.com>", "rte_1");

/**
 * An independent, Stripe-style verifier of X-Service-Signature written against WebCrypto (not the
 * node:crypto HMAC the implementation uses): parse the header, HMAC "<t>." + raw body with the
 * UTF-8 bytes of the whole secret string, compare with every v1 value.
 */
async function stripeStyleVerify(header: string, secret: string, body: Uint8Array): Promise<boolean> {
  const fields = header.split(",").map((part) => {
    const at = part.indexOf("=");
    return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
  });
  const t = fields.find(([k]) => k === "t")?.[1];
  const v1 = fields.filter(([k]) => k === "v1").map(([, v]) => v);
  if (!t || v1.length === 0) return false;
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const signed = new Uint8Array([...new TextEncoder().encode(`${t}.`), ...body]);
  const mac = Buffer.from(await crypto.subtle.sign("HMAC", key, signed)).toString("base64");
  return v1.includes(mac);
}

describe("idempotencyKey", () => {
  test("is lowercase hex SHA-256 of lowercase(trim(message id)) | route id, angle brackets kept", () => {
    const expected = new Bun.CryptoHasher("sha256").update("<a@example.com>|rte_1").digest("hex");
    expect(idempotencyKey("<A@Example.COM>", "rte_1")).toBe(expected);
    expect(idempotencyKey("  <a@example.com>\r\n", "rte_1")).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
  });

  test("differs per route and keeps the angle brackets significant", () => {
    expect(idempotencyKey("<a@b>", "r1")).not.toBe(idempotencyKey("<a@b>", "r2"));
    expect(idempotencyKey("<a@b>", "r1")).not.toBe(idempotencyKey("a@b", "r1"));
  });
});

describe("signatureHeaders", () => {
  const headers = signatureHeaders({
    secret: SECRET,
    kid: "k1",
    body: BODY,
    timestampSec: T,
    idempotencyKey: ID,
  });

  test("X-Service-Signature has the documented format and verifies with an independent Stripe-style verifier", async () => {
    expect(headers["X-Service-Signature"]).toMatch(/^t=1700000000, kid=k1, v1=[A-Za-z0-9+/]{43}=$/);
    expect(
      await stripeStyleVerify(headers["X-Service-Signature"], SECRET, new TextEncoder().encode(BODY)),
    ).toBe(true);
    const tampered = new TextEncoder().encode(BODY.replace("héllo", "hello"));
    expect(await stripeStyleVerify(headers["X-Service-Signature"], SECRET, tampered)).toBe(false);
  });

  test("the X-Service-Signature key is the whole secret string, whsec_ included", async () => {
    const withoutPrefix = SECRET.slice("whsec_".length);
    const bytes = new TextEncoder().encode(BODY);
    expect(await stripeStyleVerify(headers["X-Service-Signature"], withoutPrefix, bytes)).toBe(false);
  });

  test("webhook-* headers match the standardwebhooks package's signature for the same id, time and body", () => {
    expect(headers["webhook-id"]).toBe(ID);
    expect(headers["webhook-timestamp"]).toBe("1700000000");
    expect(headers["webhook-signature"]).toBe(new Webhook(SECRET).sign(ID, new Date(T * 1000), BODY));
  });

  test("a fresh signature passes standardwebhooks' verify and a tampered body fails it", () => {
    const now = Math.floor(Date.now() / 1000);
    const h = signatureHeaders({
      secret: SECRET,
      kid: "k1",
      body: BODY,
      timestampSec: now,
      idempotencyKey: ID,
    });
    const wh = new Webhook(SECRET);
    expect(wh.verify(BODY, { ...h })).toEqual(JSON.parse(BODY));
    expect(() => wh.verify(`${BODY} `, { ...h })).toThrow();
  });

  test("signs raw bytes exactly as sent, including bytes that are not UTF-8", async () => {
    const raw = new Uint8Array([0x7b, 0xff, 0xfe, 0x00, 0x7d]);
    const h = signatureHeaders({ secret: SECRET, kid: "k1", body: raw, timestampSec: T, idempotencyKey: ID });
    expect(await stripeStyleVerify(h["X-Service-Signature"], SECRET, raw)).toBe(true);
    expect(
      verifyServiceSignature({
        header: h["X-Service-Signature"],
        secrets: { k1: SECRET },
        body: raw,
        nowSec: T,
      }).ok,
    ).toBe(true);
  });

  test("a string body and its UTF-8 bytes give the same signatures", () => {
    const h = signatureHeaders({
      secret: SECRET,
      kid: "k1",
      body: new TextEncoder().encode(BODY),
      timestampSec: T,
      idempotencyKey: ID,
    });
    expect(h).toEqual(headers);
  });

  test.each([
    ["a secret without whsec_", { secret: "abc" }],
    ["a secret whose tail is not base64", { secret: "whsec_not base64!" }],
    ["a fractional timestamp", { timestampSec: 1.5 }],
    ["a kid with a comma", { kid: "a,b" }],
    ["an empty kid", { kid: "" }],
  ])("rejects %s", (_name, override) => {
    const input = { secret: SECRET, kid: "k1", body: BODY, timestampSec: T, idempotencyKey: ID, ...override };
    expect(() => signatureHeaders(input)).toThrow();
  });
});

describe("newSigningSecret", () => {
  test("is whsec_ + base64 of 32 bytes from the injected source", () => {
    const secret = newSigningSecret((n) => new Uint8Array(n).fill(7));
    expect(secret).toBe(`whsec_${Buffer.alloc(32, 7).toString("base64")}`);
    expect(Buffer.from(newSigningSecret().slice(6), "base64")).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(newSigningSecret());
  });

  test("produces secrets standardwebhooks accepts", () => {
    const secret = newSigningSecret();
    const now = Math.floor(Date.now() / 1000);
    const h = signatureHeaders({ secret, kid: "k", body: "{}", timestampSec: now, idempotencyKey: ID });
    expect(new Webhook(secret).verify("{}", { ...h })).toEqual({});
  });
});

describe("verifyServiceSignature", () => {
  const header = signatureHeaders({
    secret: SECRET,
    kid: "k1",
    body: BODY,
    timestampSec: T,
    idempotencyKey: ID,
  })["X-Service-Signature"];
  const base = { header, secrets: { k1: SECRET }, body: BODY, nowSec: T + 10 };

  test("accepts a valid signature within tolerance and reports its kid and time", () => {
    expect(verifyServiceSignature(base)).toEqual({ ok: true, kid: "k1", timestampSec: T });
  });

  test("accepts when any of several v1 values matches (rotation)", () => {
    const v1 = header.split("v1=")[1];
    const multi = `t=${T}, kid=k1, v1=${Buffer.alloc(32).toString("base64")}, v1=${v1}`;
    expect(verifyServiceSignature({ ...base, header: multi }).ok).toBe(true);
  });

  test.each([
    ["a changed body", { body: `${BODY}x` }, "mismatch"],
    ["another secret", { secrets: { k1: newSigningSecret() } }, "mismatch"],
    ["an unknown kid", { secrets: { k2: SECRET } }, "unknown_kid"],
    ["a timestamp 301 s old", { nowSec: T + 301 }, "timestamp_out_of_tolerance"],
    ["a timestamp 301 s ahead", { nowSec: T - 301 }, "timestamp_out_of_tolerance"],
    ["a header without v1", { header: `t=${T}, kid=k1` }, "malformed"],
    ["a header without t", { header: header.replace(/^t=\d+, /, "") }, "malformed"],
    ["garbage", { header: "nonsense" }, "malformed"],
  ])("rejects %s", (_name, override, reason) => {
    expect(verifyServiceSignature({ ...base, ...override })).toEqual({ ok: false, reason } as never);
  });

  test("tolerance is configurable", () => {
    expect(verifyServiceSignature({ ...base, nowSec: T + 301, toleranceSec: 600 }).ok).toBe(true);
  });
});
