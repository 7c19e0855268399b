// The SMTP listener over real sockets: nodemailer for the ordinary path, raw sockets for the edges.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import nodemailer from "nodemailer";
import type { BlobStore } from "../../services/attachments/blob-store.ts";
import { INLINE_RAW_MAX_BYTES, readRawMessage } from "../../services/ingest/raw.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { addRoute, countRows, spoolFiles } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { RawSmtp } from "../support/smtp.ts";
import { selfSignedCert } from "../support/tls.ts";

for (const kind of testDbKinds()) {
  describe(`SMTP intake (${kind})`, () => {
    let app: TestApp;
    let smtp: RunningSmtp;
    let p: { id: string; apiKey: string; inbound: string };
    beforeAll(async () => {
      const tls = selfSignedCert();
      app = await createTestApp(kind, { env: { TLS_CERT: tls.cert, TLS_KEY: tls.key } });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      p = await app.newProject();
      await addRoute(app, p.apiKey);
    }, 60_000);
    afterAll(async () => {
      await smtp?.close();
      await app?.close();
    });

    test("a real client delivers over STARTTLS; the message is stored with source_type smtp and its envelope", async () => {
      const transport = nodemailer.createTransport({
        host: "127.0.0.1",
        port: smtp.port,
        secure: false,
        requireTLS: true,
        tls: { rejectUnauthorized: false },
      });
      const raw = buildMail({
        attachments: [{ filename: "r.pdf", contentType: "application/pdf", content: "%PDF-1.4\n%%EOF\n" }],
      });
      const info = await transport.sendMail({
        envelope: { from: "alice@example.com", to: [p.inbound] },
        raw: Buffer.from(raw),
      });
      transport.close();
      expect(info.response).toMatch(/^250 2\.6\.0 Ok: accepted as msg_/);
      const [row] = await app.ctx.database.rows<any>(
        sql`select source_type, envelope, raw_size_bytes from messages where project_id = ${p.id} order by received_at desc limit 1`,
      );
      expect(row.source_type).toBe("smtp");
      expect(row.envelope).toEqual({
        mail_from: "alice@example.com",
        rcpt_to: [p.inbound],
        helo: expect.any(String),
        client_ip: "127.0.0.1",
      });
      expect(Number(row.raw_size_bytes)).toBe(raw.byteLength);
    });

    test("advertises SIZE, PIPELINING, ENHANCEDSTATUSCODES and STARTTLS, and no AUTH", async () => {
      const c = await RawSmtp.connect(smtp.port);
      expect(c.greeting.raw).toMatch(/^220 in\.localhost ESMTP/);
      const ehlo = await c.command("EHLO client.test");
      await c.quit();
      const exts = ehlo.lines.slice(1);
      expect(exts).toEqual(
        expect.arrayContaining(["SIZE 52428800", "PIPELINING", "ENHANCEDSTATUSCODES", "STARTTLS"]),
      );
      expect(exts.some((e) => e.startsWith("AUTH"))).toBe(false);
    });

    test("refuses an unknown recipient with 550 5.1.1 and accepts +tag addresses", async () => {
      const c = await RawSmtp.connect(smtp.port);
      const [tagged, unknown, otherDomain] = await c.envelope("a@example.com", [
        p.inbound.replace("@", "+billing@"),
        `aaaaaaaaaaaaaaaa@${app.ctx.config.inboundDomain}`,
        p.inbound.replace(/@.*/, "@example.com"),
      ]);
      await c.quit();
      expect(tagged!.code).toBe(250);
      expect(unknown!.raw).toMatch(/^550 5\.1\.1 /);
      expect(otherDomain!.raw).toMatch(/^550 5\.1\.1 /);
    });

    test("answers 250 only after the message's events are committed", async () => {
      const before = await countRows(app, "events", p.id);
      const c = await RawSmtp.connect(smtp.port);
      await c.envelope("a@example.com", [p.inbound]);
      const done = await c.data(buildMail());
      expect(done.raw).toMatch(/^250 2\.6\.0 /);
      expect(await countRows(app, "events", p.id)).toBe(before + 1);
      await c.quit();
    });

    test("several RCPT to one project make one message; two projects get one message each", async () => {
      const q = await app.newProject("second");
      const before = await countRows(app, "messages", p.id);
      const c = await RawSmtp.connect(smtp.port);
      const rcpts = [p.inbound, p.inbound.replace("@", "+x@"), q.inbound];
      const replies = await c.envelope("a@example.com", rcpts);
      expect(replies.map((r) => r.code)).toEqual([250, 250, 250]);
      expect((await c.data(buildMail())).code).toBe(250);
      await c.quit();
      expect(await countRows(app, "messages", p.id)).toBe(before + 1);
      const [theirs] = await app.ctx.database.rows<any>(
        sql`select envelope from messages where project_id = ${q.id}`,
      );
      expect(theirs.envelope.rcpt_to).toEqual([q.inbound]);
    });

    test("pipelined commands get their replies in order", async () => {
      const c = await RawSmtp.connect(smtp.port);
      await c.command("EHLO client.test");
      const unknown = `zzzzzzzzzzzzzzzz@${app.ctx.config.inboundDomain}`;
      await c.write(
        `MAIL FROM:<a@example.com>\r\nRCPT TO:<${p.inbound}>\r\nRCPT TO:<${unknown}>\r\nDATA\r\n`,
      );
      const codes = [await c.reply(), await c.reply(), await c.reply(), await c.reply()].map((r) => r.code);
      expect(codes).toEqual([250, 250, 550, 354]);
      await c.write(`${new TextDecoder().decode(buildMail({ subject: "pipelined" }))}\r\n.\r\n`);
      expect((await c.reply()).code).toBe(250);
      await c.quit();
    });

    test("dot-stuffed lines arrive byte-exactly in the body and in a 7bit attachment", async () => {
      const attachment = ".starts with a dot\r\n..two dots\r\n.\r\nend\r\n";
      const raw = buildMail({
        messageId: "<dots@test>",
        text: ".hidden line\r\n..double",
        attachments: [
          { filename: "dots.txt", contentType: "text/plain", content: attachment, encoding: "7bit" },
        ],
      });
      const c = await RawSmtp.connect(smtp.port);
      await c.envelope("a@example.com", [p.inbound]);
      expect((await c.data(raw)).code).toBe(250);
      await c.quit();
      const [msg] = await app.ctx.database.rows<any>(
        sql`select id, parsed from messages where project_id = ${p.id} and message_id = '<dots@test>'`,
      );
      const stored = Buffer.from((await readRawMessage(app.ctx, msg.id))!);
      expect(stored.equals(Buffer.from(raw))).toBe(true);
      expect(msg.parsed.text).toContain(".hidden line\n..double");
      const [att] = await app.ctx.database.rows<any>(
        sql`select blob_key from attachments where message_pk = ${msg.id}`,
      );
      expect(await new Response(await app.ctx.blobs.read(att.blob_key)).text()).toBe(attachment);
    });

    test("a client that hangs up mid-DATA leaves no message and no spool file", async () => {
      const before = await countRows(app, "messages", p.id);
      const c = await RawSmtp.connect(smtp.port);
      await c.envelope("a@example.com", [p.inbound]);
      expect((await c.command("DATA")).code).toBe(354);
      const head = new TextDecoder().decode(buildMail({ subject: "cut" }));
      await c.write(`${head}\r\n${"x".repeat(998)}\r\n`.repeat(200));
      await eventually("the spool file", () => spoolFiles(app).length > 0);
      c.destroy();
      await eventually("the spool to be cleaned up", () => spoolFiles(app), 10_000, {
        until: (f) => f.length === 0,
      });
      expect(await countRows(app, "messages", p.id)).toBe(before);
    });

    test("MAIL FROM with a SIZE over the limit is refused with 552", async () => {
      const c = await RawSmtp.connect(smtp.port);
      await c.command("EHLO client.test");
      const r = await c.command("MAIL FROM:<a@example.com> SIZE=60000000");
      await c.quit();
      expect(r.code).toBe(552);
    });

    test("a transient storage failure answers 451 4.3.0 and stores nothing", async () => {
      const failing: BlobStore & { adoptFile?: unknown } = Object.create(app.ctx.blobs);
      failing.put = async () => {
        throw new Error("disk gone");
      };
      // The raw message of an SMTP transaction is renamed into the fs store rather than put.
      failing.adoptFile = async () => {
        throw new Error("disk gone");
      };
      const broken = await startSmtpServer({ ...app.ctx, blobs: failing }, { port: 0 });
      const before = await countRows(app, "messages", p.id);
      // A small message keeps its raw bytes in its row (ingest/raw.ts): its attachment needs the store,
      // and a large one's raw bytes do.
      const line = "a line of text long enough to fill the message up quickly, again and again.\r\n";
      const mails = [
        buildMail({ attachments: [{ filename: "a.txt", contentType: "text/plain", content: "hello" }] }),
        buildMail({ text: line.repeat(Math.ceil((INLINE_RAW_MAX_BYTES + 1) / line.length)) }),
      ];
      for (const mail of mails) {
        const c = await RawSmtp.connect(broken.port);
        await c.envelope("a@example.com", [p.inbound]);
        const r = await c.data(mail);
        await c.quit();
        expect(r.raw).toMatch(/^451 4\.3\.0 /);
      }
      await broken.close();
      expect(await countRows(app, "messages", p.id)).toBe(before);
    });
  });
}

describe("SMTP limits", () => {
  let app: TestApp;
  let smtp: RunningSmtp;
  let p: { id: string; apiKey: string; inbound: string };
  beforeAll(async () => {
    app = await createTestApp("pglite", { env: { PROJECT_QUOTA_BYTES: "2000" } });
    smtp = await startSmtpServer(app.ctx, { port: 0 });
    p = await app.newProject();
  }, 60_000);
  afterAll(async () => {
    await smtp?.close();
    await app?.close();
  });

  test("without TLS_CERT/TLS_KEY STARTTLS is not offered", async () => {
    const c = await RawSmtp.connect(smtp.port);
    const ehlo = await c.command("EHLO client.test");
    await c.quit();
    expect(ehlo.lines).not.toContain("STARTTLS");
  });

  test("a message over the project's quota is refused with 552 5.2.2", async () => {
    const c = await RawSmtp.connect(smtp.port);
    await c.envelope("a@example.com", [p.inbound]);
    const r = await c.data(buildMail({ text: "q".repeat(3000) }));
    await c.quit();
    expect(r.raw).toMatch(/^552 5\.2\.2 /);
    expect(await countRows(app, "messages", p.id)).toBe(0);
  });

  test("a stream over 50 MiB without SIZE is refused with 552 5.3.4 and nothing is stored", async () => {
    const c = await RawSmtp.connect(smtp.port);
    await c.envelope("a@example.com", [p.inbound]);
    expect((await c.command("DATA")).code).toBe(354);
    await c.write(new TextDecoder().decode(buildMail()));
    const line = `${"b".repeat(1022)}\r\n`;
    const chunk = line.repeat(1024); // 1 MiB
    for (let i = 0; i < 51; i++) await c.write(chunk);
    await c.write(".\r\n");
    const r = await c.reply();
    await c.quit();
    expect(r.raw).toMatch(/^552 5\.3\.4 /);
    expect(await countRows(app, "messages")).toBe(0);
    await eventually("the spool to be cleaned up", () => spoolFiles(app), 10_000, {
      until: (f) => f.length === 0,
    });
  });
});
