/**
 * The dashboard's Mailboxes page through `app.handle`: adding a mailbox (its secret never rendered
 * back), the form's errors, the status a running poller reports against a real Dovecot, "Sync now"
 * and delete.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createImapSource } from "../../services/ingest/imap.ts";
import { Intake } from "../../services/ingest/intake.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Dovecot, startDovecot } from "../support/dovecot.ts";
import { eventually } from "../support/eventually.ts";
import { uiCall as call, FORM, signIn } from "../support/ui-session.ts";

for (const kind of testDbKinds()) {
  describe(`dashboard Mailboxes page (${kind})`, () => {
    let app: TestApp;
    let dovecot: Dovecot;
    let who: { cookie: string; csrf: string };
    let project: { id: string; apiKey: string };
    beforeAll(async () => {
      dovecot = await startDovecot();
      app = await createTestApp(kind);
      project = await app.newProject();
      who = await signIn(app, project.apiKey, "/ui/mailboxes");
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await dovecot?.stop();
    });

    const post = (path: string, fields: Record<string, string>) =>
      call(app, "POST", path, {
        headers: { ...FORM, cookie: who.cookie },
        body: new URLSearchParams({ ...fields, _csrf: who.csrf }),
      });
    const get = () => call(app, "GET", "/ui/mailboxes", { headers: { cookie: who.cookie } });

    test("the page lists nothing yet and offers the form; the nav links it", async () => {
      const page = await get();
      expect(page.status).toBe(200);
      expect(page.text).toContain("No mailboxes yet.");
      expect(page.text).toContain('action="/ui/mailboxes"');
      expect(page.text).toContain('href="/ui/mailboxes" class="active"');
    });

    test("a bad form is answered 422 with the problems, and the secret is not echoed", async () => {
      const res = await post("/ui/mailboxes", {
        name: "bad",
        host: dovecot.host,
        port: "not-a-port",
        tls: "none",
        user: "alice",
        auth_method: "password",
        secret: "typed-secret-123",
        folder: "INBOX",
        since: "yesterday",
        after_process: "archive",
      });
      expect(res.status).toBe(422);
      expect(res.text).toContain("/port");
      expect(res.text).toContain("/since");
      expect(res.text).toContain("/after_process");
      expect(res.text).not.toContain("typed-secret-123");
    });

    test("adding a mailbox, its status from a running poller, Sync now and delete", async () => {
      const res = await post("/ui/mailboxes", {
        name: "Support <inbox>",
        host: dovecot.host,
        port: String(dovecot.port),
        tls: "none",
        user: dovecot.user,
        auth_method: "password",
        secret: dovecot.password,
        folder: "INBOX",
        since: "",
        after_process: "seen",
      });
      expect(res.status).toBe(303);
      expect(res.headers.get("location")).toBe("/ui/mailboxes?notice=mailbox-added");
      const source = await createImapSource({ scanMs: 100, pollMs: 300 }).start(
        app.ctx,
        new Intake(app.ctx, "imap"),
      );
      try {
        const page = await eventually("the page to show the mailbox idle", get, 15_000, {
          until: (p) => p.text.includes(">idle</span>"),
        });
        expect(page.text).toContain("Support &lt;inbox&gt;");
        expect(page.text).not.toContain(dovecot.password);
        const id = page.text.match(/data-mailbox="(mbx_[0-9a-f]+)"/)?.[1] ?? "";
        const sync = await post(`/ui/mailboxes/${id}/sync`, {});
        expect(sync.status).toBe(303);
        const [row] = await app.ctx.database.rows<{ sync_requested_at: Date | null }>(
          sql`select sync_requested_at from mailboxes where id = ${id}`,
        );
        expect(row?.sync_requested_at).not.toBeNull();
        const del = await post(`/ui/mailboxes/${id}/delete`, {});
        expect(del.status).toBe(303);
        expect((await get()).text).toContain("No mailboxes yet.");
      } finally {
        await source.stop();
      }
    });
  });
}
