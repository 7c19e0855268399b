/**
 * Delivery signatures and the idempotency key (docs/delivery.md).
 *
 * Two signatures go on every attempt over the exact body bytes that are sent:
 * - `X-Service-Signature` — Stripe/MailWebhook style; HMAC key = UTF-8 bytes of the whole secret
 *   string, `whsec_` prefix included, so their verifiers work unchanged.
 * - Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`); HMAC key = the bytes
 *   the base64 after `whsec_` decodes to, that standard's convention.
 *
 * Pure apart from `newSigningSecret`'s randomness, which is injectable.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/** A request body exactly as it goes on the wire. Strings are encoded as UTF-8. */
export type SignableBody = string | Uint8Array;

const SECRET_PREFIX = "whsec_";
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The deterministic `X-Idempotency-Key` (also `webhook-id`): lowercase hex SHA-256 of
 * `lowercase(trim(messageId)) + "|" + routeId`. The Message-ID keeps its angle brackets, so
 * `<A@x>` and ` <a@X> ` give the same key; the route id is taken verbatim.
 */
export function idempotencyKey(messageId: string, routeId: string): string {
  return createHash("sha256").update(`${messageId.trim().toLowerCase()}|${routeId}`, "utf8").digest("hex");
}

/** A fresh route signing secret: `whsec_` + base64 of 32 random bytes (docs/api.md). */
export function newSigningSecret(random: (size: number) => Uint8Array = randomBytes): string {
  return SECRET_PREFIX + Buffer.from(random(32)).toString("base64");
}

/** Inputs of {@link signatureHeaders}. */
export interface SignatureInput {
  /** The route signing secret, `whsec_<base64>`. */
  secret: string;
  /** Key id of the secret, echoed in `X-Service-Signature` so receivers can rotate. */
  kid: string;
  /** The body exactly as sent. */
  body: SignableBody;
  /** Unix time in whole seconds; a new value per attempt (spec, Authentication rule 5). */
  timestampSec: number;
  /** {@link idempotencyKey} of the event; becomes `webhook-id`. */
  idempotencyKey: string;
}

/** The signature headers of one attempt, named as sent. */
export interface SignatureHeaders {
  "X-Service-Signature": string;
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** Signs one attempt; see the module comment for the two key conventions. */
export function signatureHeaders(input: SignatureInput): SignatureHeaders {
  const { secret, kid, body, timestampSec, idempotencyKey: id } = input;
  assertTimestamp(timestampSec);
  if (/[\s,=]/.test(kid) || kid.length === 0) {
    // The header is a comma-separated list of k=v pairs; a kid with those characters breaks parsing.
    throw new Error("signing key id must be non-empty and contain no whitespace, ',' or '='");
  }
  const t = String(timestampSec);
  const v1 = hmacBase64(Buffer.from(secret, "utf8"), [`${t}.`, body]);
  const sw = hmacBase64(standardWebhooksKey(secret), [`${id}.${t}.`, body]);
  return {
    "X-Service-Signature": `t=${t}, kid=${kid}, v1=${v1}`,
    "webhook-id": id,
    "webhook-timestamp": t,
    "webhook-signature": `v1,${sw}`,
  };
}

/** Inputs of {@link verifyServiceSignature}. */
export interface VerifyInput {
  /** The received `X-Service-Signature` value. */
  header: string;
  /** Candidate secrets by kid; a receiver mid-rotation holds several. */
  secrets: Readonly<Record<string, string>>;
  /** The raw received body. */
  body: SignableBody;
  /** Receiver's current Unix time in seconds (injected clock). */
  nowSec: number;
  /** Accepted clock skew either way, seconds. Default 300, as Stripe and Standard Webhooks use. */
  toleranceSec?: number;
}

/** Result of {@link verifyServiceSignature}. */
export type VerifyResult =
  | { ok: true; kid: string; timestampSec: number }
  | { ok: false; reason: "malformed" | "unknown_kid" | "timestamp_out_of_tolerance" | "mismatch" };

/**
 * Verifies an `X-Service-Signature` the way a receiver should: parse, check the timestamp window,
 * recompute and compare in constant time. Used by our receiver tool and tests; several `v1=`
 * entries are accepted (any match wins), like Stripe's verifier.
 */
export function verifyServiceSignature(input: VerifyInput): VerifyResult {
  const parsed = parseServiceSignature(input.header);
  if (!parsed) return { ok: false, reason: "malformed" };
  const secret = input.secrets[parsed.kid];
  if (secret === undefined) return { ok: false, reason: "unknown_kid" };
  const tolerance = input.toleranceSec ?? 300;
  if (Math.abs(input.nowSec - parsed.t) > tolerance) {
    return { ok: false, reason: "timestamp_out_of_tolerance" };
  }
  const expected = createHmac("sha256", Buffer.from(secret, "utf8"))
    .update(`${parsed.t}.`, "utf8")
    .update(toBytes(input.body))
    .digest();
  const matched = parsed.v1.some((candidate) => {
    const got = Buffer.from(candidate, "base64");
    return got.length === expected.length && timingSafeEqual(got, expected);
  });
  return matched ? { ok: true, kid: parsed.kid, timestampSec: parsed.t } : { ok: false, reason: "mismatch" };
}

function parseServiceSignature(header: string): { t: number; kid: string; v1: string[] } | null {
  let t: number | undefined;
  let kid: string | undefined;
  const v1: string[] = [];
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) return null;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t" && /^\d{1,12}$/.test(value)) t = Number(value);
    else if (key === "kid" && value.length > 0) kid = value;
    else if (key === "v1" && BASE64.test(value)) v1.push(value);
  }
  if (t === undefined || kid === undefined || v1.length === 0) return null;
  return { t, kid, v1 };
}

function standardWebhooksKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error("signing secret must start with whsec_");
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!BASE64.test(encoded)) throw new Error("signing secret must be whsec_ followed by base64");
  return Buffer.from(encoded, "base64");
}

function hmacBase64(key: Uint8Array, parts: readonly SignableBody[]): string {
  const mac = createHmac("sha256", key);
  for (const part of parts) mac.update(toBytes(part));
  return mac.digest("base64");
}

function toBytes(body: SignableBody): Uint8Array {
  return typeof body === "string" ? Buffer.from(body, "utf8") : body;
}

function assertTimestamp(t: number): void {
  if (!Number.isSafeInteger(t) || t < 0) throw new Error(`timestampSec must be whole Unix seconds, got ${t}`);
}
