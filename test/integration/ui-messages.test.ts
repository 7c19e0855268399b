/**
 * The dashboard's Messages pages through `app.handle` (no browser): paging that keeps the filters,
 * the day range, escaping of the HTML preview into its sandboxed srcdoc with its own CSP, another
 * project's message not found, and Erase refused without the CSRF token.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { addRoute, postMessage } from "../support/ingest.ts";
import { buildMail, eml } from "../support/raw-mail.ts";
import { uiCall as call, FORM, signIn } from "../support/ui-session.ts";

for (const kind of testDbKinds()) {
  describe(`dashboard Messages pages (${kind})`, () => {
    let app: TestApp;
    let p: { id: string; apiKey: string };
    let who: { cookie: string; csrf: string };
    const get = (path: string) => call(app, "GET", path, { headers: { cookie: who.cookie } });
    const rowsOf = (page: string) => [
      ...page.matchAll(/href="\/ui\/messages\/(msg_[^"]+)" class="row-link"/g),
    ];

    beforeAll(async () => {
      app = await createTestApp(kind);
      p = await app.newProject();
      await addRoute(app, p.apiKey);
      for (let i = 0; i < 27; i++)
        await postMessage(app, p.apiKey, buildMail({ subject: `Pager ${i}`, text: `heron number ${i}` }));
      await postMessage(app, p.apiKey, buildMail({ subject: "Other subject", text: "heron elsewhere" }));
      who = await signIn(app, p.apiKey, "/ui/messages");
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    test("pages of 25 that keep the filters, and a day range", async () => {
      const first = await get("/ui/messages?q=heron&subject=Pager");
      expect(first.status).toBe(200);
      expect(rowsOf(first.text)).toHaveLength(25);
      const next = first.text.match(/rel="next" href="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&") ?? "";
      expect(next).toContain("q=heron");
      expect(next).toContain("subject=Pager");
      const second = await get(next);
      expect(rowsOf(second.text)).toHaveLength(2);
      expect(second.text).not.toContain("Other subject");
      const today = new Date().toISOString().slice(0, 10);
      expect(rowsOf((await get(`/ui/messages?since=${today}&until=${today}`)).text)).toHaveLength(25);
      expect(rowsOf((await get("/ui/messages?until=2000-01-01")).text)).toHaveLength(0);
    });

    test("the HTML preview sits escaped in a sandboxed srcdoc with its own CSP", async () => {
      const raw = eml(
        "From: a@example.com",
        "To: b@example.com",
        "Subject: Html one",
        "Message-ID: <html-one@example.com>",
        "MIME-Version: 1.0",
        "Content-Type: text/html; charset=utf-8",
        "",
        `<p title="x">hi</p><script>alert(1)</script>`,
      );
      expect((await postMessage(app, p.apiKey, raw)).status).toBe(202);
      const list = await app.request("GET", "/v1/messages?subject=Html", { apiKey: p.apiKey });
      const page = await get(`/ui/messages/${list.body.items[0].id}`);
      expect(page.status).toBe(200);
      const iframe = page.text.match(/<iframe[^>]*>/)?.[0] ?? "";
      expect(iframe).toContain('sandbox=""');
      expect(iframe).not.toContain("allow-");
      expect(iframe).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
      expect(iframe).toContain("Content-Security-Policy");
      // escaped twice: once inside the srcdoc document, once as the attribute value
      expect(iframe).toContain("default-src &amp;#x27;none&amp;#x27;; style-src");
      expect(page.text).not.toContain("<script>alert(1)");
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    });

    test("another project's message is not found; Erase needs the CSRF token", async () => {
      const other = await app.newProject("other");
      const theirs = buildMail({ subject: "Theirs" });
      expect((await postMessage(app, other.apiKey, theirs)).status).toBe(202);
      const id = (await app.request("GET", "/v1/messages", { apiKey: other.apiKey })).body.items[0].id;
      expect((await get(`/ui/messages/${id}`)).status).toBe(404);
      const mine = (await app.request("GET", "/v1/messages?subject=Pager", { apiKey: p.apiKey })).body
        .items[0].id;
      const refused = await call(app, "POST", `/ui/messages/${mine}/erase`, {
        headers: { ...FORM, cookie: who.cookie },
        body: new URLSearchParams({}),
      });
      expect(refused.status).toBe(403);
      expect((await get(`/ui/messages/${mine}`)).status).toBe(200);
      const erased = await call(app, "POST", `/ui/messages/${mine}/erase`, {
        headers: { ...FORM, cookie: who.cookie },
        body: new URLSearchParams({ _csrf: who.csrf }),
      });
      expect(erased.status).toBe(303);
      expect(erased.headers.get("location")).toBe("/ui/messages?notice=message-erased");
      expect((await get(`/ui/messages/${mine}`)).status).toBe(404);
      expect((await get("/ui/messages?notice=message-erased")).text).toContain("Message erased");
    });
  });
}
