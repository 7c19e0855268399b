// A project's own domains and addresses end to end: the API, the MX and ownership (TXT) checks against
// a real DNS server on loopback (dnsmasq), who owns a domain several projects claimed, and the SMTP
// listener accepting or refusing recipients at those domains.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { type RunningSmtp, startSmtpServer } from "../../services/ingest/smtp.ts";
import { projectByOwnAddress } from "../../services/resources/domains.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { freePort, type RunningDnsmasq, startDnsmasq, type Zone } from "../support/dnsmasq.ts";
import { addRoute } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { RawSmtp } from "../support/smtp.ts";

const INBOUND = "in.mailhook.test";

/** What dnsmasq serves; the TXT records are set by the tests as the domains' owners would. */
const zone: Zone & { txt: Record<string, string[]> } = {
  domains: ["test"],
  mx: {
    "good.test": INBOUND,
    "alias.test": INBOUND,
    "gone.test": INBOUND,
    "xn--bcher-kva.test": INBOUND,
    "acme.test": INBOUND,
    "both.test": INBOUND,
  },
  mxRecords: [
    { name: "catch.test", exchange: INBOUND, priority: 10 },
    { name: "catch.test", exchange: "backup.example.test", priority: 20 },
    { name: "wrong.test", exchange: "mx1.elsewhere.test", priority: 10 },
    { name: "wrong.test", exchange: "mx2.elsewhere.test", priority: 20 },
  ],
  txt: {},
};

/** Sets the TXT values of `name` (replacing those it had) and restarts dnsmasq with them. */
async function setTxt(name: string, values: string[]): Promise<void> {
  zone.txt[name] = values;
  await dns.update(zone);
}

/** A domain as the API answers it: its TXT record to set. */
function txtRecord(domain: { dns: { type: string; name: string; value: string }[] }): {
  name: string;
  value: string;
} {
  const r = domain.dns.find((x) => x.type === "TXT");
  if (!r) throw new Error(`no TXT record in ${JSON.stringify(domain.dns)}`);
  return r;
}

let dns: RunningDnsmasq;
beforeAll(async () => {
  dns = await startDnsmasq(zone);
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
      // The TXT records the other database's run set are not this run's owners' records.
      zone.txt = {};
      await dns.update(zone);
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

    /** Adds and verifies a domain of `p` (its TXT record set first); returns its id. */
    async function verifiedDomain(domain: string, catchAll = false): Promise<string> {
      const created = await call(p.apiKey, "POST", "/v1/domains", { domain, catch_all: catchAll });
      expect(created.status).toBe(201);
      const txt = txtRecord(created.body);
      await setTxt(txt.name, [txt.value]);
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

    test("adding a domain answers the MX and TXT records to set; a repeated or malformed domain is refused", async () => {
      const r = await call(p.apiKey, "POST", "/v1/domains", { domain: "Good.Test." });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({
        domain: "good.test",
        catch_all: false,
        verified: false,
        verified_at: null,
        last_check: null,
        dns: [
          { type: "MX", name: "good.test", value: INBOUND },
          {
            type: "TXT",
            name: "_mailhook.good.test",
            value: expect.stringMatching(/^mailhook-verification=[\w-]{32}$/),
          },
        ],
      });
      expect(r.body.id).toMatch(/^dom_/);
      expect((await call(p.apiKey, "GET", `/v1/domains/${r.body.id}`)).body.domain).toBe("good.test");
      expect((await call(p.apiKey, "GET", "/v1/domains")).body.items.map((d: any) => d.id)).toContain(
        r.body.id,
      );
      // The same project cannot add it twice.
      const again = await call(p.apiKey, "POST", "/v1/domains", { domain: "GOOD.test" });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe("domains.taken");
      expect(again.body.error.message).toBe("good.test is already added to this project");
      for (const domain of ["not a domain", "localhost", "1.2.3.4", INBOUND, `x.${INBOUND}`]) {
        const bad = await call(p.apiKey, "POST", "/v1/domains", { domain });
        expect(bad.status).toBe(422);
        expect(bad.body.error.code).toBe("domains.invalid");
      }
      // Other projects do not see it.
      expect((await call(q.apiKey, "GET", `/v1/domains/${r.body.id}`)).status).toBe(404);
    });

    test("verify passes when the MX points at INBOUND_DOMAIN and the TXT record is set, and says what it found when not", async () => {
      const wrong = await call(p.apiKey, "POST", "/v1/domains", { domain: "wrong.test" });
      const wrongTxt = txtRecord(wrong.body);
      const failed = await call(p.apiKey, "POST", `/v1/domains/${wrong.body.id}/verify`);
      expect(failed.status).toBe(422);
      expect(failed.body.error.code).toBe("domains.mx_mismatch");
      // Every record still to set is named.
      expect(failed.body.error.message).toBe(
        `the MX of wrong.test points at mx1.elsewhere.test (priority 10), mx2.elsewhere.test (priority 20), not at ${INBOUND}; ` +
          `_mailhook.wrong.test has no TXT record; add one: _mailhook.wrong.test TXT "${wrongTxt.value}"`,
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
      expect(missing.body.error.message).toStartWith(
        `nothing-here.test has no MX record; add one: nothing-here.test MX 10 ${INBOUND}; `,
      );

      // The MX alone proves nothing: every customer's MX points at the same host.
      const good = (await call(p.apiKey, "GET", "/v1/domains")).body.items.find(
        (d: any) => d.domain === "good.test",
      );
      const goodTxt = txtRecord(good);
      const noTxt = await call(p.apiKey, "POST", `/v1/domains/${good.id}/verify`);
      expect(noTxt.status).toBe(422);
      expect(noTxt.body.error.code).toBe("domains.txt_missing");
      expect(noTxt.body.error.message).toBe(
        `_mailhook.good.test has no TXT record; add one: _mailhook.good.test TXT "${goodTxt.value}"`,
      );
      expect((await call(p.apiKey, "GET", `/v1/domains/${good.id}`)).body).toMatchObject({
        verified: false,
        last_check: { ok: false, found: [{ exchange: INBOUND, priority: 10 }], found_txt: [] },
      });
      // Some other TXT value there: named in the answer.
      await setTxt(goodTxt.name, ["mailhook-verification=someone-else", "v=spf1 -all"]);
      const otherTxt = await call(p.apiKey, "POST", `/v1/domains/${good.id}/verify`);
      expect(otherTxt.status).toBe(422);
      expect(otherTxt.body.error.code).toBe("domains.txt_missing");
      expect(otherTxt.body.error.message).toBe(
        `no TXT record of _mailhook.good.test is "${goodTxt.value}" (found "mailhook-verification=someone-else", "v=spf1 -all"); ` +
          `add it: _mailhook.good.test TXT "${goodTxt.value}"`,
      );
      expect(otherTxt.body.error.details).toEqual([
        { path: "/mx/0", message: `${INBOUND} (priority 10)` },
        { path: "/txt/0", message: "mailhook-verification=someone-else" },
        { path: "/txt/1", message: "v=spf1 -all" },
      ]);

      await setTxt(goodTxt.name, ["v=spf1 -all", goodTxt.value]);
      const ok = await call(p.apiKey, "POST", `/v1/domains/${good.id}/verify`);
      expect(ok.status).toBe(200);
      expect(ok.body.verified).toBe(true);
      expect(ok.body.verified_at).not.toBeNull();
      expect(ok.body.last_check).toMatchObject({
        ok: true,
        found: [{ exchange: INBOUND, priority: 10 }],
        found_txt: [goodTxt.value, "v=spf1 -all"].sort(),
        problem: null,
      });
    });

    test("a squatter's claim blocks nobody: the owner adds and verifies, the squatter's verify is refused", async () => {
      // q claims acme.test first; its MX points here, as every customer's does.
      const squat = await call(q.apiKey, "POST", "/v1/domains", { domain: "acme.test", catch_all: true });
      expect(squat.status).toBe(201);
      // The real owner can still add it: an unverified claim takes nothing from anyone.
      const own = await call(p.apiKey, "POST", "/v1/domains", { domain: "acme.test", catch_all: true });
      expect(own.status).toBe(201);
      expect(txtRecord(own.body).value).not.toBe(txtRecord(squat.body).value);
      // Nobody receives mail there yet.
      expect((await send(["anyone@acme.test"])).rcpt).toEqual([550]);

      // The owner sets its own TXT record: the squatter's verify fails on it.
      await setTxt("_mailhook.acme.test", [txtRecord(own.body).value]);
      const early = await call(q.apiKey, "POST", `/v1/domains/${squat.body.id}/verify`);
      expect(early.status).toBe(422);
      expect(early.body.error.code).toBe("domains.txt_missing");
      expect(early.body.error.message).toContain(`_mailhook.acme.test TXT "${txtRecord(squat.body).value}"`);

      const verified = await call(p.apiKey, "POST", `/v1/domains/${own.body.id}/verify`);
      expect(verified.status).toBe(200);
      expect(verified.body.verified).toBe(true);

      // Now owned: the squatter's verify is refused as taken, whatever DNS says, and it stays unverified.
      const late = await call(q.apiKey, "POST", `/v1/domains/${squat.body.id}/verify`);
      expect(late.status).toBe(409);
      expect(late.body.error.code).toBe("domains.taken");
      expect(late.body.error.message).toStartWith("acme.test is already verified by another project");
      const squatAfter = await call(q.apiKey, "GET", `/v1/domains/${squat.body.id}`);
      expect(squatAfter.body).toMatchObject({ verified: false, last_check: { ok: false } });
      expect(squatAfter.body.last_check.problem).toStartWith(
        "acme.test is already verified by another project",
      );
      // And no other project can add it any more.
      const third = await app.newProject("third");
      const blocked = await call(third.apiKey, "POST", "/v1/domains", { domain: "ACME.test" });
      expect(blocked.status).toBe(409);
      expect(blocked.body.error.code).toBe("domains.taken");
      // Addresses at it only for the owner.
      const foreign = await call(q.apiKey, "POST", "/v1/addresses", { address: "sales@acme.test" });
      expect(foreign.status).toBe(422);
      expect(foreign.body.error.code).toBe("addresses.domain_not_verified");
      expect((await call(p.apiKey, "POST", "/v1/addresses", { address: "sales@acme.test" })).status).toBe(
        201,
      );

      // Mail at the domain reaches the owner only, though both claims are catch-all.
      expect((await send(["anyone@acme.test"])).rcpt).toEqual([250]);
      expect(await lastEnvelope(p.id)).toMatchObject({ rcpt_to: ["anyone@acme.test"] });
      expect(await lastEnvelope(q.id)).toBeUndefined();
      expect(await projectByOwnAddress(app.ctx, "x@acme.test")).toEqual({ id: p.id });
    });

    test("when two claims both prove ownership, the first to verify owns the domain until it lets go", async () => {
      const first = await call(q.apiKey, "POST", "/v1/domains", { domain: "both.test" });
      const second = await call(p.apiKey, "POST", "/v1/domains", { domain: "both.test" });
      expect([first.status, second.status]).toEqual([201, 201]);
      await setTxt("_mailhook.both.test", [txtRecord(first.body).value, txtRecord(second.body).value]);
      expect((await call(q.apiKey, "POST", `/v1/domains/${first.body.id}/verify`)).status).toBe(200);
      const refused = await call(p.apiKey, "POST", `/v1/domains/${second.body.id}/verify`);
      expect(refused.status).toBe(409);
      expect(refused.body.error.code).toBe("domains.taken");
      // The owner re-checks its own domain freely.
      expect((await call(q.apiKey, "POST", `/v1/domains/${first.body.id}/verify`)).status).toBe(200);
      // Once the owner deletes it, the other claim can verify.
      expect((await call(q.apiKey, "DELETE", `/v1/domains/${first.body.id}`)).status).toBe(204);
      const now = await call(p.apiKey, "POST", `/v1/domains/${second.body.id}/verify`);
      expect(now.status).toBe(200);
      expect(now.body.verified).toBe(true);
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

const MIGRATIONS = join(import.meta.dir, "../../services/db/migrations");
/** Found by its name, whatever number it is given among the migrations. */
const OWNERSHIP_MIGRATION = join(
  MIGRATIONS,
  readdirSync(MIGRATIONS).find((f) => f.endsWith("_domain_ownership.sql")) ?? "domain_ownership.sql",
);

for (const kind of testDbKinds()) {
  describe(`domain ownership migration (${kind})`, () => {
    let app: TestApp;
    beforeAll(async () => {
      app = await createTestApp(kind, { env: { INBOUND_DOMAIN: INBOUND, DNS_SERVERS: dns.server } });
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    test("a domain verified before ownership was checked keeps its mail and gets a token of its own", async () => {
      const p = await app.newProject("before");
      const run = (text: string) => app.ctx.database.rows(sql.raw(text));
      // The table as it was: one row per domain, no token.
      await run(`drop index "domains_project_domain_key"`);
      await run(`drop index "domains_verified_domain_key"`);
      await run(`alter table "domains" drop column "verification_token"`);
      await run(`create unique index "domains_domain_key" on "domains" ("domain")`);
      await run(`create index "domains_project_idx" on "domains" ("project_id")`);
      await app.ctx.database.rows(sql`insert into domains (id, project_id, domain, catch_all, verified, verified_at)
        values ('dom_legacy1', ${p.id}, 'legacy.test', true, true, now()),
               ('dom_legacy2', ${p.id}, 'pending-legacy.test', false, false, null)`);

      for (const statement of readFileSync(OWNERSHIP_MIGRATION, "utf8").split("--> statement-breakpoint"))
        await run(statement);

      const rows = await app.ctx.database.rows<{ id: string; verified: boolean; verification_token: string }>(
        sql`select id, verified, verification_token from domains order by id`,
      );
      expect(rows).toEqual([
        { id: "dom_legacy1", verified: true, verification_token: expect.stringMatching(/^[0-9a-f]{32}$/) },
        { id: "dom_legacy2", verified: false, verification_token: expect.stringMatching(/^[0-9a-f]{32}$/) },
      ]);
      expect(rows[0]?.verification_token).not.toBe(rows[1]?.verification_token);
      // Still verified, still receiving, and the API shows the TXT record to set before its next check.
      expect(await projectByOwnAddress(app.ctx, "anyone@legacy.test")).toEqual({ id: p.id });
      const listed = await app.request("GET", "/v1/domains/dom_legacy1", { apiKey: p.apiKey });
      expect(listed.body).toMatchObject({
        verified: true,
        dns: [
          { type: "MX", name: "legacy.test", value: INBOUND },
          {
            type: "TXT",
            name: "_mailhook.legacy.test",
            value: `mailhook-verification=${rows[0]?.verification_token}`,
          },
        ],
      });
      // Its ownership holds against other projects; the unverified one is open to claims.
      const other = await app.newProject("after");
      const add = (domain: string) =>
        app.request("POST", "/v1/domains", { apiKey: other.apiKey, body: { domain } });
      expect((await add("legacy.test")).status).toBe(409);
      expect((await add("pending-legacy.test")).status).toBe(201);
    });
  });
}
