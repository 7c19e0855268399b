/**
 * Helpers for the ingest integration tests: build raw messages (CRLF, as SMTP carries them), set up
 * routes through the API, and read what the intake stored.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { TestApp } from "./app.ts";

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Uint8Array | string;
  /** default base64 */
  encoding?: "base64" | "7bit";
  contentId?: string;
}

export interface MailSpec {
  /** null → no Message-ID header */
  messageId?: string | null;
  from?: string;
  to?: string;
  subject?: string;
  text?: string;
  attachments?: MailAttachment[];
  extraHeaders?: string[];
}

let seq = 0;

/** A unique Message-ID for a test message. */
export function uniqueMessageId(): string {
  return `<t${Date.now()}.${++seq}.${Math.random().toString(36).slice(2)}@test.example>`;
}

function base64Lines(bytes: Uint8Array): string {
  const b64 = Buffer.from(bytes).toString("base64");
  const lines: string[] = [];
  for (let i = 0; i < b64.length; i += 76) lines.push(b64.slice(i, i + 76));
  return lines.join("\r\n");
}

/** Builds a raw RFC 5322 message with CRLF line ends. */
export function buildMail(spec: MailSpec = {}): Uint8Array<ArrayBuffer> {
  const messageId = spec.messageId === undefined ? uniqueMessageId() : spec.messageId;
  const head = [
    `From: ${spec.from ?? "Alice <alice@example.com>"}`,
    `To: ${spec.to ?? "bob@example.org"}`,
    `Subject: ${spec.subject ?? "hello"}`,
    "Date: Mon, 06 May 2024 07:08:09 +0000",
    ...(messageId === null ? [] : [`Message-ID: ${messageId}`]),
    "MIME-Version: 1.0",
    ...(spec.extraHeaders ?? []),
  ];
  const text = spec.text ?? "Hello Bob.";
  const atts = spec.attachments ?? [];
  if (atts.length === 0) {
    return enc([...head, "Content-Type: text/plain; charset=utf-8", "", text, ""].join("\r\n"));
  }
  const boundary = `b_${Math.random().toString(36).slice(2)}`;
  const parts = [[`--${boundary}`, "Content-Type: text/plain; charset=utf-8", "", text].join("\r\n")];
  for (const a of atts) {
    const bytes = typeof a.content === "string" ? enc(a.content) : a.content;
    const encoding = a.encoding ?? "base64";
    const body = encoding === "base64" ? base64Lines(bytes) : Buffer.from(bytes).toString("latin1");
    parts.push(
      [
        `--${boundary}`,
        `Content-Type: ${a.contentType}; name="${a.filename}"`,
        `Content-Disposition: attachment; filename="${a.filename}"`,
        `Content-Transfer-Encoding: ${encoding}`,
        ...(a.contentId ? [`Content-ID: <${a.contentId}>`] : []),
        "",
        body,
      ].join("\r\n"),
    );
  }
  const mime = [`Content-Type: multipart/mixed; boundary="${boundary}"`];
  return enc([...head, ...mime, "", ...parts, `--${boundary}--`, ""].join("\r\n"));
}

function enc(s: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(Buffer.from(s, "latin1"));
}

/** Creates an endpoint, a signing secret and a route; returns the route id. */
export async function addRoute(
  app: TestApp,
  apiKey: string,
  route: { name?: string; rule?: unknown; pipeline?: unknown; enabled?: boolean } = {},
): Promise<string> {
  const ep = await app.request("POST", "/v1/endpoints", {
    apiKey,
    body: { url: "http://127.0.0.1:9/hook" },
  });
  if (ep.status !== 201) throw new Error(`endpoint: ${ep.status} ${ep.text}`);
  const sec = await app.request("POST", "/v1/signing-secrets", { apiKey, body: {} });
  if (sec.status !== 201) throw new Error(`signing secret: ${sec.status} ${sec.text}`);
  const r = await app.request("POST", "/v1/routes", {
    apiKey,
    body: {
      name: route.name ?? "route",
      endpoint_id: ep.body.id,
      signing_secret_kid: sec.body.kid,
      ...(route.rule !== undefined ? { rule: route.rule } : {}),
      ...(route.pipeline !== undefined ? { pipeline: route.pipeline } : {}),
      ...(route.enabled !== undefined ? { enabled: route.enabled } : {}),
    },
  });
  if (r.status !== 201) throw new Error(`route: ${r.status} ${r.text}`);
  return r.body.id;
}

/** POSTs a raw message to /v1/messages. */
export function postMessage(app: TestApp, apiKey: string, raw: Uint8Array, contentType = "message/rfc822") {
  return app.request("POST", "/v1/messages", {
    apiKey,
    rawBody: raw as Uint8Array<ArrayBuffer>,
    headers: { "content-type": contentType },
  });
}

/** Number of rows in a table (optionally for one project). */
export async function countRows(
  app: TestApp,
  table: "messages" | "events" | "attachments",
  projectId?: string,
): Promise<number> {
  const where =
    projectId === undefined
      ? sql``
      : table === "attachments"
        ? sql` where message_pk in (select id from messages where project_id = ${projectId})`
        : sql` where project_id = ${projectId}`;
  const rows = await app.ctx.database.rows<{ n: number | string }>(
    sql`select count(*)::int as n from ${sql.identifier(table)}${where}`,
  );
  return Number(rows[0]?.n ?? 0);
}

/** Files under DATA_DIR/blobs (content-addressed blobs), ignoring directories. */
export function blobFiles(app: TestApp): string[] {
  const root = join(app.ctx.config.dataDir, "blobs");
  try {
    return readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => join(d.parentPath, d.name));
  } catch {
    return [];
  }
}

/** Files left in DATA_DIR/spool. */
export function spoolFiles(app: TestApp): string[] {
  try {
    return readdirSync(join(app.ctx.config.dataDir, "spool"));
  } catch {
    return [];
  }
}
