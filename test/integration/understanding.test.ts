/**
 * What the service understands about a message, where it shows: generic@2 and the mapper's `message`
 * and `ctx.envelope` at a real receiver (mail sent over real SMTP), the event detail's `message.mail`,
 * Message-ID conflicts, previews of stored messages, and the generic@2 schema served by the API.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import nodemailer from "nodemailer";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { isSettled, type SeededRoute, seedRoute, waitForEvent } from "../support/seed-events.ts";

const GENERIC_V2 = { steps: [{ name: "map.generic_json", args: { version: "2" } }] };
const ECHO_MAPPER = {
  steps: [
    {
      name: "map.custom_json",
      args: {
        version: "v1",
        output: {
          id: { var: "message.message_id" },
          thread: { var: "message.thread_id" },
          reply: { var: "message.reply_text" },
          source: { var: "message.text_source" },
          auto: { var: "message.auto.kind" },
          spf: { var: "message.auth.spf.result" },
          spam: { var: "message.spam" },
          forwarded: { var: "message.forwarded" },
          conflict: { var: "message.message_id_conflict" },
          envelope: { var: "ctx.envelope" },
        },
      },
    },
  ],
};

function reply(
  messageId: string,
  body = "Yes, Tuesday works.\n\nOn Mon, Bob wrote:\n> Does Tuesday work?\n",
): string {
  return [
    "From: Alice <alice@example.com>",
    "To: inbox@in.localhost",
    "Subject: Re: Meeting",
    `Message-ID: ${messageId}`,
    "In-Reply-To: <parent@example.com>",
    "References: <root@example.com> <parent@example.com>",
    "Date: Thu, 01 Jan 2026 10:00:00 +0000",
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    body,
  ].join("\r\n");
}

for (const kind of testDbKinds()) {
  describe(`message understanding where it shows (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let smtp: RunningSmtp;
    let v2: SeededRoute;
    let echo: SeededRoute;
    let inbound: string;

    beforeAll(async () => {
      app = await createTestApp(kind);
      rx = await startReceiver();
      const project = await app.newProject();
      inbound = project.inbound;
      v2 = await seedRoute(app, { url: `${rx.url}/v2`, pipeline: GENERIC_V2, project });
      echo = await seedRoute(app, { url: `${rx.url}/echo`, pipeline: ECHO_MAPPER, project });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 100 });
    }, 60_000);
    afterAll(async () => {
      await worker?.stop();
      await smtp?.close();
      await rx?.close();
      await app?.close();
    });

    async function bodiesFor(messageId: string): Promise<{ v2: any; echo: any }> {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const v2Req = rx.requests.find(
          (r) => r.path === "/v2" && JSON.parse(r.text).message.message_id === messageId,
        );
        const echoReq = rx.requests.find((r) => r.path === "/echo" && JSON.parse(r.text).id === messageId);
        if (v2Req && echoReq) return { v2: JSON.parse(v2Req.text), echo: JSON.parse(echoReq.text) };
        if (Date.now() > deadline)
          throw new Error(`no deliveries for ${messageId}: ${rx.requests.length} requests`);
        await Bun.sleep(50);
      }
    }

    test("over SMTP: generic@2 carries the thread, reply text and defaults; the mapper sees ctx.envelope with HELO, client address and +tag", async () => {
      const transport = nodemailer.createTransport({
        host: "127.0.0.1",
        port: smtp.port,
        secure: false,
        ignoreTLS: true,
        name: "client.example",
      });
      const tagged = inbound.replace("@", "+orders@");
      const messageId = "<smtp-understanding@example.com>";
      await transport.sendMail({
        envelope: { from: "alice@example.com", to: [tagged] },
        raw: Buffer.from(reply(messageId)),
      });
      transport.close();
      const { v2: body, echo: mapped } = await bodiesFor(messageId);

      expect(body.schema).toEqual({ name: "generic", version: "2" });
      expect(body.message.thread_id).toBe("<root@example.com>");
      expect(body.message.message_id_conflict).toBe(false);
      expect(body.message.auto).toMatchObject({ kind: "none", auto_submitted: null, list_id: null });
      expect(body.message.auth.spf.result).toEqual(expect.any(String));
      expect(body.body.text_source).toBe("text");
      expect(body.body.reply_text.startsWith("Yes, Tuesday works.")).toBe(true);
      expect("spam" in body).toBe(true);
      expect(body.envelope).toEqual({ mail_from: "alice@example.com", rcpt_to: [tagged.toLowerCase()] });
      // The published schema accepts what was delivered.
      const schema = await app.request("GET", "/v1/schemas/transform/generic@2", { apiKey: null });
      expect(schema.status).toBe(200);
      expect(schema.headers.get("content-type")).toContain("application/schema+json");
      const validate = new Ajv2020({ strict: false }).compile(schema.body);
      expect(validate(body), JSON.stringify(validate.errors)).toBe(true);

      expect(mapped.thread).toBe("<root@example.com>");
      expect(mapped.source).toBe("text");
      expect(mapped.auto).toBe("none");
      expect(mapped.conflict).toBe(false);
      expect(mapped.forwarded).toBeNull();
      expect(mapped.envelope).toEqual({
        mail_from: "alice@example.com",
        rcpt_to: [tagged],
        helo: "client.example",
        client_ip: "127.0.0.1",
        tag: "orders",
      });
    });

    test("over HTTP: ctx.envelope is null; a forged re-send of a Message-ID is flagged, the first copy is not", async () => {
      const messageId = "<conflict-1@example.com>";
      const first = await app.request("POST", "/v1/messages", {
        apiKey: v2.apiKey,
        rawBody: reply(messageId),
        headers: { "content-type": "message/rfc822" },
      });
      expect(first.status, first.text).toBe(202);
      const firstBodies = await bodiesFor(messageId);
      expect(firstBodies.v2.message.message_id_conflict).toBe(false);
      expect(firstBodies.echo.envelope).toBeNull();
      rx.clear();

      const forged = await app.request("POST", "/v1/messages", {
        apiKey: v2.apiKey,
        rawBody: reply(messageId, "Please wire the money to the new account.\n"),
        headers: { "content-type": "message/rfc822" },
      });
      expect(forged.status, forged.text).toBe(202);
      const forgedBodies = await bodiesFor(messageId);
      expect(forgedBodies.v2.message.message_id_conflict).toBe(true);
      expect(forgedBodies.echo.conflict).toBe(true);

      // The same bytes again are a duplicate, not a conflict: nothing new is stored.
      const again = await app.request("POST", "/v1/messages", {
        apiKey: v2.apiKey,
        rawBody: reply(messageId),
        headers: { "content-type": "message/rfc822" },
      });
      expect(again.status).toBe(202);
      expect(again.body.duplicate).toBe(true);

      for (const [created, conflict] of [
        [first.body.events[0], false],
        [forged.body.events[0], true],
      ] as const) {
        expect((await waitForEvent(app.ctx, created.id, isSettled, 5000)).status).toBe("delivered");
        const detail = await app.request("GET", `/v1/events/${created.id}`, { apiKey: v2.apiKey });
        expect(detail.status).toBe(200);
        expect(detail.body.message.mail.message_id_conflict).toBe(conflict);
        expect(detail.body.message.mail.thread_id).toBe("<root@example.com>");
        expect(detail.body.message.mail.auth.source).toEqual(expect.any(String));
      }
    });

    test("a preview of a stored SMTP message sees its envelope and understanding; an inline one gets the defaults", async () => {
      const config = ECHO_MAPPER.steps[0]?.args;
      const stored = await app.request("POST", "/v1/mapper/preview", {
        apiKey: echo.apiKey,
        body: { config, message_id: "<smtp-understanding@example.com>" },
      });
      expect(stored.status, stored.text).toBe(200);
      expect(stored.body.output.envelope).toMatchObject({ helo: "client.example", tag: "orders" });
      expect(stored.body.output.thread).toBe("<root@example.com>");

      const inline = await app.request("POST", "/v1/mapper/preview", {
        apiKey: echo.apiKey,
        body: {
          config,
          message: {
            message_id: "<x@y>",
            headers: { "in-reply-to": "<p@y>", "auto-submitted": "auto-replied" },
            text: " hi \n",
          },
        },
      });
      expect(inline.status, inline.text).toBe(200);
      expect(inline.body.output).toEqual({
        id: "<x@y>",
        thread: "<p@y>",
        reply: "hi",
        source: "text",
        auto: "auto_reply",
        spf: "none",
        spam: null,
        forwarded: null,
        conflict: false,
        envelope: null,
      });
    });
  });
}
