// A project's own domains and addresses end to end: the API, the MX check against a real DNS server
// on loopback (dnsmasq), and the SMTP listener accepting or refusing recipients at those domains.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { projectByOwnAddress } from "../../services/resources/domains.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { freePort, type RunningDnsmasq, startDnsmasq } from "../support/dnsmasq.ts";
import { addRoute } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { RawSmtp } from "../support/smtp.ts";

const INBOUND = "in.mailhook.test";

let dns: RunningDnsmasq;
beforeAll(async () => {
  dns = await startDnsmasq({
    domains: ["test"],
    mx: { "good.test": INBOUND, "alias.test": INBOUND, "gone.test": INBOUND, "xn--bcher-kva.test": INBOUND },
    mxRecords: [
      { name: "catch.test", exchange: INBOUND, priority: 10 },
      { name: "catch.test", exchange: "backup.example.test", priority: 20 },
      { name: "wrong.test", exchange: "mx1.elsewhere.test", priority: 10 },
      { name: "wrong.test", exchange: "mx2.elsewhere.test", priority: 20 },
    ],
  });
});
afterAll(async () => {
  await dns?.stop();
});

for (const kind of testDbKinds()) {
  describe(`own domains and addresses (${kind})`, () => {
    let app: TestApp;
    let smtp: RunningSmtp;
    let p: { id: string; apiKey: string; inbound: string };
    let q: { id: string; apiKey: string; inbound: string };
    beforeAll(async () => {
      app = await createTestApp(kind, { env: { INBOUND_DOMAIN: INBOUND, DNS_SERVERS: dns.server } });
      smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
      p = await app.newProject("owner");
      q = await app.newProject("other");
      await addRoute(app, p.apiKey);
    }, 60_000);
    afterAll(async () => {
      await smtp?.close();
      await app?.close();
    });

    const call = (key: string, method: string, path: string, body?: unknown) =>
      app.request(method, path, { apiKey: key, ...(body !== undefined ? { body } : {}) });

    /** Adds and verifies a domain of `p`; returns its id. */
    async function verifiedDomain(domain: string, catchAll = false): Promise<string> {
      const created = await call(p.apiKey, "POST", "/v1/domains", { domain, catch_all: catchAll });
      expect(created.status).toBe(201);
      const verified = await call(p.apiKey, "POST", `/v1/domains/${created.body.id}/verify`);
      expect(verified.status).toBe(200);
      expect(verified.body.verified).toBe(true);
      return created.body.id;
    }

    /** One SMTP transaction; the RCPT reply codes and, when every recipient was accepted, DATA's. */
    async function send(rcpts: string[]): Promise<{ rcpt: number[]; data: string | null }> {
      const c = await RawSmtp.connect(smtp.port);
      const replies = await c.envelope("sender@example.org", rcpts);
      const rcpt = replies.map((r) => r.code);
      const data = rcpt.some((code) => code === 250) ? (await c.data(buildMail())).raw : null;
      await c.quit();
      return { rcpt, data };
    }

    async function lastEnvelope(projectId: string): Promise<any> {
      const [row] = await app.ctx.database.rows<any>(
        sql`select envelope from messages where project_id = ${projectId} order by received_at desc limit 1`,
      );
      return row?.envelope;
    }

    test("adding a domain answers the MX record to set; a taken or malformed domain is refused", async () => {
      const r = await call(p.apiKey, "POST", "/v1/domains", { domain: "Good.Test." });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        domain: "good.test",
        catch_all: false,
        verified: false,
        verified_at: null,
        last_check: null,
        dns: [{ type: "MX", name: "good.test", value: INBOUND }],
      });
      expect(r.body.id).toMatch(/^dom_/);
      expect((await call(p.apiKey, "GET", `/v1/domains/${r.body.id}`)).body.domain).toBe("good.test");
      expect((await call(p.apiKey, "GET", "/v1/domains")).body.items.map((d: any) => d.id)).toContain(
        r.body.id,
      );
      // Another project (or the same one again) cannot take it.
      const taken = await call(q.apiKey, "POST", "/v1/domains", { domain: "GOOD.test" });
      expect(taken.status).toBe(409);
      expect(taken.body.error.code).toBe("domains.taken");
      for (const domain of ["not a domain", "localhost", "1.2.3.4", INBOUND, `x.${INBOUND}`]) {
        const bad = await call(p.apiKey, "POST", "/v1/domains", { domain });
        expect(bad.status).toBe(422);
        expect(bad.body.error.code).toBe("domains.invalid");
      }
      // Other projects do not see it.
      expect((await call(q.apiKey, "GET", `/v1/domains/${r.body.id}`)).status).toBe(404);
    });

    test("verify passes when the MX points at INBOUND_DOMAIN, and says what it found when it does not", async () => {
      const wrong = await call(p.apiKey, "POST", "/v1/domains", { domain: "wrong.test" });
      const failed = await call(p.apiKey, "POST", `/v1/domains/${wrong.body.id}/verify`);
      expect(failed.status).toBe(422);
      expect(failed.body.error.code).toBe("domains.mx_mismatch");
      expect(failed.body.error.message).toBe(
        `the MX of wrong.test points at mx1.elsewhere.test (priority 10), mx2.elsewhere.test (priority 20), not at ${INBOUND}`,
      );
      const after = await call(p.apiKey, "GET", `/v1/domains/${wrong.body.id}`);
      expect(after.body.verified).toBe(false);
      expect(after.body.last_check).toMatchObject({
        ok: false,
        found: [
          { exchange: "mx1.elsewhere.test", priority: 10 },
          { exchange: "mx2.elsewhere.test", priority: 20 },
        ],
      });

      const none = await call(p.apiKey, "POST", "/v1/domains", { domain: "nothing-here.test" });
      const missing = await call(p.apiKey, "POST", `/v1/domains/${none.body.id}/verify`);
      expect(missing.status).toBe(422);
      expect(missing.body.error.message).toBe(
        `nothing-here.test has no MX record; add one: nothing-here.test MX 10 ${INBOUND}`,
      );

      const good = (await call(p.apiKey, "GET", "/v1/domains")).body.items.find(
        (d: any) => d.domain === "good.test",
      );
      const ok = await call(p.apiKey, "POST", `/v1/domains/${good.id}/verify`);
      expect(ok.status).toBe(200);
      expect(ok.body.verified).toBe(true);
      expect(ok.body.verified_at).not.toBeNull();
      expect(ok.body.last_check).toMatchObject({
        ok: true,
        found: [{ exchange: INBOUND, priority: 10 }],
        problem: null,
      });
    });

    test("addresses only at a verified domain of the project", async () => {
      const unverified = await call(p.apiKey, "POST", "/v1/addresses", { address: "sales@wrong.test" });
      expect(unverified.status).toBe(422);
      expect(unverified.body.error.code).toBe("addresses.domain_not_verified");
      expect(unverified.body.error.message).toContain("not verified yet");
      // good.test is p's: q may not add addresses there.
      const foreign = await call(q.apiKey, "POST", "/v1/addresses", { address: "sales@good.test" });
      expect(foreign.status).toBe(422);
      expect(foreign.body.error.code).toBe("addresses.domain_not_verified");
      expect(foreign.body.error.message).toContain("not a domain of this project");
      for (const address of ["no-at-sign", "a+b@good.test", "a b@good.test", `${"x".repeat(65)}@good.test`]) {
        const bad = await call(p.apiKey, "POST", "/v1/addresses", { address });
        expect(bad.status).toBe(422);
        expect(bad.body.error.code).toBe("addresses.invalid");
      }
      const created = await call(p.apiKey, "POST", "/v1/addresses", { address: "Help@GOOD.test" });
      expect(created.status).toBe(201);
      expect(created.body).toMatchObject({ address: "help@good.test" });
      expect(created.body.id).toMatch(/^adr_/);
      const again = await call(p.apiKey, "POST", "/v1/addresses", { address: "help@good.test" });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe("addresses.taken");
      expect((await call(p.apiKey, "GET", `/v1/addresses/${created.body.id}`)).body.address).toBe(
        "help@good.test",
      );
      expect((await call(p.apiKey, "GET", "/v1/addresses")).body.items.map((a: any) => a.address)).toContain(
        "help@good.test",
      );
      expect((await call(q.apiKey, "GET", `/v1/addresses/${created.body.id}`)).status).toBe(404);
    });

    test("SMTP delivers to an address (any case, with a +tag kept in the stored envelope)", async () => {
      await verifiedDomain("alias.test");
      expect((await call(p.apiKey, "POST", "/v1/addresses", { address: "orders@alias.test" })).status).toBe(
        201,
      );
      const plain = await send(["orders@alias.test"]);
      expect(plain.rcpt).toEqual([250]);
      expect(plain.data).toMatch(/^250 2\.6\.0 /);
      const stored = await lastEnvelope(p.id);
      expect(stored).toMatchObject({ mail_from: "sender@example.org", rcpt_to: ["orders@alias.test"] });
      expect(stored).not.toHaveProperty("tag");

      const tagged = await send(["Orders+Invoice-42@ALIAS.test"]);
      expect(tagged.rcpt).toEqual([250]);
      expect(tagged.data).toMatch(/^250 2\.6\.0 /);
      expect(await lastEnvelope(p.id)).toMatchObject({
        mail_from: "sender@example.org",
        rcpt_to: ["Orders+Invoice-42@ALIAS.test"],
        tag: "Invoice-42",
      });
      // The random inbound address keeps working beside them, its +tag kept too.
      const inbound = await send([p.inbound.replace("@", "+news@")]);
      expect(inbound.rcpt).toEqual([250]);
      expect((await lastEnvelope(p.id)).tag).toBe("news");
      // An internationalised domain is matched in its punycode form.
      await verifiedDomain("bücher.test");
      expect((await call(p.apiKey, "POST", "/v1/addresses", { address: "info@bücher.test" })).status).toBe(
        201,
      );
      expect((await send(["info+x@xn--bcher-kva.test"])).rcpt).toEqual([250]);
      expect(await projectByOwnAddress(app.ctx, "Info@Bücher.test")).toEqual({ id: p.id });
      // Unknown local parts at a domain that is not catch-all are refused as before.
      expect((await send(["nobody@alias.test"])).rcpt).toEqual([550]);
    });

    test("a catch-all domain takes any local part and its +tags; turning catch-all off stops that at once", async () => {
      const id = await verifiedDomain("catch.test", true);
      const any = await send(["whatever.you.like+t1@catch.test"]);
      expect(any.rcpt).toEqual([250]);
      expect(any.data).toMatch(/^250 2\.6\.0 /);
      expect(await lastEnvelope(p.id)).toMatchObject({
        rcpt_to: ["whatever.you.like+t1@catch.test"],
        tag: "t1",
      });
      const off = await call(p.apiKey, "PATCH", `/v1/domains/${id}`, { catch_all: false });
      expect(off.status).toBe(200);
      expect(off.body.catch_all).toBe(false);
      expect((await send(["whatever.you.like+t1@catch.test"])).rcpt).toEqual([550]);
    });

    test("a domain that is not verified takes no mail, even catch-all", async () => {
      const r = await call(p.apiKey, "POST", "/v1/domains", { domain: "pending.test", catch_all: true });
      expect(r.status).toBe(201);
      expect((await send(["anyone@pending.test"])).rcpt).toEqual([550]);
      // wrong.test failed its check: also refused.
      expect((await send(["sales@wrong.test"])).rcpt).toEqual([550]);
    });

    test("a resolver that does not answer is a 502 domains.dns_failed, and the domain stays as it was", async () => {
      const d = await call(p.apiKey, "POST", "/v1/domains", { domain: "dead-resolver.test" });
      // DNS_SERVERS is read at each lookup: point it at a loopback port nothing listens on.
      const servers = app.ctx.config.dnsServers;
      app.ctx.config.dnsServers = [{ host: "127.0.0.1", port: await freePort() }];
      try {
        const r = await call(p.apiKey, "POST", `/v1/domains/${d.body.id}/verify`);
        expect(r.status).toBe(502);
        expect(r.body.error.code).toBe("domains.dns_failed");
        expect(r.body.error.message).toMatch(/^the MX lookup of dead-resolver\.test failed \(E[A-Z]+\)/);
        // DNS_SERVERS=none: no lookup at all, and the answer says so.
        app.ctx.config.dnsServers = [];
        const off = await call(p.apiKey, "POST", `/v1/domains/${d.body.id}/verify`);
        expect(off.status).toBe(502);
        expect(off.body.error.message).toBe(
          "DNS lookups are turned off (DNS_SERVERS=none): the domain cannot be verified on this installation",
        );
      } finally {
        app.ctx.config.dnsServers = servers;
      }
      const after = await call(p.apiKey, "GET", `/v1/domains/${d.body.id}`);
      expect(after.body.verified).toBe(false);
      expect(after.body.last_check.problem).toContain("cannot be verified");
    });

    test("deleting an address or a domain stops delivery at once", async () => {
      const domainId = await verifiedDomain("gone.test");
      const adr = await call(p.apiKey, "POST", "/v1/addresses", { address: "temp@gone.test" });
      expect(adr.status).toBe(201);
      const keep = await call(p.apiKey, "POST", "/v1/addresses", { address: "keep@gone.test" });
      // Cached by the listener's recipient directory after these.
      expect((await send(["temp@gone.test"])).rcpt).toEqual([250]);
      expect((await send(["keep@gone.test"])).rcpt).toEqual([250]);
      expect((await call(p.apiKey, "DELETE", `/v1/addresses/${adr.body.id}`)).status).toBe(204);
      expect((await call(p.apiKey, "GET", `/v1/addresses/${adr.body.id}`)).status).toBe(404);
      expect((await send(["temp@gone.test"])).rcpt).toEqual([550]);
      expect((await send(["keep@gone.test"])).rcpt).toEqual([250]);
      expect((await call(p.apiKey, "DELETE", `/v1/domains/${domainId}`)).status).toBe(204);
      expect((await send(["keep@gone.test"])).rcpt).toEqual([550]);
      // Its addresses went with it.
      expect((await call(p.apiKey, "GET", `/v1/addresses/${keep.body.id}`)).status).toBe(404);
      expect((await call(p.apiKey, "DELETE", `/v1/domains/${domainId}`)).status).toBe(404);
    });
  });
}
