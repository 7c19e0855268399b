/**
 * Attachment swap by Message-ID (docs/attachments.md, "Messages that share a Message-ID"): anyone can
 * send mail reusing a known Message-ID with their own file in the same MIME position. The genuine
 * event's attachment id must keep naming the genuine file, the other message's ids must name its own,
 * and a Message-ID that names several stored messages must never be resolved by guessing. Through
 * the real intake (HTTP and SMTP), delivery and API, on both database kinds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { attachmentIdSuffix } from "../../services/mail/extract.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedRoute, waitForEvent } from "../support/seed-events.ts";
import { seedMessage } from "../support/seed-messages.ts";
import { RawSmtp } from "../support/smtp.ts";

const MESSAGE_ID = "<invoice-2026-117@billing.example>";
const GENUINE = "%PDF-1.4 genuine invoice: pay 100 EUR to DE00 1111\n%%EOF\n";
const FORGED = "%PDF-1.4 forged invoice: pay 9999 EUR to XX99 6666\n%%EOF\n";

/** A message with MESSAGE_ID whose second MIME part (`att_2`) is `pdf`. */
const invoiceMail = (pdf: string, from = "Billing <billing@billing.example>") =>
  buildMail({
    messageId: MESSAGE_ID,
    from,
    subject: "Invoice 117",
    attachments: [{ filename: "invoice.pdf", contentType: "application/pdf", content: pdf }],
  });

for (const kind of testDbKinds()) {
  describe(`attachments of messages that share a Message-ID (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let smtp: RunningSmtp;
    let route: SeededRoute;
    let inbound: string;
    const genuineRaw = invoiceMail(GENUINE);

    /** The URL endpoint for (`messageId`, `att`). */
    const urlFor = (att: string, messageId = MESSAGE_ID) =>
      app.request("GET", `/v1/messages/${encodeURIComponent(messageId)}/attachments/${att}/url`, {
        apiKey: route.apiKey,
      });
    /** What a backend gets for (`messageId`, `att`): a URL from the endpoint, then the file through it. */
    const download = async (att: string, messageId = MESSAGE_ID) => {
      const r = await urlFor(att, messageId);
      expect(r.status, r.text).toBe(200);
      const res = await app.api.handle(new Request(`http://localhost${new URL(r.body.url).pathname}`));
      expect(res.status).toBe(200);
      return new TextDecoder().decode(await res.arrayBuffer());
    };
    /** The delivered generic@1 body of `eventId`. */
    const deliveredBody = async (eventId: string) => {
      const event = await waitForEvent(app.ctx, eventId, isSettled);
      expect(event.status).toBe("delivered");
      const req = (await rx.waitForRequests(1)).find((r) => JSON.parse(r.text).event.id === eventId);
      if (!req) throw new Error(`no delivery of ${eventId}`);
      return JSON.parse(req.text);
    };
    /** The project's stored messages with MESSAGE_ID: pk, raw hash, model ids and attachment row ids. */
    const stored = async () => {
      const rows = await app.ctx.database.rows<{
        id: string;
        raw_sha256: string;
        parsed_ids: string[];
        row_ids: string[];
      }>(sql`
        select m.id, m.raw_sha256,
          (select coalesce(jsonb_agg(a->>'id'), '[]'::jsonb) from jsonb_array_elements(m.parsed->'attachments') a) as parsed_ids,
          (select coalesce(jsonb_agg(x.attachment_id order by x.position), '[]'::jsonb) from attachments x
            where x.message_pk = m.id) as row_ids
        from messages m where m.project_id = ${route.projectId} and m.message_id = ${MESSAGE_ID}
        order by m.received_at, m.id`);
      return rows.map((r) => ({
        ...r,
        parsed_ids: typeof r.parsed_ids === "string" ? JSON.parse(r.parsed_ids) : r.parsed_ids,
        row_ids: typeof r.row_ids === "string" ? JSON.parse(r.row_ids) : r.row_ids,
      }));
    };

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      const project = await app.newProject("billing");
      inbound = project.inbound;
      route = await seedRoute(app, { url: rx.url, project });
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 100 });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
    }, 60_000);
    afterAll(async () => {
      await smtp?.close();
      await worker?.stop();
      await rx?.close();
      await app?.close();
    });

    let genuineId = "";
    let forgedId = "";

    test("the attack: a message reusing the Message-ID over SMTP does not swap the genuine event's file", async () => {
      const genuine = await postMessage(app, route.apiKey, genuineRaw);
      expect(genuine.status, genuine.text).toBe(202);
      const genuineBody = await deliveredBody(genuine.body.events[0].id);
      genuineId = genuineBody.body.attachments[0].id;
      expect(genuineId).toBe("att_2");

      // The attacker: no credentials, just mail to the project's address with the known Message-ID.
      rx.clear();
      const c = await RawSmtp.connect(smtp.port);
      await c.command("EHLO attacker.example");
      for (const reply of await c.envelope("billing@billing.example", [inbound]))
        expect(reply.code).toBe(250);
      expect((await c.data(invoiceMail(FORGED))).code).toBe(250);
      await c.quit();
      const [first, second] = await stored();
      expect(second, "the forged message is stored").toBeDefined();
      const [forgedEvent] = await app.ctx.database.rows<{ id: string }>(
        sql`select id from events where message_pk = ${second!.id}`,
      );
      const forgedBody = await deliveredBody(forgedEvent!.id);
      forgedId = forgedBody.body.attachments[0].id;
      expect(forgedId).toBe(`att_2${attachmentIdSuffix(second!.raw_sha256)}`);

      // The genuine event's (Message-ID, attachment id) still serves the genuine file.
      expect(await download(genuineId)).toBe(GENUINE);
      // The attacker's event's ids resolve to the attacker's own message, and only to it.
      expect(await download(forgedId)).toBe(FORGED);
      // The rows and the stored models agree, so every body and mapper sees the ids the URLs take.
      expect(first!.row_ids).toEqual([genuineId]);
      expect(first!.parsed_ids).toEqual([genuineId]);
      expect(second!.row_ids).toEqual([forgedId]);
      expect(second!.parsed_ids).toEqual([forgedId]);
    }, 30_000);

    test("the same bytes again are a duplicate and keep their ids", async () => {
      const before = await stored();
      const again = await postMessage(app, route.apiKey, genuineRaw);
      expect(again.status, again.text).toBe(202);
      expect(again.body.duplicate).toBe(true);
      // The forged message's exact stored bytes, resent over HTTP.
      const [raw] = await app.ctx.database.rows<{ raw_bytes: Uint8Array }>(
        sql`select raw_bytes from messages where id = ${before[1]!.id}`,
      );
      const resent = await postMessage(app, route.apiKey, new Uint8Array(raw!.raw_bytes));
      expect(resent.body.duplicate).toBe(true);
      expect(await stored()).toEqual(before);
      expect(await download(genuineId)).toBe(GENUINE);
      expect(await download(forgedId)).toBe(FORGED);
    });

    test("a third message with the Message-ID gets ids of its own", async () => {
      const third = await postMessage(app, route.apiKey, invoiceMail("%PDF third\n", "Other <o@x.example>"));
      expect(third.status, third.text).toBe(202);
      const all = await stored();
      expect(all).toHaveLength(3);
      const ids = all.flatMap((m) => m.row_ids);
      expect(new Set(ids).size).toBe(3);
      expect(all[2]!.row_ids).toEqual([`att_2${attachmentIdSuffix(all[2]!.raw_sha256)}`]);
      expect(await download(all[2]!.row_ids[0]!)).toBe("%PDF third\n");
      expect(await download(genuineId)).toBe(GENUINE);
    });

    test("a msg_… id in place of the Message-ID names that message alone", async () => {
      const [first, second] = await stored();
      expect(await download("att_2", first!.id)).toBe(GENUINE);
      expect(await download(forgedId, second!.id)).toBe(FORGED);
      const r = await urlFor("att_2", second!.id);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("attachments.not_found");
    });

    test("an id that two messages with the Message-ID both carry is 409 messages.ambiguous, never a guess", async () => {
      // Two first copies stored concurrently both keep the plain ids: the seeded rows stand for them.
      const raced = "<raced@billing.example>";
      const enc = (s: string) => new TextEncoder().encode(s);
      const a = await seedMessage(app.ctx, {
        projectId: route.projectId,
        messageId: raced,
        attachments: [{ id: "att_2", filename: "a.pdf", bytes: enc("one") }],
      });
      const b = await seedMessage(app.ctx, {
        projectId: route.projectId,
        messageId: raced,
        attachments: [
          { id: "att_2", filename: "b.pdf", bytes: enc("two") },
          { id: "att_3", filename: "c.pdf", bytes: enc("three") },
        ],
      });
      const r = await urlFor("att_2", raced);
      expect(r.status, r.text).toBe(409);
      expect(r.body.error.code).toBe("messages.ambiguous");
      expect(r.body.error.details.map((d: { message: string }) => d.message).sort()).toEqual(
        [a.pk, b.pk].sort(),
      );
      // An id only one of them has identifies it; each message's own id always does.
      expect(await download("att_3", raced)).toBe("three");
      expect(await download("att_2", a.pk)).toBe("one");
      expect(await download("att_2", b.pk)).toBe("two");
      expect((await urlFor("att_9", raced)).body.error.code).toBe("attachments.not_found");
      expect((await urlFor("att_2", "<nobody@billing.example>")).body.error.code).toBe("messages.not_found");
    });

    test("preview by a Message-ID stored with different bytes is 409 messages.ambiguous listing the msg_… ids", async () => {
      const config = { version: "v1", output: { files: { var: "message.attachments" } } };
      const preview = (messageId: string) =>
        app.request("POST", "/v1/mapper/preview", {
          apiKey: route.apiKey,
          body: { config, message_id: messageId },
        });
      const all = await stored();
      for (const asked of [MESSAGE_ID, MESSAGE_ID.slice(1, -1)]) {
        const r = await preview(asked);
        expect(r.status, r.text).toBe(409);
        expect(r.body.error.code).toBe("messages.ambiguous");
        expect(r.body.error.details.map((d: { message: string }) => d.message)).toEqual(all.map((m) => m.id));
      }
      const one = await preview(all[1]!.id);
      expect(one.status, one.text).toBe(200);
      expect(one.body.output.files[0].id).toBe(forgedId);
      const single = buildMail({
        attachments: [{ filename: "x.txt", contentType: "text/plain", content: "x" }],
      });
      const posted = await postMessage(app, route.apiKey, single);
      const alone = await preview(posted.body.message_id);
      expect(alone.status, alone.text).toBe(200);
      expect(alone.body.output.files[0].id).toBe("att_2");
    });
  });
}
