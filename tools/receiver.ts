/**
 * A webhook receiver for trying mailhook locally: verifies both signature schemes, dedupes by
 * `X-Idempotency-Key`, and prints each delivery as one readable block (attachments listed, with the
 * API path that issues their download URL).
 *
 *   bun tools/receiver --port 4000 --secret whsec_… [--kid kid_…] [--store deliveries.jsonl]
 *                      [--tolerance 300] [--status 200] [--json]
 *
 * Answers: 401 when a signature is missing, malformed, stale or wrong; 200 `{duplicate: true}` for a
 * key already accepted (a retry or replay of accepted work); otherwise `--status` (default 200) after
 * the delivery is recorded (appended to `--store` and fsynced when given). `--status 503` lets you
 * watch retries. `--json` prints one JSON line per delivery instead of the block.
 */
import { appendFileSync, closeSync, existsSync, fsyncSync, openSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { Webhook } from "standardwebhooks";
import { verifyServiceSignature } from "../services/lib/signing.ts";

/** Options of {@link startReceiverTool}. */
export interface ReceiverToolOptions {
  port: number;
  hostname?: string;
  secret: string;
  /** Only this kid is accepted; default: whatever kid the header names. */
  kid?: string;
  store?: string;
  toleranceSec?: number;
  /** Status for accepted deliveries (e.g. 503 to watch retries). */
  status?: number;
  json?: boolean;
  /** Where lines go; default stdout. */
  print?: (text: string) => void;
}

/** One accepted delivery as recorded. */
export interface RecordedDelivery {
  key: string;
  received_at: string;
  kid: string;
  timestamp: number;
  body: unknown;
}

interface AttachmentLike {
  id?: unknown;
  filename?: unknown;
  content_type?: unknown;
  size?: unknown;
  sha256?: unknown;
}

const GREY = (s: string) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);
const BOLD = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

function humanSize(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** The block printed for one delivery; understands the generic@1 body, prints others as JSON. */
export function formatDelivery(d: RecordedDelivery, index: number): string {
  const body = asRecord(d.body);
  const message = asRecord(body?.message);
  const generic = asRecord(body?.body);
  const attachments = (generic?.attachments ?? body?.attachments) as AttachmentLike[] | undefined;
  const lines = [BOLD(`── delivery #${index} ─ ${d.received_at} ${"─".repeat(20)}`)];
  const row = (k: string, v: string) => lines.push(`  ${GREY(k.padEnd(16))} ${v}`);
  row("idempotency key", d.key);
  row("signature", `ok (kid ${d.kid}, t=${d.timestamp}); Standard Webhooks ok`);
  const messageId = typeof message?.message_id === "string" ? message.message_id : undefined;
  if (message) {
    const emails = (v: unknown) =>
      Array.isArray(v) ? v.map((p) => asRecord(p)?.email ?? "?").join(", ") : "";
    row("message", `${messageId ?? "?"}`);
    row("subject", JSON.stringify(message.subject ?? ""));
    row("from → to", `${emails(message.from)} → ${emails(message.to)}`);
  }
  if (typeof generic?.text === "string") {
    const text = generic.text.trim().split("\n").slice(0, 5).join("\n                   ");
    row("text", text || GREY("(empty)"));
  }
  if (Array.isArray(attachments)) {
    row("attachments", String(attachments.length));
    for (const a of attachments) {
      const size = typeof a.size === "number" ? humanSize(a.size) : "?";
      lines.push(`    ${a.id}  ${a.filename}  ${a.content_type}  ${size}`);
      if (messageId && typeof a.id === "string") {
        const path = `/v1/messages/${encodeURIComponent(messageId)}/attachments/${encodeURIComponent(a.id)}/url`;
        lines.push(GREY(`      download URL: GET ${path}`));
      }
    }
  }
  if (!message) {
    row("body", JSON.stringify(d.body, null, 2).split("\n").join("\n                   "));
  }
  return lines.join("\n");
}

function loadStore(path: string | undefined): Set<string> {
  const keys = new Set<string>();
  if (path && existsSync(path)) {
    for (const line of readFileSync(path, "utf8").split("\n")) {
      if (line.trim()) keys.add((JSON.parse(line) as RecordedDelivery).key);
    }
  }
  return keys;
}

function appendDurably(path: string, line: string): void {
  const fd = openSync(path, "a");
  try {
    appendFileSync(fd, `${line}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Starts the receiver; returns the server (its `port`) and the accepted deliveries. */
export function startReceiverTool(opts: ReceiverToolOptions) {
  const print = opts.print ?? ((t: string) => console.log(t));
  const tolerance = opts.toleranceSec ?? 300;
  const standard = new Webhook(opts.secret);
  const seen = loadStore(opts.store);
  const accepted: RecordedDelivery[] = [];
  let count = seen.size;

  const server = Bun.serve({
    port: opts.port,
    hostname: opts.hostname ?? "127.0.0.1",
    async fetch(req) {
      if (req.method !== "POST") return Response.json({ error: "POST deliveries here" }, { status: 405 });
      const raw = new Uint8Array(await req.arrayBuffer());
      const header = req.headers.get("x-service-signature") ?? "";
      const kid = opts.kid ?? /kid=([^,\s]+)/.exec(header)?.[1] ?? "";
      const service = verifyServiceSignature({
        header,
        secrets: { [kid]: opts.secret },
        body: raw,
        nowSec: Math.floor(Date.now() / 1000),
        toleranceSec: tolerance,
      });
      let problem = service.ok ? null : `X-Service-Signature: ${service.reason}`;
      if (!problem) {
        try {
          standard.verify(Buffer.from(raw), Object.fromEntries(req.headers));
        } catch (err) {
          problem = `Standard Webhooks: ${(err as Error).message}`;
        }
      }
      if (problem || !service.ok) {
        print(`✗ rejected (401): ${problem}`);
        return Response.json({ error: problem }, { status: 401 });
      }
      const key = req.headers.get("x-idempotency-key") ?? req.headers.get("webhook-id") ?? "";
      if (seen.has(key)) {
        print(GREY(`↺ duplicate ${key} (already accepted) → 200`));
        return Response.json({ duplicate: true });
      }
      const text = new TextDecoder().decode(raw);
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {}
      const d: RecordedDelivery = {
        key,
        received_at: new Date().toISOString(),
        kid: service.kid,
        timestamp: service.timestampSec,
        body,
      };
      const status = opts.status ?? 200;
      if (status >= 200 && status < 300) {
        // Durable before 2xx: a crash after the answer must not lose the delivery.
        if (opts.store) appendDurably(opts.store, JSON.stringify(d));
        seen.add(key);
        accepted.push(d);
      }
      count += 1;
      print(opts.json ? JSON.stringify(d) : `${formatDelivery(d, count)}\n`);
      return Response.json({ accepted: status < 300 }, { status });
    },
  });
  return { server, accepted, port: server.port as number };
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      port: { type: "string", default: "4000" },
      host: { type: "string", default: "127.0.0.1" },
      secret: { type: "string" },
      kid: { type: "string" },
      store: { type: "string" },
      tolerance: { type: "string", default: "300" },
      status: { type: "string", default: "200" },
      json: { type: "boolean", default: false },
    },
  });
  if (!values.secret?.startsWith("whsec_")) {
    console.error(
      "usage: bun tools/receiver --port 4000 --secret whsec_… [--kid kid_…] [--store file.jsonl]",
    );
    process.exit(2);
  }
  const { port } = startReceiverTool({
    port: Number(values.port),
    hostname: values.host,
    secret: values.secret,
    ...(values.kid ? { kid: values.kid } : {}),
    ...(values.store ? { store: values.store } : {}),
    toleranceSec: Number(values.tolerance),
    status: Number(values.status),
    json: values.json,
  });
  console.log(
    `receiver listening on http://${values.host}:${port}  (verifying with ${values.kid ?? "any kid"})`,
  );
}
