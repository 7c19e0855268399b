/**
 * A large plain-text message end to end (docs/ingest.md, "Memory and concurrency"): its text body
 * (over the 1 MiB from which a webhook body is encoded once, and over the 2,000,000 characters the
 * reply segmenter reads) is stored whole, `reply_text` keeps the part that was read, the generic@1
 * body carries the whole text and is signed over the bytes received, the attempt's capture previews
 * the first 16 KiB, and every byte stored is counted. A body that large is kept in the blob store:
 * the stored model holds its first 200,000 characters (what the search reads), the messages API and
 * delivery read it back whole; the webhook body is kept in the blob store too (as the bytes sent,
 * which a retry sends again), and erasing the message deletes both blobs.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { BODY_PREFIX_CHARS } from "../../services/attachments/body-blobs.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { verifyServiceSignature } from "../../services/lib/signing.ts";
import { MAX_ANALYZED_CHARS } from "../../services/mail/understand/index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`large plain-text message (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker | null = null;

    beforeAll(async () => {
      // the retry after the first (failed) attempt comes at once
      app = await createTestApp(kind, { env: { RETRY_SCHEDULE: "0,10ms,10ms,10ms,10ms" } });
      rx = await startReceiver();
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await rx?.close();
      await app?.close();
    });

    test("a 2.5 MB text body is delivered whole and signed, reply_text is its first 2,000,000 characters, and usage counts every stored byte", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/large` });
      const lines = Array.from({ length: 100_000 }, (_, i) => `Line ${i} of a long report, padded.`);
      const raw = buildMail({ subject: "large", text: lines.join("\r\n") });
      // as parsed: line ends folded to LF, and the line end that closes the body
      const text = `${lines.join("\n")}\n`;
      expect(raw.byteLength).toBeGreaterThan(2_500_000);
      const posted = await postMessage(app, route.apiKey, raw);
      expect(posted.status, posted.text).toBe(202);

      // the first attempt fails: its body (kept in the blob store) is sent again by the retry
      rx.enqueue({ status: 500 });
      worker = await startWorker(app.ctx, { concurrency: 1, pollMs: 50 });
      const event = await waitForEvent(app.ctx, posted.body.events[0].id, isSettled, 30_000);
      expect(event.status).toBe("delivered");
      const [first, req] = await rx.waitForRequests(2);
      if (!first || !req) throw new Error("no retry received");
      // the retry sends the stored body: the same bytes
      expect(Buffer.compare(Buffer.from(first.body), Buffer.from(req.body))).toBe(0);
      const verdict = verifyServiceSignature({
        header: req.headers["x-service-signature"] ?? "",
        secrets: { [route.kid]: route.secret },
        body: req.body,
        nowSec: Math.floor(Date.now() / 1000),
      });
      expect(verdict.ok).toBe(true);
      const sent = JSON.parse(req.text);
      expect(sent.schema).toEqual({ name: "generic", version: "1" });
      expect(sent.body.text).toBe(text);
      // The body (over 1 MiB) is kept in the blob store, as the bytes sent, not in the event's row.
      expect(event.body).toBeNull();
      const [kept] = await app.ctx.database.rows<{ key: string | null; size: number }>(
        sql`select body_blob_key as key, body_blob_size::float8 as size from events where id = ${event.id}::uuid`,
      );
      if (!kept?.key) throw new Error("the webhook body was not kept in the blob store");
      expect(await new Response(await app.ctx.blobs.read(kept.key)).text()).toBe(req.text);
      expect(Number(kept.size)).toBe(req.body.byteLength);

      const [row] = await app.ctx.database.rows<{
        reply: string;
        stored_text: string;
        text_key: string | null;
        html_key: string | null;
        preview: string;
        stored: number;
        used: number;
        measured: number;
      }>(sql`
        select m.parsed->>'reply_text' as reply, m.parsed->>'text' as stored_text,
          m.text_blob_key as text_key, m.html_blob_key as html_key,
          a.request_capture->>'body_preview' as preview, m.stored_bytes::float8 as stored,
          p.storage_bytes::float8 as used,
          (m.raw_size_bytes + e.body_blob_size + octet_length(a.request_capture::text)
            + octet_length(a.response_capture::text) + octet_length(m.parsed::text))::float8 as measured
        from events e join messages m on m.id = e.message_pk join projects p on p.id = e.project_id
          join attempts a on a.event_id = e.id and a.number = 2
        where e.id = ${event.id}::uuid`);
      if (!row) throw new Error("event not found");
      // the stored model keeps the beginning; the blob holds the whole body as UTF-8
      expect(row.stored_text).toBe(text.slice(0, BODY_PREFIX_CHARS));
      expect(row.html_key).toBeNull();
      if (!row.text_key) throw new Error("the text body was not kept in the blob store");
      const blob = await new Response(await app.ctx.blobs.read(row.text_key)).text();
      expect(blob).toBe(text);
      expect(row.reply).toBe(text.slice(0, MAX_ANALYZED_CHARS).trim());
      expect(row.preview).toBe(req.text.slice(0, 16 * 1024));
      // raw + webhook body + captures + the parsed form (as stored; ingest counted the JSON text it
      // wrote, which can differ from Postgres's rendering by its spacing) + the body's blob
      expect(Number(row.stored)).toBeGreaterThan(Number(row.measured) + text.length - 10_000);
      expect(Number(row.used)).toBe(Number(row.stored));

      // The messages API and the search see the stored body.
      const key = encodeURIComponent(posted.body.message_id);
      const got = await app.request("GET", `/v1/messages/${key}`, { apiKey: route.apiKey });
      expect(got.status).toBe(200);
      expect(got.body.text).toBe(text);
      const found = await app.request("GET", `/v1/messages?q=${encodeURIComponent("1234")}`, {
        apiKey: route.apiKey,
      });
      expect(found.status).toBe(200);
      expect(found.body.items.map((m: { message_id: string }) => m.message_id)).toEqual([
        posted.body.message_id,
      ]);

      // Erasing the message deletes the body's blob (nothing else references it).
      const erased = await app.request("DELETE", `/v1/messages/${key}`, { apiKey: route.apiKey });
      expect(erased.status, JSON.stringify(erased.body)).toBe(204);
      expect(await app.ctx.blobs.stat(row.text_key)).toBeNull();
      expect(await app.ctx.blobs.stat(kept.key)).toBeNull();
    }, 120_000);

    test("a large UTF-8 body with every kind of line end round-trips exactly: raw, stored text and webhook", async () => {
      const route = await seedRoute(app, { url: `${rx.url}/utf8` });
      rx.clear();
      // Over the 1 MiB from which line ends are folded in the raw bytes and the 1 MiB characters from
      // which a body is written to the blob store piece by piece: CR LF, a lone CR, a lone LF, and
      // characters of 2, 3 and 4 UTF-8 bytes (a surrogate pair in the text).
      const lines = Array.from(
        { length: 40_000 },
        (_, i) => `Zeile ${i}: Grüße, 日本語, 🎉 ${"é".repeat(i % 7)}`,
      );
      const body = `${lines.join("\r\n")}\rlone CR\nlone LF\r\n`;
      const raw = buildMail({ subject: "utf-8", text: Buffer.from(body, "utf8").toString("latin1") });
      const rawCopy = Buffer.from(raw);
      const text = `${body.replace(/\r\n/g, "\n")}\n`;
      expect(raw.byteLength).toBeGreaterThan(1024 * 1024);
      expect(text.length).toBeGreaterThan(1024 * 1024);
      const posted = await postMessage(app, route.apiKey, raw);
      expect(posted.status, posted.text).toBe(202);
      worker ??= await startWorker(app.ctx, { concurrency: 1, pollMs: 50 });
      const event = await waitForEvent(app.ctx, posted.body.events[0].id, isSettled, 30_000);
      expect(event.status).toBe("delivered");
      const [req] = await rx.waitForRequests(1);
      if (req?.path !== "/utf8") throw new Error("the webhook was not received");
      expect(req.headers["content-type"]).toBe("application/json");
      expect(Number(req.headers["content-length"])).toBe(req.body.byteLength);
      expect(JSON.parse(req.text).body.text === text).toBe(true);
      expect(
        verifyServiceSignature({
          header: req.headers["x-service-signature"] ?? "",
          secrets: { [route.kid]: route.secret },
          body: req.body,
          nowSec: Math.floor(Date.now() / 1000),
        }).ok,
      ).toBe(true);

      const key = encodeURIComponent(posted.body.message_id);
      const got = await app.request("GET", `/v1/messages/${key}`, { apiKey: route.apiKey });
      expect(got.status).toBe(200);
      expect(got.body.text === text).toBe(true);
      const rawRes = await app.api.handle(
        new Request(`http://localhost/v1/messages/${key}/raw`, { headers: { "x-api-key": route.apiKey } }),
      );
      expect(rawRes.status).toBe(200);
      expect(Buffer.compare(Buffer.from(await rawRes.arrayBuffer()), rawCopy)).toBe(0);
      const [row] = await app.ctx.database.rows<{ text_key: string | null }>(
        sql`select text_blob_key as text_key from messages where id = (select message_pk from events where id = ${event.id}::uuid)`,
      );
      if (!row?.text_key) throw new Error("the text body was not kept in the blob store");
      const blob = Buffer.from(await new Response(await app.ctx.blobs.read(row.text_key)).arrayBuffer());
      expect(Buffer.compare(blob, Buffer.from(text, "utf8"))).toBe(0);
    }, 120_000);
  });
}
