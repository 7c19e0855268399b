/**
 * The dashboard's notification settings and the route form's retry policy and `expect_mail_within`,
 * through `app.handle` (no browser), on PGlite and Postgres: the page is in the nav and needs a
 * session and the CSRF token; the API's checks come back at the field their path points into; what is
 * saved is what `GET /v1/project` and `GET /v1/routes/{id}` show; turning notifications off stores
 * null; notifications given up are listed with their last error.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { uiCall as call, FORM, signIn } from "../support/ui-session.ts";

/** The messages shown in the field-errors list right after the element with `id` (or its block). */
function errorsAfter(page: string, id: string): string {
  const at = page.indexOf(`id="${id}"`);
  if (at < 0) throw new Error(`no #${id}`);
  const list = page.slice(at).match(/<ul class="field-errors" role="alert">([\s\S]*?)<\/ul>/);
  return list?.[1] ?? "";
}

for (const kind of testDbKinds()) {
  describe(`dashboard notifications and route delivery settings (${kind})`, () => {
    let app: TestApp;
    let project: { id: string; apiKey: string };
    let who: { cookie: string; csrf: string };
    let endpointId: string;
    let kid: string;

    beforeAll(async () => {
      app = await createTestApp(kind);
      project = await app.newProject();
      endpointId = (
        await app.request("POST", "/v1/endpoints", {
          apiKey: project.apiKey,
          body: { url: "http://127.0.0.1:9/notify" },
        })
      ).body.id;
      kid = (await app.request("POST", "/v1/signing-secrets", { apiKey: project.apiKey })).body.kid;
      who = await signIn(app, project.apiKey);
    }, 180_000);
    afterAll(() => app.close());

    const get = (path: string) => call(app, "GET", path, { headers: { cookie: who.cookie } });
    const post = (path: string, fields: [string, string][], token: string | null = who.csrf) =>
      call(app, "POST", path, {
        headers: { ...FORM, cookie: who.cookie },
        body: new URLSearchParams([...fields, ...(token ? [["_csrf", token] as [string, string]] : [])]),
      });

    test("the page is linked in the nav, needs a session, and shows notifications off at first", async () => {
      const anonymous = await call(app, "GET", "/ui/notifications");
      expect(anonymous.status).toBe(303);
      expect(anonymous.headers.get("location")).toBe("/ui/sign-in");
      const events = await get("/ui/events");
      expect(events.text).toContain('<a href="/ui/notifications">Notifications</a>');
      const page = await get("/ui/notifications");
      expect(page.status).toBe(200);
      expect(page.text).toContain('aria-current="page">Notifications</a>');
      expect(page.text).toContain("Notifications are <strong>off</strong>.");
      expect(page.text).toContain(`<option value="${endpointId}">http://127.0.0.1:9/notify</option>`);
      expect(page.text).toContain(`<option value="${kid}">${kid}</option>`);
      for (const t of ["event.dead", "endpoint.circuit_opened", "route.silent"])
        expect(page.text).toContain(`name="types" value="${t}" checked`);
    });

    test("a save without the CSRF token changes nothing", async () => {
      const res = await post(
        "/ui/notifications",
        [
          ["enabled", "on"],
          ["endpoint_id", endpointId],
          ["signing_secret_kid", kid],
          ["types", "event.dead"],
        ],
        null,
      );
      expect(res.status).toBe(403);
      expect(
        (await app.request("GET", "/v1/project", { apiKey: project.apiKey })).body.notifications,
      ).toBeNull();
    });

    test("the API's checks come back at their fields; nothing is stored", async () => {
      const res = await post("/ui/notifications", [
        ["enabled", "on"],
        ["endpoint_id", ""],
        ["signing_secret_kid", "kid_nope"],
      ]);
      expect(res.status).toBe(422);
      expect(errorsAfter(res.text, "endpoint_id")).toContain("/notifications/endpoint_id");
      expect(errorsAfter(res.text, "types")).toContain("/notifications/types");
      // The endpoint check passes shape first: an unknown secret is named at its own field.
      const unknown = await post("/ui/notifications", [
        ["enabled", "on"],
        ["endpoint_id", endpointId],
        ["signing_secret_kid", "kid_nope"],
        ["types", "event.dead"],
      ]);
      expect(unknown.status).toBe(422);
      expect(errorsAfter(unknown.text, "signing_secret_kid")).toContain(
        "no signing secret kid_nope in this project",
      );
      expect(unknown.text).toContain(
        '<select id="signing_secret_kid" name="signing_secret_kid" aria-invalid="true">',
      );
      // What was typed is shown again.
      expect(unknown.text).toContain(`<option value="${endpointId}" selected>`);
      expect(
        (await app.request("GET", "/v1/project", { apiKey: project.apiKey })).body.notifications,
      ).toBeNull();
    });

    test("a valid save is what the API shows; unchecking 'Send notifications' turns them off", async () => {
      const res = await post("/ui/notifications", [
        ["enabled", "on"],
        ["endpoint_id", endpointId],
        ["signing_secret_kid", kid],
        ["types", "event.dead"],
        ["types", "route.silent"],
      ]);
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe("/ui/notifications?notice=notifications-saved");
      expect(
        (await app.request("GET", "/v1/project", { apiKey: project.apiKey })).body.notifications,
      ).toEqual({
        endpoint_id: endpointId,
        signing_secret_kid: kid,
        types: ["event.dead", "route.silent"],
      });
      const page = await get("/ui/notifications?notice=notifications-saved");
      expect(page.text).toContain("Notification settings saved.");
      expect(page.text).toContain("Notifications are <strong>on</strong>: 2 of 6 types.");
      expect(page.text).toContain('name="types" value="route.silent" checked');
      expect(page.text).not.toContain('name="types" value="message.held" checked');

      const off = await post("/ui/notifications", [
        ["endpoint_id", endpointId],
        ["signing_secret_kid", kid],
        ["types", "event.dead"],
      ]);
      expect(off.status).toBe(303);
      expect(
        (await app.request("GET", "/v1/project", { apiKey: project.apiKey })).body.notifications,
      ).toBeNull();
    });

    test("notifications given up are listed with their last error", async () => {
      const empty = await get("/ui/notifications");
      expect(empty.text).toContain("No notification was given up lately.");
      const body = {
        id: "ntf_given_up_1",
        type: "event.dead",
        created_at: "2026-01-01T00:00:00.000Z",
        data: {},
      };
      await app.ctx.database.rows(sql`
        insert into jobs (id, kind, project_id, payload, run_at, attempts, created_at, status, last_error, finished_at)
        values ('job_given_up_1', 'notification', ${project.id}, ${JSON.stringify(body)}::jsonb, now(), 5, now(),
          'failed', 'http 500: <boom> (gave up after 5 attempts)', now())`);
      const page = await get("/ui/notifications");
      expect(page.text).toContain('<td class="mono small">ntf_given_up_1</td>');
      expect(page.text).toContain("http 500: &lt;boom&gt; (gave up after 5 attempts)");
    });

    test("the route form sets and clears the retry policy and expect_mail_within, errors at their fields", async () => {
      const base: [string, string][] = [
        ["name", "delivery settings"],
        ["endpoint_id", endpointId],
        ["signing_secret_kid", kid],
        ["enabled", "on"],
        ["rule", "{}"],
        ["pipeline", ""],
      ];
      const form = await get("/ui/routes/new");
      expect(form.text).toContain('id="retry_schedule"');
      expect(form.text).toContain('id="retry_max_attempts"');
      expect(form.text).toContain('id="expect_mail_within"');

      const bad = await post("/ui/routes", [
        ...base,
        ["retry_schedule", "10s, soon"],
        ["retry_max_attempts", "3"],
        ["expect_mail_within", ""],
      ]);
      expect(bad.status).toBe(422);
      expect(errorsAfter(bad.text, "retry_schedule")).toContain("/retry_policy/schedule/1");
      expect(bad.text).toContain('value="10s, soon"');
      const tooMany = await post("/ui/routes", [
        ...base,
        ["retry_schedule", "10s"],
        ["retry_max_attempts", "99"],
      ]);
      expect(tooMany.status).toBe(422);
      expect(errorsAfter(tooMany.text, "retry_max_attempts")).toContain("/retry_policy/max_attempts");
      const silent = await post("/ui/routes", [...base, ["expect_mail_within", "10s"]]);
      expect(silent.status).toBe(422);
      expect(errorsAfter(silent.text, "expect_mail_within")).toContain("must be at least 1m");

      const ok = await post("/ui/routes", [
        ...base,
        ["retry_schedule", "10s, 1m, 1h"],
        ["retry_max_attempts", ""],
        ["expect_mail_within", "6h"],
      ]);
      expect(ok.status).toBe(303);
      const routeId = ok.headers.get("location")?.match(/\/ui\/routes\/([^?]+)/)?.[1] as string;
      const saved = await app.request("GET", `/v1/routes/${routeId}`, { apiKey: project.apiKey });
      expect(saved.body.retry_policy).toEqual({ schedule: ["10s", "1m", "1h"], max_attempts: 4 });
      expect(saved.body.expect_mail_within).toBe("6h");
      const editor = await get(`/ui/routes/${routeId}`);
      expect(editor.text).toContain('name="retry_schedule" value="10s, 1m, 1h"');
      expect(editor.text).toContain('name="retry_max_attempts" value="4"');
      expect(editor.text).toContain('name="expect_mail_within" value="6h"');

      // Emptied: the service's schedule, and no silence watch.
      const cleared = await post(`/ui/routes/${routeId}`, [
        ...base,
        ["retry_schedule", ""],
        ["retry_max_attempts", ""],
        ["expect_mail_within", ""],
      ]);
      expect(cleared.status).toBe(303);
      const after = await app.request("GET", `/v1/routes/${routeId}`, { apiKey: project.apiKey });
      expect(after.body.retry_policy).toBeNull();
      expect(after.body.expect_mail_within).toBeNull();
    });
  });
}
