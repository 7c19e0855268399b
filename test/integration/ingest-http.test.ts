// POST /v1/messages and the ingest core behind it, on PGlite and Postgres.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { refOfBytes } from "../../services/attachments/blob-store.ts";
import { INLINE_RAW_MAX_BYTES, readRawMessage } from "../../services/ingest/raw.ts";
import { idempotencyKey } from "../../services/lib/signing.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { addRoute, blobFiles, countRows, postMessage, spoolFiles } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";

const PDF = "%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n";

for (const kind of testDbKinds()) {
  describe(`POST /v1/messages (${kind})`, () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await createTestApp(kind);
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    test("stores the message and creates one pending event per matching route with a route snapshot", async () => {
      const p = await app.newProject();
      const all = await addRoute(app, p.apiKey, { name: "all" });
      const invoices = await addRoute(app, p.apiKey, { name: "inv", rule: { subject_contains: "invoice" } });
      await addRoute(app, p.apiKey, { name: "other", rule: { subject_contains: "nomatch" } });
      await addRoute(app, p.apiKey, { name: "off", enabled: false });
      const raw = buildMail({ messageId: "<Abc.1@Example.com>", subject: "Your invoice" });
      const res = await postMessage(app, p.apiKey, raw);
      expect(res.status, res.text).toBe(202);
      expect(res.body.message_id).toBe("<Abc.1@Example.com>");
      expect(res.body.duplicate).toBe(false);
      expect(res.body.events.map((e: any) => e.route_id).sort()).toEqual([all, invoices].sort());
      expect(res.body.events.every((e: any) => e.status === "pending")).toBe(true);

      const rows = await app.ctx.database.rows<any>(
        sql`select e.*, m.source_type, m.envelope, m.raw_size_bytes from events e join messages m on m.id = e.message_pk where e.project_id = ${p.id} order by e.route_id`,
      );
      expect(rows).toHaveLength(2);
      for (const row of rows) {
        expect(row.source_type).toBe("api");
        expect(row.envelope).toBeNull();
        expect(Number(row.raw_size_bytes)).toBe(raw.byteLength);
        expect(row.next_attempt_at).not.toBeNull();
        expect(row.idempotency_key).toBe(idempotencyKey("<Abc.1@Example.com>", row.route_id));
        expect(row.route_snapshot).toMatchObject({
          route_id: row.route_id,
          endpoint_url: "http://127.0.0.1:9/hook",
          pipeline: { steps: expect.any(Array) },
        });
        expect(row.route_snapshot.kid).toBeString();
        expect(row.route_snapshot.endpoint_id).toBeString();
      }
    });

    test("keeps a small raw message byte-exactly in its row, with no blob", async () => {
      const p = await app.newProject();
      const raw = buildMail({ text: "line one\r\n.leading dot\r\nend" });
      const res = await postMessage(app, p.apiKey, raw);
      expect(res.status, res.text).toBe(202);
      const [row] = await app.ctx.database.rows<{ id: string; raw_blob_key: string | null; n: number }>(
        sql`select id, raw_blob_key, octet_length(raw_bytes) as n from messages where project_id = ${p.id}`,
      );
      expect(row!.raw_blob_key).toBeNull();
      expect(Number(row!.n)).toBe(raw.byteLength);
      const stored = await readRawMessage(app.ctx, row!.id);
      expect(Buffer.from(stored!).equals(Buffer.from(raw))).toBe(true);
      expect(await app.ctx.blobs.stat(refOfBytes(raw).key)).toBeNull();
    });

    test("keeps a raw message over the inline limit byte-exactly in the blob store", async () => {
      const p = await app.newProject();
      const line = "a line of text long enough to fill the message up quickly, again and again.\r\n";
      const raw = buildMail({ text: line.repeat(Math.ceil((INLINE_RAW_MAX_BYTES + 1) / line.length)) });
      expect(raw.byteLength).toBeGreaterThan(INLINE_RAW_MAX_BYTES);
      const res = await postMessage(app, p.apiKey, raw);
      expect(res.status, res.text).toBe(202);
      const [row] = await app.ctx.database.rows<{ id: string; raw_blob_key: string; inline: boolean }>(
        sql`select id, raw_blob_key, raw_bytes is not null as inline from messages where project_id = ${p.id}`,
      );
      expect(row!.inline).toBe(false);
      expect(row!.raw_blob_key).toBe(refOfBytes(raw).key);
      const blob = new Uint8Array(
        await new Response(await app.ctx.blobs.read(row!.raw_blob_key)).arrayBuffer(),
      );
      expect(Buffer.from(blob).equals(Buffer.from(raw))).toBe(true);
      expect(Buffer.from((await readRawMessage(app.ctx, row!.id))!).equals(Buffer.from(raw))).toBe(true);
    });

    test("stores a message that matches no route with an empty event list", async () => {
      const p = await app.newProject();
      const res = await postMessage(app, p.apiKey, buildMail(), "application/octet-stream");
      expect(res.status, res.text).toBe(202);
      expect(res.body.events).toEqual([]);
      expect(await countRows(app, "messages", p.id)).toBe(1);
    });

    test("the same bytes twice are stored once and return the same events", async () => {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      const raw = buildMail();
      const first = await postMessage(app, p.apiKey, raw);
      const second = await postMessage(app, p.apiKey, raw, "text/plain");
      expect(first.status, first.text).toBe(202);
      expect(second.status, second.text).toBe(202);
      expect(second.body.duplicate).toBe(true);
      expect(second.body.events).toEqual(first.body.events);
      expect(await countRows(app, "messages", p.id)).toBe(1);
      expect(await countRows(app, "events", p.id)).toBe(1);
    });

    test("concurrent uploads of the same bytes create one message and agree on its events", async () => {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      const raw = buildMail();
      const results = await Promise.all([1, 2, 3, 4].map(() => postMessage(app, p.apiKey, raw)));
      for (const r of results) expect(r.status, r.text).toBe(202);
      const ids = new Set(results.map((r) => JSON.stringify(r.body.events)));
      expect(ids.size).toBe(1);
      expect(results.filter((r) => !r.body.duplicate)).toHaveLength(1);
      expect(await countRows(app, "messages", p.id)).toBe(1);
      expect(await countRows(app, "events", p.id)).toBe(1);
      // Losers of the race gave back the bytes they had counted.
      const [q] = await app.ctx.database.rows<any>(
        sql`select p.storage_bytes, m.stored_bytes from projects p join messages m on m.project_id = p.id where p.id = ${p.id}`,
      );
      expect(Number(q.storage_bytes)).toBe(Number(q.stored_bytes));
    });

    test("route changes apply to the very next message although the intake state is cached", async () => {
      const p = await app.newProject();
      const first = await postMessage(app, p.apiKey, buildMail());
      expect(first.status, first.text).toBe(202);
      expect(first.body.events).toEqual([]);
      // Created right after a message was ingested (and the project's routes cached as "none").
      const route = await addRoute(app, p.apiKey, { name: "late" });
      const second = await postMessage(app, p.apiKey, buildMail());
      expect(second.status, second.text).toBe(202);
      expect(second.body.events.map((e: { route_id: string }) => e.route_id)).toEqual([route]);
      // Disabled again: the cached routes (now including it) must not create an event.
      await app.ctx.database.rows(sql`update routes set enabled = false where id = ${route}`);
      const third = await postMessage(app, p.apiKey, buildMail());
      expect(third.status, third.text).toBe(202);
      expect(third.body.events).toEqual([]);
      expect(await countRows(app, "events", p.id)).toBe(1);
      const [q] = await app.ctx.database.rows<{ storage_bytes: string | number; total: string | number }>(
        sql`select p.storage_bytes, (select sum(stored_bytes) from messages where project_id = p.id) as total
            from projects p where p.id = ${p.id}`,
      );
      expect(Number(q?.storage_bytes)).toBe(Number(q?.total));
    });

    test("different bytes with the same Message-ID are a second message", async () => {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      const a = await postMessage(app, p.apiKey, buildMail({ messageId: "<same@x>", text: "one" }));
      const b = await postMessage(app, p.apiKey, buildMail({ messageId: "<same@x>", text: "two" }));
      expect(b.body.duplicate).toBe(false);
      expect(b.body.events[0].id).not.toBe(a.body.events[0].id);
      expect(await countRows(app, "messages", p.id)).toBe(2);
    });

    test("a message without Message-ID gets a synthetic one, and resending it is deduplicated", async () => {
      const p = await app.newProject();
      const raw = buildMail({ messageId: null });
      const first = await postMessage(app, p.apiKey, raw);
      const second = await postMessage(app, p.apiKey, raw);
      expect(first.body.message_id).toMatch(/^<[0-9a-f-]{36}@in\.localhost>$/);
      expect(second.body).toMatchObject({ message_id: first.body.message_id, duplicate: true });
      const [row] = await app.ctx.database.rows<any>(
        sql`select message_id_is_synthetic from messages where project_id = ${p.id}`,
      );
      expect(row.message_id_is_synthetic).toBe(true);
    });

    test.each([
      [
        "disallowed_attachment_type",
        "song.mp3",
        "audio/mpeg",
        "ID3\u0003\u0000\u0000\u0000\u0000\u0000\u0000",
      ],
      ["content_type_mismatch", "photo.png", "image/png", PDF],
    ])(
      "a %s attachment creates discarded events with last_error",
      async (reason, filename, type, content) => {
        const p = await app.newProject();
        await addRoute(app, p.apiKey);
        await addRoute(app, p.apiKey);
        const raw = buildMail({ attachments: [{ filename, contentType: type, content }] });
        const res = await postMessage(app, p.apiKey, raw);
        expect(res.status, res.text).toBe(202);
        expect(res.body.events.map((e: any) => e.status)).toEqual(["discarded", "discarded"]);
        const rows = await app.ctx.database.rows<any>(
          sql`select last_error, next_attempt_at from events where project_id = ${p.id}`,
        );
        for (const row of rows)
          expect(row).toEqual({ last_error: `mime_discard:${reason}`, next_attempt_at: null });
      },
    );

    test("attachments are stored as rows and content-addressed blobs", async () => {
      const p = await app.newProject();
      const raw = buildMail({
        attachments: [
          { filename: "a.pdf", contentType: "application/pdf", content: PDF },
          { filename: "b.txt", contentType: "text/plain", content: "x\r\ny\r\n", encoding: "7bit" },
        ],
      });
      const res = await postMessage(app, p.apiKey, raw);
      expect(res.status, res.text).toBe(202);
      const rows = await app.ctx.database.rows<any>(
        sql`select a.* from attachments a join messages m on m.id = a.message_pk where m.project_id = ${p.id} order by position`,
      );
      expect(rows.map((r) => [r.filename, Number(r.size)])).toEqual([
        ["a.pdf", PDF.length],
        ["b.txt", 6],
      ]);
      const bytes = await new Response(await app.ctx.blobs.read(rows[1].blob_key)).text();
      expect(bytes).toBe("x\r\ny\r\n");
    });

    test("a route whose stored rule no longer compiles is skipped, the message is still accepted", async () => {
      const p = await app.newProject();
      const broken = await addRoute(app, p.apiKey);
      const good = await addRoute(app, p.apiKey);
      await app.ctx.database.rows(
        sql`update routes set rule = '{"bogus_key": 1}'::jsonb where id = ${broken}`,
      );
      const res = await postMessage(app, p.apiKey, buildMail());
      expect(res.status, res.text).toBe(202);
      expect(res.body.events.map((e: any) => e.route_id)).toEqual([good]);
    });

    test("NUL characters in headers and body are stored as U+FFFD (Postgres text cannot hold NUL)", async () => {
      const p = await app.newProject();
      const raw = buildMail({ subject: "bad\u0000subject", text: "body\u0000text" });
      const res = await postMessage(app, p.apiKey, raw);
      expect(res.status, res.text).toBe(202);
      const [row] = await app.ctx.database.rows<any>(
        sql`select parsed from messages where project_id = ${p.id}`,
      );
      expect(row.parsed.subject).toBe("bad\ufffdsubject");
      expect(row.parsed.text).toContain("body\ufffdtext");
    });

    test("rejects other media types with 415 and missing keys with 401", async () => {
      const p = await app.newProject();
      const json = await postMessage(app, p.apiKey, buildMail(), "application/json");
      expect(json.status, json.text).toBe(415);
      expect(json.body.error.code).toBe("request.unsupported_media_type");
      const anon = await app.request("POST", "/v1/messages", {
        rawBody: buildMail() as Uint8Array<ArrayBuffer>,
      });
      expect(anon.status).toBe(401);
    });

    test("an empty body is 422 ingest.unparseable", async () => {
      const p = await app.newProject();
      const res = await postMessage(app, p.apiKey, new Uint8Array(0));
      expect(res.status, res.text).toBe(422);
      expect(res.body.error.code).toBe("ingest.unparseable");
    });

    test("a body over 50 MiB is 413 and leaves nothing stored, also when streamed without a length", async () => {
      const p = await app.newProject();
      const before = blobFiles(app).length;
      const declared = await app.request("POST", "/v1/messages", {
        apiKey: p.apiKey,
        rawBody: new Blob([new Uint8Array(50 * 1024 * 1024 + 1)]),
        headers: { "content-type": "message/rfc822" },
      });
      expect(declared.status, declared.text).toBe(413);
      expect(declared.body.error.code).toBe("ingest.too_large");
      const chunk = new Uint8Array(1024 * 1024).fill(0x61);
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent++ > 51) c.close();
          else c.enqueue(chunk);
        },
      });
      const streamed = await app.request("POST", "/v1/messages", {
        apiKey: p.apiKey,
        rawBody: stream,
        headers: { "content-type": "message/rfc822" },
      });
      expect(streamed.status, streamed.text).toBe(413);
      expect(await countRows(app, "messages", p.id)).toBe(0);
      expect(blobFiles(app).length).toBe(before);
      expect(spoolFiles(app)).toEqual([]);
    });
  });

  describe(`storage quota (${kind})`, () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await createTestApp(kind, { env: { PROJECT_QUOTA_BYTES: "3000" } });
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    test("a message over the project's quota is 507 and stores no message or event", async () => {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      const ok = await postMessage(app, p.apiKey, buildMail());
      expect(ok.status, ok.text).toBe(202);
      const big = buildMail({
        attachments: [{ filename: "a.txt", contentType: "text/plain", content: "x".repeat(3000) }],
      });
      const res = await postMessage(app, p.apiKey, big);
      expect(res.status, res.text).toBe(507);
      expect(res.body.error.code).toBe("ingest.quota_exceeded");
      expect(await countRows(app, "messages", p.id)).toBe(1);
      expect(await countRows(app, "events", p.id)).toBe(1);
    });

    test("concurrent messages never push storage_bytes over the quota", async () => {
      const p = await app.newProject();
      const mails = Array.from({ length: 8 }, (_, i) =>
        buildMail({ messageId: `<quota-${i}.${p.id}@test.example>`, text: "y".repeat(500) }),
      );
      const results = await Promise.all(mails.map((m) => postMessage(app, p.apiKey, m)));
      const accepted = results.filter((r) => r.status === 202).length;
      expect(results.every((r) => r.status === 202 || r.status === 507)).toBe(true);
      const [row] = await app.ctx.database.rows<any>(
        sql`select storage_bytes from projects where id = ${p.id}`,
      );
      expect(Number(row.storage_bytes)).toBeLessThanOrEqual(3000);
      // Each message counts its raw bytes and its parsed form; the mails are all the same size.
      const [one] = await app.ctx.database.rows<any>(
        sql`select max(stored_bytes)::float8 as n, min(stored_bytes)::float8 as m from messages where project_id = ${p.id}`,
      );
      expect(Number(one.m)).toBe(Number(one.n));
      expect(accepted).toBe(Math.floor(3000 / Number(one.n)));
      expect(await countRows(app, "messages", p.id)).toBe(accepted);
    });
  });
}
