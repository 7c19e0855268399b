// Erasing a message (DELETE /v1/messages/{message_id}): mail ingested over SMTP and HTTP, delivered to a
// real receiver, then erased; direct SQL and the blob files show nothing of it remains, a blob shared
// with another message survives, the storage usage drops, events stay with message null and cannot be
// replayed, download URLs die; a worker meeting an event of an erased message ends it dead.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { sql } from "drizzle-orm";
import nodemailer from "nodemailer";
import { sweepRetention } from "../../services/attachments/retention.ts";
import { claimDueEvents } from "../../services/delivery/claim.ts";
import { createAttemptRecorder } from "../../services/delivery/record.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { drainSearchQueue } from "../../services/resources/message-search-index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { blobFiles, postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedRoute, waitForEvent } from "../support/seed-events.ts";

const SHARED = `shared-attachment-${"S".repeat(2000)}-end`;
const TABLES = [
  "messages",
  "message_search",
  "message_search_queue",
  "events",
  "attempts",
  "attachments",
  "download_tokens",
  "jobs",
] as const;

for (const kind of testDbKinds()) {
  describe(`message erasure (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let smtp: RunningSmtp;
    let worker: RunningWorker;
    let route: SeededRoute;
    let project: { id: string; apiKey: string; inbound: string };

    const get = (path: string) => app.request("GET", path, { apiKey: route.apiKey });
    const del = (path: string) => app.request("DELETE", path, { apiKey: route.apiKey });
    const usage = async (projectId = route.projectId) =>
      Number(
        (
          await app.ctx.database.rows<{ n: number }>(
            sql`select storage_bytes::float8 as n from projects where id = ${projectId}`,
          )
        )[0]?.n,
      );
    /** Rows of every table whose text form mentions `needle` (case-insensitively). */
    const mentions = async (needle: string) => {
      const found: string[] = [];
      for (const t of TABLES) {
        const [row] = await app.ctx.database.rows<{ n: number }>(
          sql`select count(*)::int as n from ${sql.identifier(t)} x where x::text ilike ${`%${needle}%`}`,
        );
        if (Number(row?.n) > 0) found.push(`${t}: ${row?.n}`);
      }
      return found;
    };
    const blobsMentioning = (needle: string) =>
      blobFiles(app).filter((f) => readFileSync(f).toString("latin1").includes(needle));

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      project = await app.newProject();
      route = await seedRoute(app, { url: rx.url, project });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 100 });
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await smtp?.close();
      await rx?.close();
      await app?.close();
    });

    test("erases everything of the message, keeps its events, spares a shared blob", async () => {
      const id1 = `<erase-smtp-${Date.now()}@secret.example>`;
      const big = `unique-big-${"B".repeat(300 * 1024)}`; // raw over the inline limit: a raw blob
      const raw1 = buildMail({
        messageId: id1,
        subject: "Zebracorn erasure subject",
        text: "Quokkafeather body text to forget",
        attachments: [
          { filename: "shared.txt", contentType: "text/plain", content: SHARED },
          { filename: "bigsecret.bin", contentType: "application/octet-stream", content: big },
        ],
      });
      const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtp.port, secure: false });
      await transport.sendMail({
        envelope: { from: "alice@example.com", to: [project.inbound] },
        raw: Buffer.from(raw1),
      });
      transport.close();
      // over HTTP: one message sharing the attachment (kept), one small one (erased: raw in its row)
      const keep = await postMessage(
        app,
        route.apiKey,
        buildMail({
          subject: "Keeper message",
          attachments: [{ filename: "shared-too.txt", contentType: "text/plain", content: SHARED }],
        }),
      );
      expect(keep.status).toBe(202);
      const small = await postMessage(
        app,
        route.apiKey,
        buildMail({ subject: "Platypusine small subject", text: "Wombatish inline body" }),
      );
      expect(small.status).toBe(202);

      const listed = await eventually("three stored messages", () => get("/v1/messages"), 10_000, {
        until: (r) => r.body.items.length === 3,
      });
      const byId = (subject: string) =>
        listed.body.items.find((m: { subject: string }) => m.subject === subject);
      const m1 = byId("Zebracorn erasure subject");
      const m2 = byId("Keeper message");
      const m3 = byId("Platypusine small subject");
      expect(m1.source_type).toBe("smtp");
      expect(m3.source_type).toBe("api");
      const events = [...m1.events, ...m3.events].map((e: { id: string }) => e.id);
      for (const e of [...events, m2.events[0].id]) await waitForEvent(app.ctx, e, isSettled);
      await rx.waitForRequests(3);
      expect(await mentions("Quokkafeather")).not.toEqual([]); // the search below can find things
      // the full-text documents exist (the search indexer ran), so their erasure is checked too
      await drainSearchQueue(app.ctx.database);
      expect(await mentions("Wombatish")).toContain("message_search: 1");

      // download URLs issued before the erasure
      const detail1 = (await get(`/v1/messages/${m1.id}`)).body;
      const sharedAtt = detail1.attachments.find((a: { filename: string }) => a.filename === "shared.txt");
      const url1 = await get(`/v1/messages/${m1.id}/attachments/${sharedAtt.id}/url?multi_use=true`);
      expect(url1.status).toBe(200);
      const keepAtt = (await get(`/v1/messages/${m2.id}`)).body.attachments[0];
      const [rawRow] = await app.ctx.database.rows<{ raw_key: string }>(
        sql`select raw_blob_key as raw_key from messages where id = ${m1.id}`,
      );
      const rawKey1 = rawRow?.raw_key ?? "";
      expect(rawKey1).toBeString();
      expect(await app.ctx.blobs.stat(rawKey1)).not.toBeNull();
      expect(blobsMentioning("unique-big-BBBB")).not.toEqual([]);

      const stored = await app.ctx.database.rows<{ id: string; n: number }>(
        sql`select id, stored_bytes::float8 as n from messages where id in (${m1.id}, ${m3.id})`,
      );
      const erasedBytes = stored.reduce((n, r) => n + Number(r.n), 0);
      const before = await usage();

      // by URL-encoded Message-ID, and by msg_ id
      const d1 = await del(`/v1/messages/${encodeURIComponent(id1)}`);
      expect(d1.status).toBe(204);
      expect(d1.text).toBe("");
      expect((await del(`/v1/messages/${m3.id}`)).status).toBe(204);

      expect(await usage()).toBe(before - erasedBytes);
      for (const needle of [
        id1.slice(1, -1),
        "Zebracorn",
        "Quokkafeather",
        "bigsecret.bin",
        "Platypusine",
        "Wombatish",
      ])
        expect({ needle, rows: await mentions(needle) }).toEqual({ needle, rows: [] });
      expect(await app.ctx.blobs.stat(rawKey1)).toBeNull();
      for (const needle of ["Zebracorn", "Quokkafeather", "unique-big-BBBB", "Platypusine", "Wombatish"])
        expect({ needle, files: blobsMentioning(needle) }).toEqual({ needle, files: [] });
      // the shared attachment blob is still there and still served for the other message
      expect(blobsMentioning("shared-attachment-SSSS")).toHaveLength(1);
      const url2 = await get(`/v1/messages/${m2.id}/attachments/${keepAtt.id}/url`);
      const served = await app.request("GET", new URL(url2.body.url).pathname);
      expect(served.status).toBe(200);
      expect(served.text).toBe(SHARED);

      // the message is gone from every read path; the old download URL is dead
      expect((await get(`/v1/messages/${m1.id}`)).status).toBe(404);
      expect((await get(`/v1/messages/${encodeURIComponent(id1)}/raw`)).status).toBe(404);
      expect((await del(`/v1/messages/${m1.id}`)).body.error.code).toBe("messages.not_found");
      const dead = await app.request("GET", new URL(url1.body.url).pathname);
      expect([404, 410]).toContain(dead.status);
      const after = (await get("/v1/messages")).body.items.map((m: { id: string }) => m.id);
      expect(after).toEqual([m2.id]);

      // events stay, status unchanged, message null; attempts keep only method/url/status
      const list = (await get("/v1/events")).body.items.map((e: { id: string }) => e.id);
      for (const e of events) {
        expect(list).toContain(e);
        const ev = await get(`/v1/events/${e}`);
        expect(ev.status).toBe(200);
        expect(ev.body.status).toBe("delivered");
        expect(ev.body.message).toBeNull();
        const attempts = (await get(`/v1/events/${e}/attempts`)).body.items;
        expect(attempts).toHaveLength(1);
        expect(attempts[0].request_capture).toMatchObject({ method: "POST", headers: {}, body_preview: "" });
        expect(attempts[0].response_capture).toMatchObject({ status: 200, headers: {}, body_preview: "" });
        const replay = await app.request("POST", `/v1/events/${e}/replay`, { apiKey: route.apiKey });
        expect(replay.status).toBe(409);
        expect(replay.body.error.code).toBe("events.message_erased");
      }
    }, 60_000);

    test("a Message-ID shared by two stored messages is ambiguous; another project's message is not found", async () => {
      const id = `<twice-${Date.now()}@example.com>`;
      for (const text of ["one", "two"])
        expect((await postMessage(app, route.apiKey, buildMail({ messageId: id, text }))).status).toBe(202);
      const r = await del(`/v1/messages/${encodeURIComponent(id)}`);
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe("messages.ambiguous");
      const other = await app.newProject("other");
      const mine = (await get(`/v1/messages?q=two`)).body.items[0];
      const foreign = await app.request("DELETE", `/v1/messages/${mine.id}`, { apiKey: other.apiKey });
      expect(foreign.status).toBe(404);
      expect((await get(`/v1/messages/${mine.id}`)).status).toBe(200);
    }, 30_000);

    test("retention removes the kept events of an erased message once they are older than RETENTION_DAYS", async () => {
      const r = await postMessage(app, route.apiKey, buildMail({ subject: "Old one" }));
      const eventId = r.body.events[0].id;
      await waitForEvent(app.ctx, eventId, isSettled);
      expect((await del(`/v1/messages/${encodeURIComponent(r.body.message_id)}`)).status).toBe(204);
      const count = async () =>
        Number(
          (
            await app.ctx.database.rows<{ n: number }>(
              sql`select count(*)::int as n from events where id = ${eventId}::uuid`,
            )
          )[0]?.n,
        );
      await sweepRetention(app.ctx); // now: the event is young and stays
      expect(await count()).toBe(1);
      await sweepRetention(app.ctx, { now: new Date(Date.now() + 31 * 86_400_000) });
      expect(await count()).toBe(0);
      const [left] = await app.ctx.database.rows<{ n: number }>(
        sql`select count(*)::int as n from attempts where event_id = ${eventId}::uuid`,
      );
      expect(Number(left?.n)).toBe(0);
    }, 30_000);

    test("a worker meeting an event of an erased message ends it dead without an attempt", async () => {
      const failing = await startReceiver({ behaviour: { status: 503, headers: { "retry-after": "3600" } } });
      try {
        const p2 = await seedRoute(app, { url: failing.url });
        const r = await postMessage(app, p2.apiKey, buildMail({ subject: "Retrying one" }));
        const eventId = r.body.events[0].id;
        const retrying = await waitForEvent(app.ctx, eventId, (e) => e.status === "retry" && e.body !== null);
        expect(retrying.attempts).toBe(1);
        const erase = await app.request("DELETE", `/v1/messages/${encodeURIComponent(r.body.message_id)}`, {
          apiKey: p2.apiKey,
        });
        expect(erase.status).toBe(204);
        expect(await usage(p2.projectId)).toBe(0);
        const kept = await waitForEvent(app.ctx, eventId, () => true);
        expect(kept.status).toBe("retry"); // unchanged by the erasure itself
        expect(kept.body).toBeNull();
        await app.ctx.database.rows(
          sql`update events set next_attempt_at = now() where id = ${eventId}::uuid`,
        );
        const dead = await waitForEvent(app.ctx, eventId, (e) => e.status === "dead");
        expect(dead.lastError).toBe("message_erased: the message was erased; there is nothing to deliver");
        expect(dead.attempts).toBe(1);
        expect(failing.requests).toHaveLength(1);
      } finally {
        await failing.close();
      }
    }, 30_000);

    test("an attempt in flight while its message is erased is recorded without body or captures", async () => {
      await worker.stop();
      try {
        const r = await postMessage(app, route.apiKey, buildMail({ subject: "Inflight Narwhalish" }));
        const eventId = r.body.events[0].id;
        const [claimed] = await claimDueEvents(app.ctx.database, {
          owner: "test-owner",
          limit: 10,
          leaseMs: 60_000,
          now: new Date(Date.now() + 1000),
        });
        expect(claimed?.id).toBe(eventId);
        expect((await del(`/v1/messages/${claimed?.messagePk}`)).status).toBe(204);
        const body = JSON.stringify({ subject: "Inflight Narwhalish" });
        const ok = await createAttemptRecorder(app.ctx.database, "test-owner").record({
          event_id: eventId,
          attempt_id: `att_${Date.now()}`,
          event_status: "delivered",
          last_error: null,
          next_attempt_at: null,
          body,
          body_content_type: "application/json",
          body_encoding: "utf8",
          trigger: "auto",
          attempt_status: "success",
          http_status: 200,
          latency_ms: 5,
          request_capture: { method: "POST", url: rx.url, headers: { "x-a": "1" }, body_preview: body },
          response_capture: { status: 200, headers: { "x-b": "2" }, body_preview: body, network_error: null },
          at: new Date().toISOString(),
        });
        expect(ok).toBe(true);
        const ev = await waitForEvent(app.ctx, eventId, () => true);
        expect(ev.status).toBe("delivered");
        expect(ev.body).toBeNull();
        expect(await mentions("Narwhalish")).toEqual([]);
      } finally {
        worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 100 });
      }
    }, 30_000);
  });
}
