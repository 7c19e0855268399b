// The SMTP listener's per-client limits over real sockets (services/ingest/smtp-limits.ts): each test
// re-runs a slot-exhaustion attack with small limits and checks that the attacker is cut off while
// ordinary senders still deliver, and that nothing of a cut message is stored.
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { ingestMessage } from "../../services/ingest/ingest.ts";
import { Intake } from "../../services/ingest/intake.ts";
import { type RunningSmtp, type SmtpListenOptions, startSmtpServer } from "../../services/ingest/smtp.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { addRoute, countRows, spoolFiles } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { RawSmtp } from "../support/smtp.ts";

for (const kind of testDbKinds()) {
  describe(`SMTP limits (${kind})`, () => {
    let app: TestApp;
    let p: { id: string; apiKey: string; inbound: string };
    const servers: RunningSmtp[] = [];
    const clients: RawSmtp[] = [];
    const listen = async (opts: SmtpListenOptions = {}): Promise<number> => {
      const smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0, ...opts });
      servers.push(smtp);
      return smtp.port;
    };
    const connect = async (port: number): Promise<RawSmtp> => {
      const c = await RawSmtp.connect(port);
      clients.push(c);
      return c;
    };
    beforeAll(async () => {
      app = await createTestApp(kind);
      p = await app.newProject();
      await addRoute(app, p.apiKey);
    }, 60_000);
    afterEach(async () => {
      for (const c of clients.splice(0)) c.destroy();
      await Promise.all(servers.splice(0).map((s) => s.close()));
    });
    afterAll(async () => {
      await app?.close();
    });

    test("the 11th concurrent connection from one address gets 421 4.7.0; closing one makes room", async () => {
      expect(app.ctx.config.smtpMaxConnectionsPerIp).toBe(10);
      const port = await listen();
      const held = await Promise.all(Array.from({ length: 10 }, () => connect(port)));
      expect(held.map((c) => c.greeting.code)).toEqual(Array(10).fill(220));
      const eleventh = await connect(port);
      expect(eleventh.greeting.raw).toMatch(/^421 4\.7\.0 /);
      await eventually("the refused connection to be closed", () => eleventh.closed);
      await held[0]!.quit();
      const next = await eventually(
        "a new connection to be greeted once one was closed",
        async () => {
          const c = await connect(port);
          if (c.greeting.code === 220) return c;
          c.destroy();
          return null;
        },
        10_000,
        { everyMs: 20 },
      );
      const [rcpt] = await next.envelope("a@example.com", [p.inbound]);
      expect(rcpt!.code).toBe(250);
      expect((await next.data(buildMail({ subject: "after a slot freed" }))).raw).toMatch(/^250 2\.6\.0 /);
    });

    test("a client trickling DATA is cut with 421 4.4.2 and nothing is stored; another connection delivers", async () => {
      const port = await listen({ limits: { dataGraceMs: 1000, dataMinBytesPerSecond: 1000 } });
      const before = await countRows(app, "messages", p.id);
      const drip = await connect(port);
      await drip.envelope("slow@example.com", [p.inbound]);
      expect((await drip.command("DATA")).code).toBe(354);
      // The attack, sped up: a few bytes at a time, far below the minimum rate.
      const dripped = (async () => {
        const bytes = new TextDecoder().decode(buildMail({ subject: "trickled" }));
        for (let i = 0; i < bytes.length && !drip.closed; i++) {
          await drip.write(bytes.charAt(i)).catch(() => undefined);
          await Bun.sleep(25);
        }
      })();
      const normal = await connect(port);
      await normal.envelope("fast@example.com", [p.inbound]);
      expect((await normal.data(buildMail({ subject: "on time" }))).raw).toMatch(/^250 2\.6\.0 /);
      const cut = await drip.reply();
      expect(cut.raw).toMatch(/^421 4\.4\.2 /);
      await eventually("the trickling connection to be closed", () => drip.closed);
      await dripped;
      expect(await countRows(app, "messages", p.id)).toBe(before + 1);
      const senders = await app.ctx.database.rows<{ from: string }>(
        sql`select envelope->>'mail_from' as "from" from messages where project_id = ${p.id}`,
      );
      expect(senders.map((r) => r.from)).not.toContain("slow@example.com");
      await normal.quit();
      await eventually("no spool file to be left", () => spoolFiles(app).length === 0);
    });

    test("the session deadline closes a connection that keeps sending NOOPs", async () => {
      const port = await listen({ limits: { sessionTimeoutMs: 400 } });
      const c = await connect(port);
      await c.command("EHLO client.test");
      // The 421 may answer a NOOP or arrive between two; either way it is the last reply.
      const last = await eventually(
        "a 421 instead of a NOOP's 250",
        async () => {
          void c.write("NOOP\r\n").catch(() => undefined);
          const r = await c.reply();
          return r.code === 421 ? r : null;
        },
        10_000,
        { everyMs: 20 },
      );
      expect(last.raw).toMatch(/^421 4\.4\.2 /);
      await eventually("the connection to be closed", () => c.closed);
    });

    test("a message received in full before the session deadline is still processed and answered 250", async () => {
      let connectedAt = 0;
      const sessionTimeoutMs = 300;
      // Ingest holds the message until the session deadline has passed.
      const intake = new Intake(app.ctx, "smtp", {
        ingest: async (ctx, input) => {
          await eventually(
            "the session deadline to pass",
            () => Date.now() > connectedAt + 2 * sessionTimeoutMs,
          );
          return ingestMessage(ctx, input);
        },
      });
      const port = await listen({ intake, limits: { sessionTimeoutMs } });
      connectedAt = Date.now();
      const c = await connect(port);
      await c.envelope("a@example.com", [p.inbound]);
      const before = await countRows(app, "messages", p.id);
      expect((await c.data(buildMail({ subject: "processed past the deadline" }))).raw).toMatch(
        /^250 2\.6\.0 /,
      );
      expect(await countRows(app, "messages", p.id)).toBe(before + 1);
      expect((await c.reply()).raw).toMatch(/^421 4\.4\.2 /);
      await eventually("the connection to be closed after the reply", () => c.closed);
    });

    test("the 101st RCPT gets 452 4.5.3 and the message goes to the first 100", async () => {
      expect(app.ctx.config.smtpMaxRecipients).toBe(100);
      const port = await listen();
      const c = await connect(port);
      const rcpts = Array.from({ length: 101 }, (_, i) => p.inbound.replace("@", `+r${i}@`));
      const replies = await c.envelope("many@example.com", rcpts);
      expect(replies.slice(0, 100).every((r) => r.code === 250)).toBe(true);
      expect(replies[100]!.raw).toMatch(/^452 4\.5\.3 /);
      const done = await c.data(buildMail({ subject: "one hundred recipients" }));
      expect(done.raw).toMatch(/^250 2\.6\.0 /);
      const [row] = await app.ctx.database.rows<{ envelope: { rcpt_to: string[] } }>(
        sql`select envelope from messages where project_id = ${p.id} and envelope->>'mail_from' = 'many@example.com'`,
      );
      expect(row!.envelope.rcpt_to).toEqual(rcpts.slice(0, 100));
    });
  });
}
