/**
 * The dashboard's routes through `app.handle` (no browser): sign-in and its cookie, redirects to
 * sign-in, disabled keys, CSRF on every POST, escaping of user data, and the forms' error paths.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { sweepRetention } from "../../services/attachments/retention.ts";
import { STEP_NAMES } from "../../services/routing/steps/index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { uiCall as call, cookieOf, csrfOf, FORM, signIn } from "../support/ui-session.ts";

interface Browserish {
  cookie: string;
  csrf: string;
}

function post(app: TestApp, who: Browserish, path: string, fields: Record<string, string>, token = who.csrf) {
  return call(app, "POST", path, {
    headers: { ...FORM, cookie: who.cookie },
    body: new URLSearchParams({ ...fields, ...(token ? { _csrf: token } : {}) }),
  });
}

for (const kind of testDbKinds()) {
  describe(`dashboard routes (${kind})`, () => {
    let app: TestApp;
    let project: { id: string; apiKey: string };
    let who: Browserish & { setCookie: string };
    let endpointId: string;
    let kid: string;

    beforeAll(async () => {
      app = await createTestApp(kind);
      project = await app.newProject("<b>Acme</b>");
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: project.apiKey,
        body: { url: "http://127.0.0.1:9/hook" },
      });
      endpointId = ep.body.id;
      kid = (await app.request("POST", "/v1/signing-secrets", { apiKey: project.apiKey })).body.kid;
      who = await signIn(app, project.apiKey);
    }, 60_000);
    afterAll(() => app.close());

    test("sign-in sets an httpOnly, SameSite=Strict cookie on /ui that does not hold the raw key", () => {
      expect(who.setCookie).toMatch(
        /^mh_session=v1\.[\w-]+\.[\w-]+; Path=\/ui; Max-Age=43200; HttpOnly; SameSite=Strict$/,
      );
      expect(who.setCookie).not.toContain(project.apiKey);
    });

    test("with an https PUBLIC_BASE_URL the cookie is Secure", async () => {
      const secure = await createTestApp(kind, { env: { PUBLIC_BASE_URL: "https://mail.example.com" } });
      try {
        const p = await secure.newProject();
        const s = await signIn(secure, p.apiKey);
        expect(s.setCookie).toEndWith("; HttpOnly; SameSite=Strict; Secure");
      } finally {
        await secure.close();
      }
    });

    test.each([
      "/ui",
      "/ui/events",
      "/ui/events/00000000-0000-4000-8000-000000000000",
      "/ui/routes",
      "/ui/routes/new",
      "/ui/endpoints",
      "/ui/signing-secrets",
      "/ui/playground",
    ])("GET %s without a session ends at the sign-in page (303)", async (path) => {
      let res = await call(app, "GET", path);
      if (path === "/ui") res = await call(app, "GET", res.headers.get("location") ?? "");
      expect(res.status, res.text).toBe(303);
      expect(res.headers.get("location")).toBe("/ui/sign-in");
    });

    test("a POST without a session is not carried out", async () => {
      const res = await call(app, "POST", "/ui/signing-secrets", { headers: FORM, body: "" });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe("/ui/sign-in");
    });

    test("a status poll without a session gets 401 JSON, not a redirect", async () => {
      const res = await call(app, "GET", "/ui/events/00000000-0000-4000-8000-000000000000/status.json");
      expect(res.status).toBe(401);
      expect(JSON.parse(res.text).error.code).toBe("auth.missing_api_key");
    });

    test("a wrong key is refused on the form with a message and no session", async () => {
      const form = await call(app, "GET", "/ui/sign-in");
      const anon = cookieOf(form.headers.get("set-cookie"));
      const res = await call(app, "POST", "/ui/sign-in", {
        headers: { ...FORM, cookie: anon },
        body: new URLSearchParams({ _csrf: csrfOf(form.text), api_key: "mh_nope" }),
      });
      expect(res.status).toBe(401);
      expect(res.text).toContain("That API key is wrong or disabled.");
      expect(res.headers.get("set-cookie")).toBeNull();
    });

    test("the sign-in form itself needs its CSRF token (no login CSRF)", async () => {
      const res = await call(app, "POST", "/ui/sign-in", {
        headers: FORM,
        body: new URLSearchParams({ api_key: project.apiKey }),
      });
      expect(res.status).toBe(403);
      expect(res.headers.get("set-cookie")).toBeNull();
    });

    test("a disabled key's session stops working at once", async () => {
      const second = await app.request("POST", "/v1/project/api-keys", {
        apiKey: project.apiKey,
        body: { name: "laptop" },
      });
      const s = await signIn(app, second.body.secret);
      expect((await call(app, "GET", "/ui/events", { headers: { cookie: s.cookie } })).status).toBe(200);
      const off = await app.request("DELETE", `/v1/project/api-keys/${second.body.id}`, {
        apiKey: project.apiKey,
      });
      expect(off.status, off.text).toBe(200);
      const res = await call(app, "GET", "/ui/events", { headers: { cookie: s.cookie } });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe("/ui/sign-in?notice=signed-out");
      expect(res.headers.get("set-cookie")).toContain("Max-Age=0");
    });

    test("pages carry a strict CSP and no-store, and escape user data", async () => {
      await app.request("POST", "/v1/routes", {
        apiKey: project.apiKey,
        body: { name: '<script>alert("r")</script>', endpoint_id: endpointId, signing_secret_kid: kid },
      });
      const res = await call(app, "GET", "/ui/routes", { headers: { cookie: who.cookie } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(res.headers.get("cache-control")).toBe("no-store");
      expect(res.text).toContain("&lt;script&gt;alert(&quot;r&quot;)&lt;/script&gt;");
      expect(res.text).not.toContain('<script>alert("r")');
      expect(res.text).toContain("&lt;b&gt;Acme&lt;/b&gt;"); // the project name in the nav
    });

    test.each([
      ["no token", ""],
      ["a wrong token", "forged"],
    ])("a form POST with %s is refused (403) and changes nothing", async (_name, token) => {
      const before = await app.request("GET", "/v1/signing-secrets", { apiKey: project.apiKey });
      const res = await post(app, who, "/ui/signing-secrets", {}, token);
      expect(res.status).toBe(403);
      const after = await app.request("GET", "/v1/signing-secrets", { apiKey: project.apiKey });
      expect(after.body.items).toHaveLength(before.body.items.length);
    });

    test("a POST with the right token but another site's Origin is refused", async () => {
      const res = await call(app, "POST", "/ui/signing-secrets", {
        headers: { ...FORM, cookie: who.cookie, origin: "https://evil.example", host: "localhost" },
        body: new URLSearchParams({ _csrf: who.csrf }),
      });
      expect(res.status).toBe(403);
    });

    test("a new signing secret is shown once, on the page answering the POST", async () => {
      const res = await post(app, who, "/ui/signing-secrets", {});
      expect(res.status).toBe(201);
      const secret = res.text.match(/id="secret-value">(whsec_[^<]+)</)?.[1];
      expect(secret).toBeDefined();
      const list = await call(app, "GET", "/ui/signing-secrets", { headers: { cookie: who.cookie } });
      expect(list.text).not.toContain(secret as string);
    });

    test("an invalid route pipeline re-renders the form with the error at its JSON-pointer path", async () => {
      const pipeline = JSON.stringify({
        steps: [
          { name: "map.custom_json", args: { version: "v1", output: { x: { "string.reverse": "a" } } } },
        ],
      });
      const res = await post(app, who, "/ui/routes", {
        name: "bad",
        endpoint_id: endpointId,
        signing_secret_kid: kid,
        rule: "{}",
        pipeline,
      });
      expect(res.status, res.text).toBe(422);
      expect(res.text).toContain("/pipeline/steps/0/args/output/x");
      expect(res.text).toMatch(/id="pipeline"[^>]*aria-invalid="true"/);
    });

    test.each([
      ["rule", "{not json", "/rule"],
      ["rule", '{"colour": "red"}', "/rule/colour"],
      ["pipeline", "[", "/pipeline"],
    ])("a bad %s (%p) is reported at %p", async (fieldName, value, path) => {
      const res = await post(app, who, "/ui/routes", {
        name: "r",
        endpoint_id: endpointId,
        signing_secret_kid: kid,
        rule: "{}",
        pipeline: "",
        [fieldName]: value,
      });
      expect(res.status).toBe(422);
      expect(res.text).toContain(`<code class="path">${path}`);
    });

    test("a valid route is created and redirects to its editor", async () => {
      const res = await post(app, who, "/ui/routes", {
        name: "All mail",
        endpoint_id: endpointId,
        signing_secret_kid: kid,
        enabled: "on",
        rule: "{}",
        pipeline: "",
      });
      expect(res.status, res.text).toBe(303);
      expect(res.headers.get("location")).toMatch(/^\/ui\/routes\/rt_\w+\?notice=route-saved$/);
    });

    test("the route editor lists every pipeline step, and a chat pipeline saves from the form", async () => {
      const page = await call(app, "GET", "/ui/routes/new", { headers: { cookie: who.cookie } });
      expect(page.status).toBe(200);
      for (const name of STEP_NAMES) expect(page.text).toContain(`<code>${name}</code>`);
      expect(page.text).toContain(
        "{&quot;name&quot;:&quot;map.slack_simple&quot;,&quot;args&quot;:{&quot;channel&quot;",
      );
      const pipeline = JSON.stringify({
        steps: [
          { name: "html_to_text", args: { prefer: "html", width: 0 } },
          { name: "map.slack_simple", args: { channel: "C0123456789", max_chars: 700, include_from: true } },
        ],
      });
      const fields = {
        name: "To Slack",
        endpoint_id: endpointId,
        signing_secret_kid: kid,
        rule: "{}",
        pipeline,
      };
      const saved = await post(app, who, "/ui/routes", fields);
      expect(saved.status, saved.text).toBe(303);
      const bad = await post(app, who, "/ui/routes", {
        ...fields,
        pipeline: pipeline.replace('"C0123456789"', '""'),
      });
      expect(bad.status).toBe(422);
      expect(bad.text).toContain('<code class="path">/pipeline/steps/1/args/channel');
    });

    test("endpoint edits keep a secret header whose masked value was left alone", async () => {
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: project.apiKey,
        body: { url: "http://127.0.0.1:9/a", headers: { Authorization: "Bearer s3cret" } },
      });
      const page = await call(app, "GET", `/ui/endpoints/${ep.body.id}`, { headers: { cookie: who.cookie } });
      expect(page.text).not.toContain("s3cret");
      const res = await post(app, who, `/ui/endpoints/${ep.body.id}`, {
        url: "http://127.0.0.1:9/b",
        headers: JSON.stringify({ Authorization: "***" }),
        secret_headers: "",
        timeout_s: "5",
      });
      expect(res.status, res.text).toBe(303);
      const row = await import("../../services/resources/endpoints.ts").then((m) =>
        m.findEndpointRow(app.ctx, project.id, ep.body.id).then((r) => m.endpointSecrets(app.ctx, r)),
      );
      expect(row.headers).toEqual({ Authorization: "Bearer s3cret" });
    });

    test("an endpoint with a bad URL shows the error at /url", async () => {
      const res = await post(app, who, "/ui/endpoints", {
        url: "ftp://x",
        headers: "{}",
        secret_headers: "",
        timeout_s: "10",
      });
      expect(res.status).toBe(422);
      expect(res.text).toContain('<code class="path">/url</code>');
    });

    test("another project's resources are not found", async () => {
      const other = await app.newProject("other");
      const route = await app.request("GET", "/v1/routes", { apiKey: project.apiKey });
      const s = await signIn(app, other.apiKey);
      const res = await call(app, "GET", `/ui/routes/${route.body.items[0].id}`, {
        headers: { cookie: s.cookie },
      });
      expect(res.status).toBe(404);
    });

    test("the playground preview needs the CSRF header and returns output or located errors", async () => {
      const send = (body: unknown, token?: string) =>
        call(app, "POST", "/ui/api/mapper/preview", {
          headers: {
            "content-type": "application/json",
            cookie: who.cookie,
            ...(token ? { "x-csrf-token": token } : {}),
          },
          body: JSON.stringify(body),
        });
      const config = JSON.stringify({
        version: "v1",
        output: { s: { "string.upper": { var: "message.subject" } } },
      });
      const raw = "From: a@example.com\r\nSubject: hello\r\n\r\nbody\r\n";
      expect((await send({ config, message_raw: raw })).status).toBe(403);
      const ok = await send({ config, message_raw: raw }, who.csrf);
      expect(ok.status, ok.text).toBe(200);
      expect(JSON.parse(ok.text)).toMatchObject({ ok: true, output: { s: "HELLO" }, warnings: [] });
      expect(JSON.parse(ok.text).seen.mail).toMatchObject({ text_source: expect.any(String), spam: null });
      const typo = JSON.stringify({ version: "v1", output: { s: { concat: ["a", "b"] } } });
      const warned = await send({ config: typo, message_raw: raw }, who.csrf);
      expect(JSON.parse(warned.text)).toMatchObject({
        ok: true,
        output: { s: { concat: ["a", "b"] } },
        warnings: [{ path: "/output/s/concat", message: expect.stringContaining('did you mean "cat"') }],
      });
      const bad = await send({ config: '{"version":"v1","output":{"a":{"nope.op":1}}}' }, who.csrf);
      expect(bad.status).toBe(422);
      expect(JSON.parse(bad.text)).toMatchObject({ ok: false, stage: "config" });
      expect(JSON.parse(bad.text).errors[0].path).toStartWith("/output/a");
      const syntax = await send({ config: "{" }, who.csrf);
      expect(JSON.parse(syntax.text)).toMatchObject({ ok: false, stage: "json", errors: [{ path: "/" }] });
      const missing = await send({ config, message_id: "msg_nope" }, who.csrf);
      expect(JSON.parse(missing.text)).toMatchObject({
        ok: false,
        stage: "message",
        errors: [{ path: "/message_id" }],
      });
    });

    test("the event list pages by cursor, filters, and an in-flight event cannot be replayed yet", async () => {
      const p = await app.newProject("paging");
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: p.apiKey,
        body: { url: "http://127.0.0.1:9/x" },
      });
      const sk = await app.request("POST", "/v1/signing-secrets", { apiKey: p.apiKey });
      await app.request("POST", "/v1/routes", {
        apiKey: p.apiKey,
        body: { name: "all", endpoint_id: ep.body.id, signing_secret_kid: sk.body.kid },
      });
      const ids: string[] = [];
      for (let i = 0; i < 27; i++) {
        const raw = `From: a@example.com\r\nTo: ${p.inbound}\r\nSubject: m${i}\r\nMessage-ID: <m${i}@example.com>\r\n\r\nhi\r\n`;
        const r = await app.request("POST", "/v1/messages", {
          apiKey: p.apiKey,
          rawBody: raw,
          headers: { "content-type": "message/rfc822" },
        });
        ids.push(r.body.events[0].id);
      }
      const s = await signIn(app, p.apiKey);
      const get = (path: string) => call(app, "GET", path, { headers: { cookie: s.cookie } });
      const first = await get("/ui/events");
      expect(first.text.match(/<tr>/g)?.length).toBe(26); // header row + 25
      expect(first.text).toContain(">m26<");
      const next = first.text.match(/rel="next" href="([^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
      expect(next).toBeDefined();
      const second = await get(next as string);
      expect(second.text.match(/<tr>/g)?.length).toBe(3);
      expect(second.text).toContain(">m0<");
      expect(second.text).toContain("First page");
      expect(second.text).not.toContain('rel="next"');
      expect((await get("/ui/events?status=delivered")).text).toContain("No events match.");
      expect((await get("/ui/events?cursor=bogus")).status).toBe(422);

      const detail = await get(`/ui/events/${ids[0]}`);
      expect(detail.text).toContain('data-event-status="pending"');
      expect(detail.text).toMatch(/id="replay" disabled/);
      const replay = await post(app, s, `/ui/events/${ids[0]}/replay`, {});
      expect(replay.status).toBe(303);
      expect(replay.headers.get("location")).toBe(`/ui/events/${ids[0]}?notice=not-replayable`);
      const status = await get(`/ui/events/${ids[0]}/status.json`);
      expect(JSON.parse(status.text)).toEqual({ status: "pending", attempts: 0 });
      expect(
        (await call(app, "GET", `/ui/events/${ids[0]}`, { headers: { cookie: who.cookie } })).status,
      ).toBe(404);
    });

    test("sign-out needs the token and clears the cookie", async () => {
      const s = await signIn(app, project.apiKey);
      expect((await post(app, s, "/ui/sign-out", {}, "")).status).toBe(403);
      const res = await post(app, s, "/ui/sign-out", {});
      expect(res.status).toBe(303);
      expect(res.headers.get("set-cookie")).toBe(
        "mh_session=; Path=/ui; Max-Age=0; HttpOnly; SameSite=Strict",
      );
    });

    test("after sign-out a copy of the old cookie no longer opens the dashboard", async () => {
      const s = await signIn(app, project.apiKey);
      const before = await call(app, "GET", "/ui/events", { headers: { cookie: s.cookie } });
      expect(before.status).toBe(200);
      expect((await post(app, s, "/ui/sign-out", {})).status).toBe(303);
      // The browser dropped its cookie; someone who copied it earlier replays it.
      const page = await call(app, "GET", "/ui/events", { headers: { cookie: s.cookie } });
      expect(page.status).toBe(303);
      expect(page.headers.get("location")).toBe("/ui/sign-in?notice=signed-out");
      const json = await call(app, "GET", "/ui/events/00000000-0000-4000-8000-000000000000/status.json", {
        headers: { cookie: s.cookie },
      });
      expect(json.status).toBe(401);
      // The sign-in page does not bounce the revoked session back into the dashboard.
      expect((await call(app, "GET", "/ui/sign-in", { headers: { cookie: s.cookie } })).status).toBe(200);
      // Another session of the same key is unaffected.
      const other = await signIn(app, project.apiKey);
      expect((await call(app, "GET", "/ui/events", { headers: { cookie: other.cookie } })).status).toBe(200);
    });

    test("the retention sweep removes sign-out records past their session's end", async () => {
      const s = await signIn(app, project.apiKey);
      expect((await post(app, s, "/ui/sign-out", {})).status).toBe(303);
      const count = async () =>
        Number(
          (
            await app.ctx.database.rows<{ n: number }>(
              sql`select count(*)::int as n from ui_revoked_sessions where expires_at > now() - interval '1 day'`,
            )
          )[0]?.n,
        );
      expect(await count()).toBeGreaterThan(0);
      await sweepRetention(app.ctx, { now: new Date(Date.now() + 13 * 3600 * 1000) });
      expect(await count()).toBe(0);
    });
  });
}
