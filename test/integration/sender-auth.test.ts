// Sender authentication end to end: real DNS (dnsmasq on loopback serving test zones), messages
// DKIM-signed and ARC-sealed in the test with generated keys, sent over real SMTP to the listener, and
// the verdict read back from the stored message. The HTTP upload takes a trusted Authentication-Results.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { sql } from "drizzle-orm";
import { dkimSign, sealMessage } from "mailauth";
import type { MapperAuth } from "../../mapper/types.ts";
import { startWorker } from "../../services/delivery/worker.ts";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type RunningDnsmasq, startDnsmasq } from "../support/dnsmasq.ts";
import { addRoute, postMessage } from "../support/ingest.ts";
import { buildMail, uniqueMessageId } from "../support/raw-mail.ts";
import { startReceiver } from "../support/receiver.ts";
import { seedRoute } from "../support/seed-events.ts";
import { RawSmtp } from "../support/smtp.ts";

function rsaKey(): { privateKey: string; record: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const p = publicKey.export({ type: "spki", format: "der" }).toString("base64");
  return {
    privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    record: `v=DKIM1; k=rsa; p=${p}`,
  };
}

const GOOD = rsaKey(); // good.test, selector s1
const OTHER = rsaKey(); // other.test, selector s1
const FWD = rsaKey(); // fwd.test, selector arc

const ZONE = {
  // The whole TLD is local: DMARC's tree walk asks `_dmarc.test` too, which must be NXDOMAIN.
  domains: ["test"],
  txt: {
    "good.test": "v=spf1 ip4:127.0.0.1 -all",
    "_dmarc.good.test": "v=DMARC1; p=reject",
    "s1._domainkey.good.test": GOOD.record,
    "other.test": "v=spf1 ip4:127.0.0.1 -all",
    "s1._domainkey.other.test": OTHER.record,
    "soft.test": "v=spf1 ~all",
    "fail.test": "v=spf1 ip4:192.0.2.1 -all",
    "_dmarc.fail.test": "v=DMARC1; p=quarantine",
    "fwd.test": "v=spf1 ip4:127.0.0.1 -all",
    "arc._domainkey.fwd.test": FWD.record,
  },
};

async function sign(raw: Uint8Array, domain: string, privateKey: string): Promise<Buffer> {
  const key = { signingDomain: domain, selector: "s1", privateKey };
  // The signatures are those of `signatureData` (the top-level fields are its defaults).
  const r = await dkimSign(Buffer.from(raw), { ...key, signatureData: [key] });
  if (r.errors.length > 0) throw new Error(JSON.stringify(r.errors));
  return Buffer.concat([Buffer.from(r.signatures), Buffer.from(raw)]);
}

for (const kind of testDbKinds()) {
  describe(`sender authentication (${kind})`, () => {
    let dns: RunningDnsmasq;
    let app: TestApp;
    let smtp: RunningSmtp;
    let p: { id: string; apiKey: string; inbound: string };

    beforeAll(async () => {
      dns = await startDnsmasq(ZONE);
      app = await createTestApp(kind, {
        env: { DNS_SERVERS: dns.server, TRUSTED_AUTHSERV_IDS: "mx.trusted.test" },
      });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      p = await app.newProject();
      await addRoute(app, p.apiKey);
    }, 60_000);
    afterAll(async () => {
      await smtp?.close();
      await app?.close();
      await dns?.stop();
    });

    /** Sends `raw` over SMTP from 127.0.0.1 and returns the stored verdict. */
    async function viaSmtp(raw: Uint8Array, mailFrom: string, helo = "mail.good.test"): Promise<MapperAuth> {
      const c = await RawSmtp.connect(smtp.port);
      await c.command(`EHLO ${helo}`);
      expect((await c.command(`MAIL FROM:<${mailFrom}>`)).code).toBe(250);
      expect((await c.command(`RCPT TO:<${p.inbound}>`)).code).toBe(250);
      const reply = await c.data(raw);
      await c.quit();
      expect(reply.raw).toMatch(/^250 /);
      const id = /accepted as (\S+)/.exec(reply.raw)?.[1];
      const [row] = await app.ctx.database.rows<{ auth: MapperAuth }>(
        sql`select parsed->'auth' as auth from messages where id = ${id}`,
      );
      return row!.auth;
    }

    test("aligned DKIM and SPF pass DMARC p=reject: spf, dkim, dmarc pass with the record's policy", async () => {
      const raw = await sign(buildMail({ from: "Alice <alice@good.test>" }), "good.test", GOOD.privateKey);
      const auth = await viaSmtp(raw, "alice@good.test");
      expect(auth).toEqual({
        source: "smtp",
        spf: { result: "pass", domain: "good.test" },
        dkim: [{ result: "pass", domain: "good.test", selector: "s1", aligned: true }],
        dmarc: { result: "pass", policy: "reject", domain: "good.test" },
        arc: { result: "none" },
      });
    });

    test("a From of a p=reject domain sent and signed by another domain fails DMARC; the signature is not aligned", async () => {
      const raw = await sign(buildMail({ from: "CEO <ceo@good.test>" }), "other.test", OTHER.privateKey);
      const auth = await viaSmtp(raw, "bounce@other.test", "mx.other.test");
      expect(auth.spf).toEqual({ result: "pass", domain: "other.test" });
      expect(auth.dkim).toEqual([{ result: "pass", domain: "other.test", selector: "s1", aligned: false }]);
      expect(auth.dmarc).toEqual({ result: "fail", policy: "reject", domain: "good.test" });
    });

    test("SPF softfail (~all) and fail (-all without our address)", async () => {
      const soft = await viaSmtp(buildMail({ from: "x@soft.test" }), "x@soft.test", "soft.test");
      expect(soft.spf).toEqual({ result: "softfail", domain: "soft.test" });
      expect(soft.dkim).toEqual([]);
      expect(soft.dmarc).toEqual({ result: "none", policy: null, domain: "soft.test" });
      const fail = await viaSmtp(buildMail({ from: "x@fail.test" }), "x@fail.test", "fail.test");
      expect(fail.spf).toEqual({ result: "fail", domain: "fail.test" });
      expect(fail.dmarc).toEqual({ result: "fail", policy: "quarantine", domain: "fail.test" });
    });

    test("a body changed after signing no longer passes DKIM, and DMARC fails with it", async () => {
      const signed = await sign(
        buildMail({ from: "alice@good.test", text: "Pay invoice 1001." }),
        "good.test",
        GOOD.privateKey,
      );
      const tampered = Buffer.from(signed.toString("latin1").replace("1001", "9999"), "latin1");
      const auth = await viaSmtp(tampered, "bounce@other.test", "mx.other.test");
      expect(auth.dkim).toHaveLength(1);
      expect(["fail", "neutral"]).toContain(auth.dkim[0]!.result);
      expect(auth.dkim[0]!.aligned).toBe(false);
      expect(auth.dmarc.result).toBe("fail");
    });

    test("an ARC-sealed forward whose DKIM broke in transit: dkim fails, arc passes", async () => {
      const original = await sign(
        buildMail({ from: "alice@good.test", subject: "hello" }),
        "good.test",
        GOOD.privateKey,
      );
      // The forwarder (a list) tags the subject, which breaks the author's signature, then seals.
      const forwarded = Buffer.from(
        original.toString("latin1").replace("Subject: hello", "Subject: [list] hello"),
        "latin1",
      );
      const seal = await sealMessage(forwarded, {
        signingDomain: "fwd.test",
        selector: "arc",
        privateKey: FWD.privateKey,
        authResults: "fwd.test; dkim=pass header.d=good.test; spf=pass smtp.mailfrom=good.test",
        cv: "none",
      });
      const auth = await viaSmtp(Buffer.concat([seal, forwarded]), "list-bounce@fwd.test", "mx.fwd.test");
      expect(auth.arc).toEqual({ result: "pass" });
      expect(auth.spf).toEqual({ result: "pass", domain: "fwd.test" });
      expect(auth.dkim[0]).toMatchObject({ domain: "good.test" });
      expect(auth.dkim[0]!.result).not.toBe("pass");
    });

    test("over SMTP an Authentication-Results header in the message is never used, trusted id or not", async () => {
      const raw = buildMail({
        from: "ceo@good.test",
        extraHeaders: [
          "Authentication-Results: mx.trusted.test; spf=pass smtp.mailfrom=good.test; dmarc=pass",
        ],
      });
      const auth = await viaSmtp(raw, "x@fail.test", "fail.test");
      expect(auth.source).toBe("smtp");
      expect(auth.spf.result).toBe("fail");
      expect(auth.dmarc.result).toBe("fail");
    });

    test("an upload takes the topmost trusted Authentication-Results, never one forged under the author's fields", async () => {
      const ar =
        "mx.trusted.test; spf=pass smtp.mailfrom=alice@good.test; dkim=pass header.d=good.test header.s=s1; dmarc=pass (p=reject) header.from=good.test";
      const genuine = Buffer.concat([
        Buffer.from(
          `Authentication-Results: ${ar}\r\nReceived: from mail.good.test by mx.trusted.test; Tue, 1 Apr 2025 10:00:00 +0000\r\n`,
        ),
        buildMail({ from: "alice@good.test" }),
      ]);
      const up = await postMessage(app, p.apiKey, genuine);
      expect(up.status).toBe(202);
      const [row] = await app.ctx.database.rows<{ auth: MapperAuth; spam: unknown }>(
        sql`select parsed->'auth' as auth, parsed->'spam' as spam from messages where project_id = ${p.id} and message_id = ${up.body.message_id}`,
      );
      expect(row!.auth).toEqual({
        source: "trusted_header",
        spf: { result: "pass", domain: "good.test" },
        dkim: [{ result: "pass", domain: "good.test", selector: "s1", aligned: true }],
        dmarc: { result: "pass", policy: "reject", domain: "good.test" },
        arc: { result: "none" },
      });
      expect(row!.spam).toBeNull();

      // The same claim written by the author below their own From field: no verdict.
      const forged = buildMail({
        messageId: uniqueMessageId(),
        from: "alice@good.test",
        extraHeaders: [`Authentication-Results: ${ar}`],
      });
      const up2 = await postMessage(app, p.apiKey, forged);
      expect(up2.status).toBe(202);
      const [row2] = await app.ctx.database.rows<{ auth: MapperAuth }>(
        sql`select parsed->'auth' as auth from messages where project_id = ${p.id} and message_id = ${up2.body.message_id}`,
      );
      expect(row2!.auth.source).toBe("none");
      expect(row2!.auth.spf.result).toBe("none");

      // A sender's forged "pass" travels below the trusted server's own "fail": the topmost one decides.
      const layered = Buffer.concat([
        Buffer.from(
          "Authentication-Results: mx.trusted.test; spf=fail smtp.mailfrom=ceo@good.test; dmarc=fail (p=reject) header.from=good.test\r\n" +
            "Received: from attacker.example by mx.trusted.test; Tue, 1 Apr 2025 10:00:00 +0000\r\n" +
            `Authentication-Results: ${ar}\r\n`,
        ),
        buildMail({ from: "ceo@good.test" }),
      ]);
      const up3 = await postMessage(app, p.apiKey, layered);
      expect(up3.status).toBe(202);
      const [row3] = await app.ctx.database.rows<{ auth: MapperAuth }>(
        sql`select parsed->'auth' as auth from messages where project_id = ${p.id} and message_id = ${up3.body.message_id}`,
      );
      expect(row3!.auth).toMatchObject({
        source: "trusted_header",
        spf: { result: "fail" },
        dmarc: { result: "fail", policy: "reject" },
      });
    });

    test("a custom_json route delivers the verdict to its endpoint (SMTP in, webhook out)", async () => {
      const rx = await startReceiver();
      const worker = await startWorker(app.ctx, { concurrency: 2, pollMs: 60_000 });
      try {
        const output = {
          spf: { var: "message.auth.spf.result" },
          dmarc: { var: "message.auth.dmarc.result" },
          policy: { var: "message.auth.dmarc.policy" },
          aligned: { var: "message.auth.dkim.0.aligned" },
          source: { var: "message.auth.source" },
        };
        await seedRoute(app, {
          url: rx.url,
          pipeline: { steps: [{ name: "map.custom_json", args: { version: "v1", output } }] },
          project: { id: p.id, apiKey: p.apiKey },
        });
        const raw = await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey);
        await viaSmtp(raw, "alice@good.test");
        const [req] = await rx.waitForRequests(1);
        expect(JSON.parse(req!.text)).toEqual({
          spf: "pass",
          dmarc: "pass",
          policy: "reject",
          aligned: true,
          source: "smtp",
        });
      } finally {
        await worker.stop();
        await rx.close();
      }
    });

    // Last: it stops the resolver.
    test("with the resolver gone the message is still accepted; what needs DNS reads temperror", async () => {
      await dns.stop();
      app.ctx.dns.clear();
      const raw = await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey);
      const auth = await viaSmtp(raw, "alice@good.test");
      expect(auth.source).toBe("smtp");
      expect(auth.spf.result).toBe("temperror");
      expect(auth.dmarc.result).toBe("temperror");
      for (const sig of auth.dkim) expect(sig.result).not.toBe("pass");
    });
  });
}
