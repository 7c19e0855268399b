/**
 * The compatibility outputs end to end (docs/receivers.md): a message posted to `POST /v1/messages` is
 * delivered by a real worker to a loopback receiver as
 * - `map.raw_mime`: the stored raw bytes exactly (8-bit bytes that are not UTF-8 included), as
 *   `message/rfc822`, signed over those bytes; the stored body counts against storage, a retry resends
 *   the same bytes, a replay rebuilds them;
 * - `map.postmark_json`: Postmark's inbound body, read back the way Rails Action Mailbox's Postmark
 *   ingress (RawEmail, OriginalRecipient) and django-anymail's Postmark inbound view (FromFull, ToFull,
 *   CcFull, Headers, base64 Attachments) read it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import nodemailer from "nodemailer";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { verifyServiceSignature } from "../../services/lib/signing.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail, TINY_PNG } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`compatibility outputs (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let smtp: RunningSmtp;

    beforeAll(async () => {
      app = await createTestApp(kind, { env: { RETRY_SCHEDULE: "0,10ms,10ms,10ms,10ms" } });
      rx = await startReceiver();
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 50 });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
    }, 60_000);
    afterAll(async () => {
      await smtp.close();
      await worker.stop();
      await rx.close();
      await app.close();
    });

    /** Posts `raw` to the route's project; returns the one event id it created. */
    async function post(route: SeededRoute, raw: Uint8Array): Promise<string> {
      const r = await postMessage(app, route.apiKey, raw);
      expect(r.status, r.text).toBe(202);
      return r.body.events[0].id;
    }

    const attempts = async (route: SeededRoute, id: string) =>
      (await app.request("GET", `/v1/events/${id}/attempts`, { apiKey: route.apiKey })).body.items;

    test("map.raw_mime sends the stored bytes exactly, signed over them, counted, resent on retry and rebuilt on replay", async () => {
      const route = await seedRoute(app, {
        url: `${rx.url}/raw`,
        pipeline: {
          steps: [
            { name: "strip_attachments_if", args: { mime_in: ["image/*"] } },
            { name: "map.raw_mime", args: {} },
          ],
        },
      });
      const raw = buildMail({
        subject: "Caf\u00e9",
        text: "8-bit latin-1: caf\u00e9 \u00ff",
        extraHeaders: ["X-Trace: one"],
        attachments: [{ filename: "dot.png", contentType: "image/png", content: TINY_PNG }],
      });
      // not UTF-8: a text body would not survive
      expect(new TextDecoder("utf-8", { fatal: false }).decode(raw)).toContain("\ufffd");
      rx.clear();
      rx.enqueue({ status: 503 });
      const id = await post(route, raw);
      const event = await waitForEvent(app.ctx, id, (e) => isSettled(e) && e.attempts === 2, 10_000);
      expect(event.status).toBe("delivered");
      const requests = await rx.waitForRequests(2);
      for (const req of requests) {
        expect(req.path).toBe("/raw");
        expect(req.headers["content-type"]).toBe("message/rfc822");
        // the attachment is still there: transforms do not change the raw message
        expect(Buffer.from(req.body).equals(Buffer.from(raw))).toBe(true);
        const verdict = verifyServiceSignature({
          header: req.headers["x-service-signature"]!,
          secrets: { [route.kid]: route.secret },
          body: req.body,
          nowSec: Math.floor(Date.now() / 1000),
        });
        expect(verdict.ok).toBe(true);
      }

      // stored once as base64 and counted like any body
      const [row] = await app.ctx.database.rows<{
        body: string;
        ct: string;
        enc: string;
        stored: string;
        used: string;
        sum: string;
      }>(sql`
        select e.body, e.body_content_type as ct, e.body_encoding as enc, m.stored_bytes::text as stored,
          p.storage_bytes::text as used,
          (select sum(stored_bytes) from messages where project_id = p.id)::text as sum
        from events e join messages m on m.id = e.message_pk join projects p on p.id = e.project_id
        where e.id = ${id}::uuid`);
      expect(row!.ct).toBe("message/rfc822");
      expect(row!.enc).toBe("base64");
      expect(Buffer.from(row!.body, "base64").equals(Buffer.from(raw))).toBe(true);
      expect(Number(row!.used)).toBe(Number(row!.sum));
      expect(Number(row!.stored)).toBeGreaterThan(raw.byteLength + row!.body.length);

      // the attempt capture previews the bytes as text
      const listed = await attempts(route, id);
      expect(listed.map((a: any) => [a.number, a.status])).toEqual([
        [1, "failed"],
        [2, "success"],
      ]);
      expect(listed[1].request_capture.headers["Content-Type"]).toBe("message/rfc822");
      expect(listed[1].request_capture.body_preview.startsWith("From: Alice <alice@example.com>")).toBe(true);

      // replay: the body is rebuilt (and re-counted) and sent again, byte for byte
      rx.clear();
      const r = await app.request("POST", `/v1/events/${id}/replay`, { apiKey: route.apiKey });
      expect(r.status, r.text).toBe(202);
      expect((await waitForEvent(app.ctx, id, (e) => isSettled(e) && e.attempts === 3, 10_000)).status).toBe(
        "delivered",
      );
      const [again] = await rx.waitForRequests(1);
      expect(Buffer.from(again!.body).equals(Buffer.from(raw))).toBe(true);
      expect((await attempts(route, id)).at(-1).trigger).toBe("replay");
      const [usage] = await app.ctx.database.rows<{ used: string; sum: string }>(sql`
        select p.storage_bytes::text as used,
          (select sum(stored_bytes) from messages where project_id = p.id)::text as sum
        from projects p where p.id = ${route.projectId}`);
      expect(Number(usage!.used)).toBe(Number(usage!.sum));
    });

    test("transforms then a chat step: html_to_text, replace_values and max_size_kb shape what is sent", async () => {
      const telegramRoute = await seedRoute(app, {
        url: `${rx.url}/bot123:ABC/sendMessage`,
        pipeline: {
          steps: [
            { name: "html_to_text", args: { width: 0, keep_tables: true } },
            { name: "replace_values", args: { set: { subject: "[{{ ctx.source_type }}] {{ subject }}" } } },
            {
              name: "map.telegram_simple",
              args: {
                chat_id: "-1001234567890",
                prefix: "<b>Alert</b>",
                parse_mode: "HTML",
                include_from: false,
              },
            },
          ],
        },
      });
      const html =
        '<p>Disk <b>full</b> on db-03 &amp; "db-04"</p><table><tr><td>used</td><td>99%</td></tr></table>';
      const raw = new TextEncoder().encode(
        [
          "From: Monitor <monitor@example.com>",
          "To: alerts@in.localhost",
          "Subject: Disk <critical>",
          "Message-ID: <chat-1@example.com>",
          "MIME-Version: 1.0",
          "Content-Type: text/html; charset=utf-8",
          "",
          html,
          "",
        ].join("\r\n"),
      );
      rx.clear();
      const id = await post(telegramRoute, raw);
      expect((await waitForEvent(app.ctx, id, isSettled, 10_000)).status).toBe("delivered");
      const [req] = await rx.waitForRequests(1);
      expect(req!.path).toBe("/bot123:ABC/sendMessage");
      expect(req!.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(req!.text)).toEqual({
        chat_id: "-1001234567890",
        parse_mode: "HTML",
        text: '<b>Alert</b> Subject: [api] Disk &lt;critical&gt;\nDisk full on db-03 &amp; "db-04"\n\nused\t99%',
      });

      const postmarkRoute = await seedRoute(app, {
        url: `${rx.url}/postmark`,
        pipeline: {
          steps: [
            { name: "strip_attachments_if", args: { max_size_kb: 1 } },
            { name: "map.postmark_json", args: {} },
          ],
        },
      });
      const big = new Uint8Array(2048).fill(0x41);
      rx.clear();
      const id2 = await post(
        postmarkRoute,
        buildMail({
          attachments: [
            { filename: "big.txt", contentType: "text/plain", content: big },
            { filename: "dot.png", contentType: "image/png", content: TINY_PNG },
          ],
        }),
      );
      expect((await waitForEvent(app.ctx, id2, isSettled, 10_000)).status).toBe("delivered");
      const [pmReq] = await rx.waitForRequests(1);
      // only the attachment larger than 1 KiB is stripped
      expect(JSON.parse(pmReq!.text).Attachments.map((a: { Name: string }) => a.Name)).toEqual(["dot.png"]);
    });

    test("map.postmark_json is read by Postmark consumers unchanged", async () => {
      const route = await seedRoute(app, {
        url: `${rx.url}/postmark`,
        pipeline: { steps: [{ name: "map.postmark_json", args: { include_raw_email: true } }] },
      });
      const raw = buildMail({
        from: '"Doe, Jane" <jane@example.com>',
        to: "Support <support+ticket-42@in.localhost>, ops@example.org",
        subject: "Printer on fire",
        text: "It is on fire.\r\n\r\nOn Mon, Bob wrote:\r\n> old",
        extraHeaders: ["Cc: Bob <bob@example.net>", "Reply-To: jane.reply@example.com", "X-Spam-Status: No"],
        attachments: [
          { filename: "dot.png", contentType: "image/png", content: TINY_PNG, contentId: "dot@x" },
        ],
      });
      rx.clear();
      const id = await post(route, raw);
      expect((await waitForEvent(app.ctx, id, isSettled, 10_000)).status).toBe("delivered");
      const [req] = await rx.waitForRequests(1);
      expect(req!.headers["content-type"]).toBe("application/json");
      const pm = JSON.parse(req!.text);

      expect(pm).toMatchObject({
        From: "jane@example.com",
        FromName: "Doe, Jane",
        FromFull: { Email: "jane@example.com", Name: "Doe, Jane", MailboxHash: "" },
        To: '"Support" <support+ticket-42@in.localhost>, ops@example.org',
        ToFull: [
          { Email: "support+ticket-42@in.localhost", Name: "Support", MailboxHash: "ticket-42" },
          { Email: "ops@example.org", Name: "", MailboxHash: "" },
        ],
        Cc: '"Bob" <bob@example.net>',
        CcFull: [{ Email: "bob@example.net", Name: "Bob", MailboxHash: "" }],
        ReplyTo: "jane.reply@example.com",
        Subject: "Printer on fire",
        MessageID: id,
        Date: "Mon, 06 May 2024 07:08:09 +0000",
        OriginalRecipient: "support+ticket-42@in.localhost",
        MailboxHash: "ticket-42",
        Tag: "",
        HtmlBody: "",
      });
      expect(pm.TextBody).toContain("It is on fire.");
      expect(typeof pm.StrippedTextReply).toBe("string");
      expect(pm.StrippedTextReply).toContain("It is on fire.");

      // django-anymail: headers as (Name, Value) pairs; the fields it builds itself are not repeated
      const names = pm.Headers.map((h: { Name: string }) => h.Name);
      expect(names).toContain("Message-ID");
      expect(names).toContain("X-Spam-Status");
      expect(names).toContain("MIME-Version");
      for (const own of ["From", "To", "Cc", "Subject", "Date", "Reply-To", "Content-Type"])
        expect(names).not.toContain(own);
      expect(pm.Headers.find((h: any) => h.Name === "X-Spam-Status").Value).toBe("No");
      // ... and attachments from base64 Content with Name, ContentType and ContentID
      expect(pm.Attachments).toHaveLength(1);
      const [att] = pm.Attachments;
      expect(att).toMatchObject({
        Name: "dot.png",
        ContentType: "image/png",
        ContentLength: TINY_PNG.byteLength,
        ContentID: "dot@x",
      });
      expect(Buffer.from(att.Content, "base64").equals(TINY_PNG)).toBe(true);

      // Rails Action Mailbox: params.require("RawEmail"), prefixed with X-Original-To from OriginalRecipient
      const railsMail = `X-Original-To: ${pm.OriginalRecipient}\n${pm.RawEmail}`;
      expect(railsMail.startsWith('X-Original-To: support+ticket-42@in.localhost\nFrom: "Doe, Jane"')).toBe(
        true,
      );
      expect(Buffer.from(pm.RawEmail, "latin1").equals(Buffer.from(raw))).toBe(true);
    });

    test("over SMTP: Postmark's OriginalRecipient is the envelope recipient, and raw MIME is the DATA as sent", async () => {
      const project = await app.newProject();
      const own = { id: project.id, apiKey: project.apiKey };
      const pm = await seedRoute(app, {
        url: `${rx.url}/smtp-postmark`,
        project: own,
        pipeline: { steps: [{ name: "map.postmark_json", args: {} }] },
      });
      await seedRoute(app, {
        url: `${rx.url}/smtp-raw`,
        project: own,
        pipeline: { steps: [{ name: "map.raw_mime", args: {} }] },
      });
      // the project's address is only in the envelope, as for a Bcc or a forward
      const raw = buildMail({ to: "someone@example.org", subject: "Bcc'd" });
      rx.clear();
      const transport = nodemailer.createTransport({
        host: "127.0.0.1",
        port: smtp.port,
        secure: false,
        ignoreTLS: true,
      });
      await transport.sendMail({
        envelope: { from: "alice@example.com", to: [project.inbound] },
        raw: Buffer.from(raw),
      });
      transport.close();
      const requests = await rx.waitForRequests(2, 10_000);
      const byPath = Object.fromEntries(requests.map((r) => [r.path, r]));
      const body = JSON.parse(byPath["/smtp-postmark"]!.text);
      expect(body.OriginalRecipient).toBe(project.inbound);
      expect(body.To).toBe("someone@example.org");
      expect(body.Subject).toBe("Bcc'd");
      expect(byPath["/smtp-raw"]!.headers["content-type"]).toBe("message/rfc822");
      expect(Buffer.from(byPath["/smtp-raw"]!.body).equals(Buffer.from(raw))).toBe(true);
      expect(pm.projectId).toBe(project.id);
    });
  });
}
