// What the service understands about a message is computed once at intake and stored in its parsed
// message: a reply and a bounce sent over real SMTP to a running listener, read back from the database.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import nodemailer from "nodemailer";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { addRoute } from "../support/ingest.ts";
import { eml } from "../support/raw-mail.ts";

for (const kind of testDbKinds()) {
  describe(`message understanding at intake (${kind})`, () => {
    let app: TestApp;
    let smtp: RunningSmtp;
    let p: { id: string; apiKey: string; inbound: string };
    beforeAll(async () => {
      app = await createTestApp(kind);
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      p = await app.newProject();
      await addRoute(app, p.apiKey);
    }, 60_000);
    afterAll(async () => {
      await smtp?.close();
      await app?.close();
    });

    async function send(raw: Uint8Array): Promise<Record<string, unknown>> {
      const transport = nodemailer.createTransport({ host: "127.0.0.1", port: smtp.port, secure: false });
      const info = await transport.sendMail({
        envelope: { from: "sender@example.com", to: [p.inbound] },
        raw: Buffer.from(raw),
      });
      transport.close();
      expect(info.response).toMatch(/^250 /);
      const id = /accepted as (msg_\S+)/.exec(info.response)?.[1];
      const [row] = await app.ctx.database.rows<{ parsed: Record<string, unknown> | string }>(
        sql`select parsed from messages where id = ${id}`,
      );
      const parsed = row?.parsed;
      return typeof parsed === "string" ? JSON.parse(parsed) : (parsed ?? {});
    }

    test("a reply: thread, reply text without quote and signature, forwarded null, auto none", async () => {
      const stored = await send(
        eml(
          "From: Alice <alice@example.com>",
          `To: ${p.inbound}`,
          "Subject: Re: Meeting",
          `Message-ID: <reply.${kind}.${Date.now()}@example.com>`,
          "References: <root@example.com> <m2@example.com>",
          "In-Reply-To: <m2@example.com>",
          "",
          "Tuesday works.",
          "",
          "Mit freundlichen Grüßen",
          "Alice",
          "",
          "Am 08.01.2024 um 10:15 schrieb Bob <bob@example.org>:",
          "> Dienstag?",
        ),
      );
      expect(stored).toMatchObject({
        thread_id: "<root@example.com>",
        reply_text: "Tuesday works.",
        text_source: "text",
        forwarded: null,
        auto: { kind: "none", auto_submitted: null, list_id: null, dsn: null },
      });
    });

    test("a bounce: auto kind and DSN facts", async () => {
      const stored = await send(
        eml(
          "From: MAILER-DAEMON@mx.example.net",
          `To: ${p.inbound}`,
          "Subject: Undelivered Mail Returned to Sender",
          `Message-ID: <bounce.${kind}.${Date.now()}@mx.example.net>`,
          "Auto-Submitted: auto-replied",
          'Content-Type: multipart/report; report-type=delivery-status; boundary="r"',
          "",
          "--r",
          "Content-Type: text/plain",
          "",
          "Your message could not be delivered.",
          "--r",
          "Content-Type: message/delivery-status",
          "",
          "Reporting-MTA: dns; mx.example.net",
          "",
          "Final-Recipient: rfc822; nobody@example.org",
          "Action: failed",
          "Status: 5.1.1",
          "Diagnostic-Code: smtp; 550 5.1.1 User unknown",
          "",
          "--r",
          "Content-Type: text/rfc822-headers",
          "",
          "Message-ID: <sent@example.com>",
          "",
          "--r--",
        ),
      );
      expect(stored.auto).toEqual({
        kind: "bounce",
        auto_submitted: "auto-replied",
        list_id: null,
        dsn: {
          action: "failed",
          status: "5.1.1",
          final_recipient: "nobody@example.org",
          diagnostic_code: "550 5.1.1 User unknown",
          original_message_id: "<sent@example.com>",
        },
      });
    });
  });
}
