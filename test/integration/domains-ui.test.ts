// The dashboard's Domains page through `app.handle` (forms as a browser posts them), with the MX and TXT
// checks against dnsmasq on loopback: add (the records to set shown), verify (failure shown with what
// was found), catch-all, addresses, deletes; each answer says what happened.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type RunningDnsmasq, startDnsmasq, type Zone } from "../support/dnsmasq.ts";
import { uiCall as call, FORM, signIn } from "../support/ui-session.ts";

const INBOUND = "in.mailhook.test";
const zone: Zone & { txt: Record<string, string> } = {
  domains: ["test"],
  mx: { "shop.test": INBOUND },
  mxRecords: [{ name: "elsewhere.test", exchange: "mx.provider.test", priority: 5 }],
  txt: {},
};

let dns: RunningDnsmasq;
beforeAll(async () => {
  dns = await startDnsmasq(zone);
});
afterAll(async () => {
  await dns?.stop();
});

for (const kind of testDbKinds()) {
  describe(`dashboard: Domains (${kind})`, () => {
    let app: TestApp;
    let who: { cookie: string; csrf: string };
    beforeAll(async () => {
      // The TXT records the other database's run set are not this run's owner's records.
      zone.txt = {};
      await dns.update(zone);
      app = await createTestApp(kind, { env: { INBOUND_DOMAIN: INBOUND, DNS_SERVERS: dns.server } });
      const p = await app.newProject();
      who = await signIn(app, p.apiKey, "/ui/domains");
    }, 60_000);
    afterAll(() => app.close());

    const post = (path: string, fields: Record<string, string> = {}) =>
      call(app, "POST", path, {
        headers: { ...FORM, cookie: who.cookie },
        body: new URLSearchParams({ ...fields, _csrf: who.csrf }),
      });
    /** The id of a domain's row on the page. */
    const idOf = (page: string, domain: string) =>
      [...page.matchAll(/<tr data-domain="([^"]+)">[\s\S]*?\/ui\/domains\/(dom_[0-9a-f]+)\/verify/g)].find(
        (m) => m[1] === domain,
      )?.[2];

    test("the nav links the page; with nothing yet it says so and tells which records to set", async () => {
      const page = await call(app, "GET", "/ui/domains", { headers: { cookie: who.cookie } });
      expect(page.status).toBe(200);
      expect(page.text).toContain('href="/ui/domains" class="active"');
      expect(page.text).toContain("No domains yet.");
      expect(page.text).toContain(`<code>${INBOUND}</code> and the TXT record shown for it`);
      expect(page.text).toContain("Addresses can be added once a domain is verified.");
    });

    test("add, verify (failure says what was found), catch-all, addresses and deletes", async () => {
      const added = await post("/ui/domains", { domain: "shop.test" });
      expect(added.status).toBe(200);
      const txt = added.text.match(/mailhook-verification=[\w-]+/)?.[0] as string;
      expect(txt).toMatch(/^mailhook-verification=[\w-]{32}$/);
      expect(added.text).toContain(
        `Domain shop.test added. Set its MX record to ${INBOUND} and the TXT record _mailhook.shop.test to &quot;${txt}&quot;, then verify it.`,
      );
      expect(added.text).toContain(`MX shop.test → ${INBOUND}`);
      expect(added.text).toContain(`TXT _mailhook.shop.test <span class="break">"${txt}"</span>`);
      expect((await post("/ui/domains", { domain: "elsewhere.test" })).status).toBe(200);
      const taken = await post("/ui/domains", { domain: "SHOP.test" });
      expect(taken.status).toBe(409);
      expect(taken.text).toContain("shop.test is already added");

      const shop = idOf(added.text, "shop.test") as string;
      const elsewhere = idOf(
        (await call(app, "GET", "/ui/domains", { headers: { cookie: who.cookie } })).text,
        "elsewhere.test",
      ) as string;
      expect(shop).toMatch(/^dom_/);
      expect(elsewhere).toMatch(/^dom_/);

      const failed = await post(`/ui/domains/${elsewhere}/verify`);
      expect(failed.status).toBe(422);
      expect(failed.text).toContain(
        `the MX of elsewhere.test points at mx.provider.test (priority 5), not at ${INBOUND}`,
      );
      // The MX alone is not enough: the page names the TXT record still to set.
      const noTxt = await post(`/ui/domains/${shop}/verify`);
      expect(noTxt.status).toBe(422);
      expect(noTxt.text).toContain(
        `_mailhook.shop.test has no TXT record; add one: _mailhook.shop.test TXT &quot;${txt}&quot;`,
      );
      zone.txt["_mailhook.shop.test"] = txt;
      await dns.update(zone);
      const ok = await post(`/ui/domains/${shop}/verify`);
      expect(ok.status).toBe(200);
      expect(ok.text).toContain(
        `shop.test is verified: its MX points at ${INBOUND} and its TXT record proves it is this project&#x27;s.`,
      );
      expect(ok.text).toContain("MX and TXT records found");
      expect(ok.text).toContain('<span class="badge badge-ok">verified</span>');
      // Every action that takes something away asks first.
      expect(ok.text).toContain(
        'data-confirm="Delete shop.test and its addresses? Their mail will be refused."',
      );
      expect(ok.text).toContain('data-confirm="Turn catch-all on for shop.test?');

      const on = await post(`/ui/domains/${shop}/catch-all`, { catch_all: "on" });
      expect(on.text).toContain("Catch-all is on for shop.test.");
      expect(on.text).toContain('<span class="tag">catch-all</span>');
      const off = await post(`/ui/domains/${shop}/catch-all`, { catch_all: "off" });
      expect(off.text).toContain("Catch-all is off for shop.test: only its addresses receive mail.");

      const refused = await post("/ui/addresses", { address: "sales@elsewhere.test" });
      expect(refused.status).toBe(422);
      expect(refused.text).toContain("elsewhere.test is not verified yet");
      const address = await post("/ui/addresses", { address: "Sales@shop.test" });
      expect(address.status).toBe(200);
      expect(address.text).toContain("Address sales@shop.test added.");
      const adr = address.text.match(/\/ui\/addresses\/(adr_[0-9a-f]+)\/delete/)?.[1] as string;
      expect(adr).toMatch(/^adr_/);
      expect(address.text).toContain('data-confirm="Delete sales@shop.test? Its mail will be refused."');

      const deletedAddress = await post(`/ui/addresses/${adr}/delete`);
      expect(deletedAddress.status).toBe(303);
      expect(deletedAddress.headers.get("location")).toBe("/ui/domains?notice=address-deleted");
      const after = await call(app, "GET", "/ui/domains?notice=address-deleted", {
        headers: { cookie: who.cookie },
      });
      expect(after.text).toContain("Address deleted: its mail is refused from now on.");
      expect(after.text).not.toContain("sales@shop.test");

      const deletedDomain = await post(`/ui/domains/${shop}/delete`);
      expect(deletedDomain.headers.get("location")).toBe("/ui/domains?notice=domain-deleted");
      expect((await app.request("GET", "/v1/domains", { apiKey: undefined })).status).toBe(401);
      const gone = await post(`/ui/domains/${shop}/verify`);
      expect(gone.status).toBe(404);
      expect(gone.text).toContain("domain not found");
    });

    test("a form without the CSRF token is refused", async () => {
      const res = await call(app, "POST", "/ui/domains", {
        headers: { ...FORM, cookie: who.cookie },
        body: new URLSearchParams({ domain: "nope.test" }),
      });
      expect(res.status).toBe(403);
    });
  });
}
