// Spam verdicts from a real rspamd on loopback (test/support/rspamd.ts): GTUBE over SMTP is scored and
// rejected by rspamd, and the message is still accepted and stored with that verdict; when rspamd stops
// in the middle of a stream of messages none is lost, and the ones it did not score read `spam: null`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import type { MapperSpam } from "../../mapper/types.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { metrics } from "../../services/lib/metrics.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { addRoute, postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { GTUBE, type RunningRspamd, startRspamd } from "../support/rspamd.ts";
import { RawSmtp } from "../support/smtp.ts";

let rspamd: RunningRspamd;
beforeAll(async () => {
  rspamd = await startRspamd();
}, 90_000);
afterAll(async () => {
  await rspamd?.stop();
});

for (const kind of testDbKinds()) {
  describe(`spam verdicts from rspamd (${kind})`, () => {
    let app: TestApp;
    let smtp: RunningSmtp;
    let p: { id: string; apiKey: string; inbound: string };
    beforeAll(async () => {
      app = await createTestApp(kind, { env: { RSPAMD_URL: rspamd.url } });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      p = await app.newProject();
      await addRoute(app, p.apiKey);
    }, 60_000);
    afterAll(async () => {
      await smtp?.close();
      await app?.close();
    });

    async function spamOf(messagePk: string): Promise<MapperSpam | null> {
      const [row] = await app.ctx.database.rows<{ spam: MapperSpam | null }>(
        sql`select parsed->'spam' as spam from messages where id = ${messagePk}`,
      );
      if (!row) throw new Error(`no message ${messagePk}`);
      return row.spam;
    }

    async function sendSmtp(c: RawSmtp, raw: Uint8Array): Promise<string> {
      expect((await c.command("MAIL FROM:<sender@example.com>")).code).toBe(250);
      expect((await c.command(`RCPT TO:<${p.inbound}>`)).code).toBe(250);
      const reply = await c.data(raw);
      expect(reply.raw).toMatch(/^250 /);
      return /accepted as (\S+)/.exec(reply.raw)?.[1] as string;
    }

    test("GTUBE over SMTP is accepted and stored with rspamd's score, action and symbols", async () => {
      const c = await RawSmtp.connect(smtp.port);
      await c.command("EHLO mail.example.com");
      const pk = await sendSmtp(c, buildMail({ text: GTUBE }));
      await c.quit();
      const spam = await spamOf(pk);
      expect(spam).not.toBeNull();
      expect(spam!.action).toBe("reject");
      expect(spam!.score).toBeGreaterThanOrEqual(15);
      expect(spam!.symbols).toContain("GTUBE");
    });

    test("an ordinary upload is scored too, below rspamd's thresholds", async () => {
      const up = await postMessage(app, p.apiKey, buildMail({ text: "Lunch tomorrow?" }));
      expect(up.status).toBe(202);
      const [row] = await app.ctx.database.rows<{ id: string }>(
        sql`select id from messages where project_id = ${p.id} and message_id = ${up.body.message_id}`,
      );
      const spam = await spamOf(row!.id);
      expect(spam).toMatchObject({ action: "no action" });
      expect(spam!.score).toBeLessThan(15);
      expect(Array.isArray(spam!.symbols)).toBe(true);
    });
  });
}

// Last, since it stops the shared rspamd.
describe("rspamd stopping mid-stream", () => {
  test("loses no message: those scored before carry a verdict, the rest spam null, and the failures are counted", async () => {
    const kind = testDbKinds()[0]!;
    const app = await createTestApp(kind, { env: { RSPAMD_URL: rspamd.url } });
    const smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
    try {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      const before = metrics.spamCheckFailures.get({ reason: "unavailable" });
      const c = await RawSmtp.connect(smtp.port);
      await c.command("EHLO mail.example.com");
      const sent: string[] = [];
      for (let i = 0; i < 10; i++) {
        if (i === 5) await rspamd.stop();
        expect((await c.command("MAIL FROM:<sender@example.com>")).code).toBe(250);
        expect((await c.command(`RCPT TO:<${p.inbound}>`)).code).toBe(250);
        const reply = await c.data(buildMail({ text: `message ${i}` }));
        expect(reply.raw).toMatch(/^250 /);
        sent.push(/accepted as (\S+)/.exec(reply.raw)?.[1] as string);
      }
      await c.quit();
      const rows = await app.ctx.database.rows<{ id: string; spam: MapperSpam | null }>(
        sql`select id, parsed->'spam' as spam from messages where project_id = ${p.id}`,
      );
      const byId = new Map(rows.map((r) => [r.id, r.spam]));
      expect(sent.every((id) => byId.has(id))).toBe(true);
      expect(sent.slice(0, 5).every((id) => byId.get(id) !== null)).toBe(true);
      expect(sent.slice(5).every((id) => byId.get(id) === null)).toBe(true);
      expect(metrics.spamCheckFailures.get({ reason: "unavailable" }) - before).toBe(5);
    } finally {
      await smtp.close();
      await app.close();
    }
  });
});
