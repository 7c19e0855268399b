/**
 * A mailhook webhook receiver in one file, for Bun or Node 22+ (only `node:` built-ins): copy it, keep
 * the two verify functions, and replace `acceptDelivery` with your own durable write.
 *
 *   bun docs/receivers/verify.ts --port 4000 --secret whsec_… [--kid kid_…] [--inbox inbox.jsonl]
 *   node --experimental-strip-types docs/receivers/verify.ts …   (Node 22.6+; plain `node` on 23.6+)
 *
 * What it does with each POST, in this order (docs/receivers.md explains why):
 * 1. reads the raw body bytes — the signature covers bytes, never re-serialised JSON;
 * 2. verifies every signature scheme whose headers are present (at least one must be):
 *    `X-Service-Signature` (HMAC-SHA256 keyed with the whole `whsec_…` string, `t.body`) and
 *    Standard Webhooks (`webhook-id/-timestamp/-signature`, key = base64 after `whsec_`, `id.t.body`),
 *    with a ±5 minute timestamp tolerance and constant-time comparison → 401 when invalid;
 * 3. dedupes by `X-Idempotency-Key`: a key already accepted answers 200 again without new work;
 * 4. appends the delivery to an inbox file and fsyncs it, and only then answers 2xx. A failed write
 *    answers 503 so mailhook retries. Do the side effects from the inbox, after the response.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

/** Result of a signature check. */
export type Verification = { ok: true; kid?: string; timestamp: number } | { ok: false; reason: string };

const TOLERANCE_SEC = 300;

function safeEqualBase64(a: string, expected: Buffer): boolean {
  const got = Buffer.from(a, "base64");
  return got.length === expected.length && timingSafeEqual(got, expected);
}

/**
 * Verifies `X-Service-Signature: t=<unix>, kid=<kid>, v1=<base64>`: v1 = base64 HMAC-SHA256 keyed with
 * the UTF-8 bytes of the whole secret (`whsec_` included) over `"<t>." + rawBody`. `secrets` maps kid →
 * secret, so a receiver can hold the old and the new secret while rotating.
 */
export function verifyServiceSignature(
  rawBody: Uint8Array,
  header: string,
  secrets: Record<string, string>,
  nowSec = Math.floor(Date.now() / 1000),
): Verification {
  const fields = new Map<string, string[]>();
  for (const part of header.split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) return { ok: false, reason: "malformed header" };
    const key = part.slice(0, eq).trim();
    fields.set(key, [...(fields.get(key) ?? []), part.slice(eq + 1).trim()]);
  }
  const t = Number(fields.get("t")?.[0]);
  const kid = fields.get("kid")?.[0];
  const candidates = fields.get("v1") ?? [];
  if (!Number.isInteger(t) || !kid || candidates.length === 0)
    return { ok: false, reason: "malformed header" };
  const secret = secrets[kid];
  if (secret === undefined) return { ok: false, reason: `unknown kid ${kid}` };
  if (Math.abs(nowSec - t) > TOLERANCE_SEC) return { ok: false, reason: "timestamp outside tolerance" };
  const expected = createHmac("sha256", Buffer.from(secret, "utf8")).update(`${t}.`).update(rawBody).digest();
  return candidates.some((c) => safeEqualBase64(c, expected))
    ? { ok: true, kid, timestamp: t }
    : { ok: false, reason: "signature mismatch" };
}

/**
 * Verifies the Standard Webhooks headers (https://www.standardwebhooks.com/): `webhook-signature` is a
 * space-separated list of `v1,<base64>`; each is HMAC-SHA256 keyed with the bytes the base64 after
 * `whsec_` decodes to, over `"<webhook-id>.<webhook-timestamp>." + rawBody`.
 */
export function verifyStandardWebhook(
  rawBody: Uint8Array,
  headers: { id: string; timestamp: string; signature: string },
  secrets: string[],
  nowSec = Math.floor(Date.now() / 1000),
): Verification {
  const t = Number(headers.timestamp);
  if (!/^\d+$/.test(headers.timestamp)) return { ok: false, reason: "malformed webhook-timestamp" };
  if (Math.abs(nowSec - t) > TOLERANCE_SEC) return { ok: false, reason: "timestamp outside tolerance" };
  const candidates = headers.signature
    .split(" ")
    .filter((s) => s.startsWith("v1,"))
    .map((s) => s.slice(3));
  for (const secret of secrets) {
    const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
    const expected = createHmac("sha256", key)
      .update(`${headers.id}.${headers.timestamp}.`)
      .update(rawBody)
      .digest();
    if (candidates.some((c) => safeEqualBase64(c, expected))) return { ok: true, timestamp: t };
  }
  return { ok: false, reason: "signature mismatch" };
}

/** Checks every scheme whose headers are present; at least one must be, and all present must pass. */
export function verifyDelivery(
  rawBody: Uint8Array,
  header: (name: string) => string | undefined,
  secrets: Record<string, string>,
  nowSec?: number,
): Verification {
  const service = header("x-service-signature");
  const sw = {
    id: header("webhook-id"),
    timestamp: header("webhook-timestamp"),
    signature: header("webhook-signature"),
  };
  if (!service && !sw.signature) return { ok: false, reason: "no signature headers" };
  let result: Verification = { ok: false, reason: "no signature headers" };
  if (service) {
    result = verifyServiceSignature(rawBody, service, secrets, nowSec);
    if (!result.ok) return result;
  }
  if (sw.signature) {
    if (!sw.id || !sw.timestamp) return { ok: false, reason: "incomplete Standard Webhooks headers" };
    const swResult = verifyStandardWebhook(
      rawBody,
      { id: sw.id, timestamp: sw.timestamp, signature: sw.signature },
      Object.values(secrets),
      nowSec,
    );
    if (!swResult.ok) return swResult;
    if (!service) result = swResult;
  }
  return result;
}

/**
 * A durable inbox: one JSON line per accepted delivery, fsynced before we answer 2xx. The set of
 * accepted idempotency keys is rebuilt from the file at start. Swap in your database: insert the key
 * (unique) and the body in one transaction, commit, then answer.
 */
export function openInbox(path: string) {
  const seen = new Set<string>();
  if (existsSync(path)) {
    for (const line of readFileSync(path, "utf8").split("\n")) {
      if (line.trim()) seen.add((JSON.parse(line) as { key: string }).key);
    }
  }
  return {
    has: (key: string) => seen.has(key),
    /** Appends and fsyncs; throws when the write fails (then answer 503 so mailhook retries). */
    accept(key: string, body: string): void {
      const fd = openSync(path, "a");
      try {
        appendFileSync(fd, `${JSON.stringify({ key, received_at: new Date().toISOString(), body })}\n`);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      seen.add(key);
    },
  };
}

async function readBody(req: IncomingMessage): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (import.meta.main) {
  const secret = arg("secret");
  if (!secret?.startsWith("whsec_")) {
    console.error("usage: verify.ts --secret whsec_… [--kid kid_…] [--port 4000] [--inbox inbox.jsonl]");
    process.exit(2);
  }
  const kid = arg("kid");
  // With --kid only that key id is accepted; without it, the one secret serves whatever kid is named.
  const secretsFor = (serviceHeader: string | undefined): Record<string, string> => {
    const named = /kid=([^,\s]+)/.exec(serviceHeader ?? "")?.[1];
    return { [kid ?? named ?? "default"]: secret };
  };
  const inbox = openInbox(arg("inbox") ?? "inbox.jsonl");

  const server = createServer(async (req, res) => {
    const send = (status: number, body: object) => {
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
    };
    if (req.method !== "POST") return send(405, { error: "POST only" });
    const raw = await readBody(req);
    const header = (name: string) => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const verified = verifyDelivery(raw, header, secretsFor(header("x-service-signature")));
    if (!verified.ok) {
      console.log(JSON.stringify({ rejected: verified.reason }));
      return send(401, { error: verified.reason });
    }
    const key = header("x-idempotency-key") ?? header("webhook-id");
    if (!key) return send(400, { error: "missing X-Idempotency-Key" });
    if (inbox.has(key)) return send(200, { duplicate: true });
    try {
      inbox.accept(key, Buffer.from(raw).toString("utf8"));
    } catch (err) {
      console.error("could not store the delivery", err);
      return send(503, { error: "not stored; retry later" });
    }
    console.log(JSON.stringify({ accepted: key }));
    send(200, { accepted: true });
  });
  server.listen(Number(arg("port") ?? 4000), "127.0.0.1", () => {
    console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  });
}
