/**
 * Helpers for the ingest integration tests: set up routes through the API, post raw messages (built
 * with `raw-mail.ts`), and read what the intake stored.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { TestApp } from "./app.ts";
import { buildMail } from "./raw-mail.ts";

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

/**
 * POSTs a message whose text body (60,000 lines, about 2 MB) makes a webhook body of over 1 MiB, which
 * delivery keeps in the blob store; returns its first event's id and its Message-ID.
 */
export async function postLargeMessage(app: TestApp, apiKey: string, subject: string) {
  const lines = Array.from({ length: 60_000 }, (_, i) => `Line ${i} of a long report, padded.`);
  const posted = await postMessage(app, apiKey, buildMail({ subject, text: lines.join("\r\n") }));
  if (posted.status !== 202) throw new Error(`POST /v1/messages: ${posted.status} ${posted.text}`);
  return { eventId: posted.body.events[0].id as string, messageId: posted.body.message_id as string };
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
