// IMAP mailboxes against a real Dovecot on loopback: the API, backfill, new mail through IDLE and
// polling, after_process, UIDVALIDITY changes, two pollers on one database, an outage mid-backfill,
// TLS modes and XOAUTH2.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { ImapFlow } from "imapflow";
import { createImapSource, type ImapSourceOptions, STAGE_MAX_BYTES } from "../../services/ingest/imap.ts";
import { ingestMessage } from "../../services/ingest/ingest.ts";
import type { RunningSource } from "../../services/ingest/intake.ts";
import { Intake } from "../../services/ingest/intake.ts";
import { AppError } from "../../services/lib/errors.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Dovecot, startDovecot } from "../support/dovecot.ts";
import { type EventuallyOptions, eventually } from "../support/eventually.ts";
import { addRoute } from "../support/ingest.ts";
import { REPO_ROOT } from "../support/paths.ts";
import { buildMail } from "../support/raw-mail.ts";

const FAST: ImapSourceOptions = {
  scanMs: 100,
  leaseMs: 3000,
  pollMs: 300,
  backoffMs: { min: 100, max: 500 },
};

async function imapClient(d: Dovecot): Promise<ImapFlow> {
  const c = new ImapFlow({
    host: d.host,
    port: d.port,
    secure: false,
    doSTARTTLS: false,
    auth: { user: d.user, pass: d.password },
    logger: false,
  });
  await c.connect();
  return c;
}

/** Waits (up to 15 s, the poller's promise is 10 s) for `probe` to answer as `opts.until` wants. */
function wait<T>(probe: () => T | Promise<T>, opts: EventuallyOptions<T> = {}) {
  return eventually("the IMAP condition", probe, 15_000, opts);
}

/** How many messages a folder holds (STATUS). */
async function count(c: ImapFlow, folder: string): Promise<number> {
  const status = await c.status(folder, { messages: true });
  return status === false ? -1 : (status.messages ?? -1);
}

let seq = 0;
function mail(subject = `imap test ${++seq}`): Uint8Array {
  return buildMail({ subject, text: `body of ${subject}` });
}

async function append(d: Dovecot, folder: string, raws: Uint8Array[], date?: Date): Promise<void> {
  const c = await imapClient(d);
  try {
    for (const raw of raws) await c.append(folder, Buffer.from(raw), [], date);
  } finally {
    await c.logout();
  }
}

function startSource(app: TestApp, opts: ImapSourceOptions = {}): Promise<RunningSource> {
  const source = createImapSource({ ...FAST, ...opts });
  return source.start(app.ctx, new Intake(app.ctx, "imap"));
}

async function imapMessages(
  app: TestApp,
  projectId: string,
): Promise<{ message_id: string; source_type: string; envelope: unknown }[]> {
  return app.ctx.database.rows(
    sql`select message_id, source_type, envelope from messages where project_id = ${projectId} order by received_at`,
  );
}

async function eventCount(app: TestApp, projectId: string): Promise<number> {
  const [r] = await app.ctx.database.rows<{ n: number }>(
    sql`select count(*)::int as n from events where project_id = ${projectId}`,
  );
  return Number(r?.n ?? 0);
}

for (const kind of testDbKinds()) {
  describe(`IMAP mailboxes (${kind})`, () => {
    let app: TestApp;
    let dovecot: Dovecot;
    beforeAll(async () => {
      dovecot = await startDovecot();
      app = await createTestApp(kind);
    }, 60_000);
    afterAll(async () => {
      await app?.close();
      await dovecot?.stop();
    });

    async function project() {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      return p;
    }

    function mailboxBody(folder: string, extra: Record<string, unknown> = {}) {
      return {
        name: `box ${folder}`,
        host: dovecot.host,
        port: dovecot.port,
        tls: "none",
        auth: { user: dovecot.user, password: dovecot.password },
        folder,
        ...extra,
      };
    }

    async function createFolder(folder: string) {
      const c = await imapClient(dovecot);
      await c.mailboxCreate(folder);
      await c.logout();
    }

    test("the API creates, lists, changes and deletes a mailbox and never returns its credential", async () => {
      const p = await project();
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("INBOX", { auth: { user: "alice", password: "s3cret-pass" } }),
      });
      expect(created.status).toBe(201);
      expect(created.body.id).toMatch(/^mbx_/);
      expect(created.body).toMatchObject({
        folder: "INBOX",
        tls: "none",
        since: null,
        after_process: "none",
        enabled: true,
        auth: { user: "alice", method: "password" },
        status: {
          state: "connecting",
          last_error: null,
          uidvalidity: null,
          last_uid: null,
          messages_ingested: 0,
        },
      });
      expect(created.text).not.toContain("s3cret-pass");
      const [stored] = await app.ctx.database.rows<{ auth_sealed: string }>(
        sql`select auth_sealed from mailboxes where id = ${created.body.id}`,
      );
      expect(stored?.auth_sealed).not.toContain("s3cret-pass");

      const list = await app.request("GET", "/v1/mailboxes", { apiKey: p.apiKey });
      expect(list.body.items.map((m: { id: string }) => m.id)).toEqual([created.body.id]);
      const patched = await app.request("PATCH", `/v1/mailboxes/${created.body.id}`, {
        apiKey: p.apiKey,
        body: {
          enabled: false,
          after_process: "move:Done",
          auth: { user: "alice", access_token: "tok-123" },
        },
      });
      expect(patched.status).toBe(200);
      expect(patched.body).toMatchObject({
        enabled: false,
        after_process: "move:Done",
        auth: { method: "access_token" },
        status: { state: "disabled" },
      });
      expect(patched.text).not.toContain("tok-123");
      const sync = await app.request("POST", `/v1/mailboxes/${created.body.id}/sync`, { apiKey: p.apiKey });
      expect(sync.status).toBe(202);
      const other = await app.newProject("other");
      expect(
        (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: other.apiKey })).body.error
          .code,
      ).toBe("mailboxes.not_found");
      expect(
        (await app.request("DELETE", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).status,
      ).toBe(204);
      expect(
        (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).status,
      ).toBe(404);
    });

    test("bad input is refused with codes; a loopback host only with ALLOW_PRIVATE_ENDPOINTS", async () => {
      const p = await project();
      const bad = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("INBOX", { tls: "ssl", after_process: "archive" }),
      });
      expect(bad.status).toBe(422);
      expect(bad.body.error.code).toBe("request.invalid");
      const noCreds = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("INBOX", { auth: { user: "alice" } }),
      });
      expect(noCreds.status).toBe(422);

      const strict = await createTestApp(kind, { env: { ALLOW_PRIVATE_ENDPOINTS: "false" } });
      try {
        const q = await strict.newProject();
        for (const host of ["127.0.0.1", "10.1.2.3", "::1", "169.254.169.254"]) {
          const r = await strict.request("POST", "/v1/mailboxes", {
            apiKey: q.apiKey,
            body: { ...mailboxBody("INBOX"), host },
          });
          expect(r.status).toBe(422);
          expect(r.body.error.code).toBe("mailboxes.private_host");
          expect(r.body.error.message).toContain("ALLOW_PRIVATE_ENDPOINTS");
        }
      } finally {
        await strict.close();
      }
    });

    test("backfills from since, takes new mail through IDLE, stores it as source imap with no envelope, once", async () => {
      const p = await project();
      await createFolder("Backfill");
      const old = new Date(Date.now() - 10 * 24 * 3600 * 1000);
      await append(dovecot, "Backfill", [mail("too old")], old);
      await append(dovecot, "Backfill", [mail("recent 1"), mail("recent 2")]);
      const since = new Date(Date.now() - 24 * 3600 * 1000).toISOString();
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("Backfill", { since }),
      });
      expect(created.status).toBe(201);
      const source = await startSource(app);
      try {
        await wait(() => imapMessages(app, p.id), { until: (m) => m.length === 2 });
        const view = await wait(
          async () =>
            (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).body,
          { until: (b) => b.status.state === "idle" },
        );
        expect(view.status).toMatchObject({ last_error: null, messages_ingested: 2, last_uid: 3 });
        expect(view.status.uidvalidity).toBeGreaterThan(0);
        expect(view.status.last_sync_at).not.toBeNull();
        const rows = await imapMessages(app, p.id);
        expect(rows.every((r) => r.source_type === "imap" && r.envelope === null)).toBe(true);

        // new mail while the poller idles
        await append(dovecot, "Backfill", [mail("live 1")]);
        await wait(() => imapMessages(app, p.id), { until: (m) => m.length === 3 });
        expect(await eventCount(app, p.id)).toBe(3);
      } finally {
        await source.stop();
      }
    });

    test("a mailbox without since takes only mail that arrives after it was added", async () => {
      const p = await project();
      await createFolder("NewOnly");
      await append(dovecot, "NewOnly", [mail("before 1"), mail("before 2")]);
      await Bun.sleep(1100); // INTERNALDATE has a resolution of one second
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("NewOnly"),
      });
      const source = await startSource(app);
      try {
        await wait(
          async () =>
            (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).body,
          { until: (b) => b.status.state === "idle" },
        );
        await append(dovecot, "NewOnly", [mail("after")]);
        const rows = await wait(() => imapMessages(app, p.id), { until: (m) => m.length >= 1 });
        await Bun.sleep(500);
        expect((await imapMessages(app, p.id)).length).toBe(1);
        expect(rows.length).toBe(1);
      } finally {
        await source.stop();
      }
    });

    test("after_process seen, delete and move act on the server only after the message is stored", async () => {
      const p = await project();
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      for (const [folder, action] of [
        ["AfterSeen", "seen"],
        ["AfterDelete", "delete"],
        ["AfterMove", "move:Processed"],
      ] as const) {
        await createFolder(folder);
        await append(dovecot, folder, [mail(`${action} a`), mail(`${action} b`)]);
        const r = await app.request("POST", "/v1/mailboxes", {
          apiKey: p.apiKey,
          body: mailboxBody(folder, { since, after_process: action }),
        });
        expect(r.status).toBe(201);
      }
      const source = await startSource(app);
      try {
        await wait(() => imapMessages(app, p.id), { until: (m) => m.length === 6 });
        const c = await imapClient(dovecot);
        try {
          await wait(async () => await count(c, "AfterDelete"), {
            until: (n) => n === 0,
          });
          await wait(async () => await count(c, "AfterMove"), {
            until: (n) => n === 0,
          });
          expect(await count(c, "Processed")).toBe(2);
          const seen = await wait(async () => await c.status("AfterSeen", { unseen: true, messages: true }), {
            until: (s) => s !== false && s.unseen === 0,
          });
          expect(seen.messages).toBe(2);
        } finally {
          await c.logout();
        }
      } finally {
        await source.stop();
      }
    });

    test("a UIDVALIDITY change re-syncs the folder without duplicates", async () => {
      const p = await project();
      await createFolder("Renumber");
      const raws = [mail("renumber 1"), mail("renumber 2")];
      await append(dovecot, "Renumber", raws);
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("Renumber", { since }),
      });
      let source = await startSource(app);
      let first: number;
      try {
        await wait(() => imapMessages(app, p.id), { until: (m) => m.length === 2 });
        first = (
          await wait(
            async () =>
              (
                await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })
              ).body,
            { until: (b) => b.status.state === "idle" },
          )
        ).status.uidvalidity;
      } finally {
        await source.stop();
      }
      // The folder is recreated: same messages, new UIDVALIDITY, plus one new message.
      const c = await imapClient(dovecot);
      await c.mailboxDelete("Renumber");
      await c.mailboxCreate("Renumber");
      await c.logout();
      await append(dovecot, "Renumber", [...raws, mail("renumber 3")]);
      source = await startSource(app);
      try {
        const view = await wait(
          async () =>
            (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).body,
          { until: (b) => b.status.uidvalidity !== first && b.status.state === "idle" },
        );
        expect(view.status.last_uid).toBe(3);
        expect((await imapMessages(app, p.id)).length).toBe(3);
        expect(await eventCount(app, p.id)).toBe(3);
        expect(view.status.messages_ingested).toBe(3);
      } finally {
        await source.stop();
      }
    });

    test("two pollers on one database: each message is ingested once, and a stopped poller's mailbox is taken over", async () => {
      const p = await project();
      await createFolder("Shared");
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      await append(
        dovecot,
        "Shared",
        Array.from({ length: 30 }, (_, i) => mail(`shared ${i}`)),
      );
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("Shared", { since }),
      });
      const a = await startSource(app, { owner: "poller-a", batchSize: 5 });
      const b = await startSource(app, { owner: "poller-b", batchSize: 5 });
      let bStopped = false;
      try {
        await wait(() => imapMessages(app, p.id), { until: (m) => m.length === 30 });
        const [lease] = await app.ctx.database.rows<{ lease_owner: string }>(
          sql`select lease_owner from mailboxes where id = ${created.body.id}`,
        );
        // stop whichever holds it; the other takes over and picks up new mail
        const holder = lease?.lease_owner === "poller-a" ? a : b;
        await holder.stop();
        if (holder === b) bStopped = true;
        await append(
          dovecot,
          "Shared",
          Array.from({ length: 5 }, (_, i) => mail(`after takeover ${i}`)),
        );
        // UIDs are recorded once their batch is stored: wait for the records, then count everything.
        const uids = await wait(
          async () =>
            (
              await app.ctx.database.rows<{ n: number; d: number }>(
                sql`select count(*)::int as n, count(distinct uid)::int as d from mailbox_uids where mailbox_id = ${created.body.id}`,
              )
            )[0],
          { until: (u) => u?.n === 35 },
        );
        expect(uids).toEqual({ n: 35, d: 35 });
        expect((await imapMessages(app, p.id)).length).toBe(35);
        expect(await eventCount(app, p.id)).toBe(35);
      } finally {
        await a.stop();
        if (!bStopped) await b.stop();
      }
    });

    test("an outage mid-backfill: what was in hand is stored and recorded, last_uid stays before the cut batch, and the retry takes the rest once", async () => {
      const p = await project();
      await createFolder("Outage");
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      const subjects = Array.from({ length: 12 }, (_, i) => `outage-${String(i + 1).padStart(2, "0")}`);
      await append(
        dovecot,
        "Outage",
        subjects.map((s) => mail(s)),
      );
      // The database "fails" for the 7th message (the second batch of 5) until the outage ends.
      let down = true;
      const failing = Buffer.from("outage-07");
      const ingest: typeof ingestMessage = async (ctx, input) => {
        const raw = input.raw as Uint8Array;
        if (down && Buffer.from(raw).includes(failing)) throw new Error("connection refused");
        return await ingestMessage(ctx, input);
      };
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("Outage", { since }),
      });
      const id = created.body.id as string;
      const source = await createImapSource({
        ...FAST,
        batchSize: 5,
        concurrency: 2,
        // no retry on its own: the test ends the outage, then asks for a sync
        backoffMs: { min: 60_000, max: 60_000 },
      }).start(app.ctx, new Intake(app.ctx, "imap", { ingest }));
      const recordedUids = async () =>
        (
          await app.ctx.database.rows<{ uid: number; message_pk: string | null }>(
            sql`select uid, message_pk from mailbox_uids where mailbox_id = ${id} order by uid`,
          )
        ).map((r) => ({ uid: Number(r.uid), stored: r.message_pk !== null }));
      try {
        const failed = await wait(
          async () => (await app.request("GET", `/v1/mailboxes/${id}`, { apiKey: p.apiKey })).body,
          {
            until: (b) => b.status.state === "error",
          },
        );
        expect(failed.status.last_error).toContain("connection refused");
        // The first batch (UIDs 1-5) was taken in whole; the second was cut at UID 7.
        expect(failed.status.last_uid).toBe(5);
        const before = await recordedUids();
        expect(before.map((r) => r.uid).slice(0, 6)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(before.map((r) => r.uid)).not.toContain(7);
        expect(before.every((r) => r.stored)).toBe(true);
        expect((await imapMessages(app, p.id)).length).toBe(before.length);
        expect(failed.status.messages_ingested).toBe(before.length);

        down = false;
        await app.request("POST", `/v1/mailboxes/${id}/sync`, { apiKey: p.apiKey });
        const done = await wait(
          async () => (await app.request("GET", `/v1/mailboxes/${id}`, { apiKey: p.apiKey })).body,
          {
            until: (b) => b.status.last_uid === 12 && b.status.state === "idle",
          },
        );
        expect(done.status.messages_ingested).toBe(12);
        expect(done.status.backfill_remaining).toBeNull();
        expect((await recordedUids()).map((r) => r.uid)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
        const stored = await imapMessages(app, p.id);
        expect(stored.length).toBe(12);
        expect(await eventCount(app, p.id)).toBe(12);
      } finally {
        await source.stop();
      }
    });

    test("a large sync is fetched into the database first, then processed; after_process waits for the processing", async () => {
      const p = await project();
      await createFolder("Staged");
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      const small = Array.from({ length: 12 }, (_, i) => mail(`staged ${i}`));
      // over the staging limit: fetched by the processing pass instead
      const large = buildMail({ subject: "staged large", text: `${"x".repeat(76)}\r\n`.repeat(15_000) });
      expect(large.byteLength).toBeGreaterThan(STAGE_MAX_BYTES);
      await append(dovecot, "Staged", [...small, large]);
      // Processing waits until the test lets it go, so the staged state can be looked at.
      let release = () => {};
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const ingest: typeof ingestMessage = async (ctx, input) => {
        await gate;
        return await ingestMessage(ctx, input);
      };
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("Staged", { since, after_process: "seen" }),
      });
      const id = created.body.id as string;
      const source = await createImapSource({ ...FAST, stageFrom: 5, batchSize: 5 }).start(
        app.ctx,
        new Intake(app.ctx, "imap", { ingest }),
      );
      const view = async () => (await app.request("GET", `/v1/mailboxes/${id}`, { apiKey: p.apiKey })).body;
      const c = await imapClient(dovecot);
      try {
        // all fetched (the count of what is left is written after the last rows), none processed
        const staged = await wait(view, {
          until: (b) => b.status.messages_pending === 12 && b.status.backfill_remaining === 0,
        });
        expect(staged.status.messages_ingested).toBe(0);
        expect(staged.status.last_uid).toBe(0);
        const [rows] = await app.ctx.database.rows<{ staged: number; all: number }>(
          sql`select count(*) filter (where raw is not null)::int as staged, count(*)::int as "all"
              from mailbox_uids where mailbox_id = ${id}`,
        );
        expect(rows).toEqual({ staged: 12, all: 12 });
        expect(await imapMessages(app, p.id)).toEqual([]);
        // nothing was marked on the server: the messages are not processed yet
        const before = await c.status("Staged", { unseen: true });
        expect(before !== false && before.unseen).toBe(13);

        release();
        const done = await wait(view, {
          until: (b) => b.status.messages_ingested === 13 && b.status.state === "idle",
        });
        expect(done.status.messages_pending).toBe(0);
        expect(done.status.last_uid).toBe(13);
        expect(done.status.backfill_remaining).toBeNull();
        const [after] = await app.ctx.database.rows<{ staged: number; all: number; stored: number }>(
          sql`select count(*) filter (where raw is not null)::int as staged, count(*)::int as "all",
                     count(message_pk)::int as stored
              from mailbox_uids where mailbox_id = ${id}`,
        );
        expect(after).toEqual({ staged: 0, all: 13, stored: 13 });
        const stored = await imapMessages(app, p.id);
        expect(stored.length).toBe(13);
        expect(new Set(stored.map((m) => m.message_id)).size).toBe(13);
        expect(await eventCount(app, p.id)).toBe(13);
        const seen = await wait(async () => await c.status("Staged", { unseen: true }), {
          until: (st) => st !== false && st.unseen === 0,
        });
        expect(seen).not.toBe(false);
      } finally {
        release();
        await c.logout();
        await source.stop();
        // every later test's source would connect to it too (the server allows 10 connections)
        await app.request("DELETE", `/v1/mailboxes/${id}`, { apiKey: p.apiKey });
      }
    });

    test("a message refused for good is recorded with its refusal and left unmarked on the server", async () => {
      const p = await project();
      await createFolder("Refused");
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      await append(dovecot, "Refused", [mail("refused ok 1"), mail("refused me"), mail("refused ok 2")]);
      const marker = Buffer.from("refused me");
      const ingest: typeof ingestMessage = async (ctx, input) => {
        if (Buffer.from(input.raw as Uint8Array).includes(marker)) {
          throw new AppError("ingest.unparseable", "not a message this test accepts");
        }
        return await ingestMessage(ctx, input);
      };
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("Refused", { since, after_process: "seen" }),
      });
      const id = created.body.id as string;
      // fetched first (three UIDs are a large sync here), so the refusal is recorded over a staged row
      const source = await createImapSource({ ...FAST, stageFrom: 3 }).start(
        app.ctx,
        new Intake(app.ctx, "imap", { ingest }),
      );
      const c = await imapClient(dovecot);
      try {
        const done = await wait(
          async () => (await app.request("GET", `/v1/mailboxes/${id}`, { apiKey: p.apiKey })).body,
          { until: (b) => b.status.last_uid === 3 && b.status.state === "idle" },
        );
        expect(done.status.messages_ingested).toBe(2);
        expect(done.status.messages_pending).toBe(0);
        const rows = await app.ctx.database.rows<{
          uid: number;
          stored: boolean;
          refusal: string | null;
          staged: boolean;
        }>(
          sql`select uid::int as uid, message_pk is not null as stored, refusal, raw is not null as staged
              from mailbox_uids where mailbox_id = ${id} order by uid`,
        );
        expect(rows).toEqual([
          { uid: 1, stored: true, refusal: null, staged: false },
          { uid: 2, stored: false, refusal: "ingest.unparseable", staged: false },
          { uid: 3, stored: true, refusal: null, staged: false },
        ]);
        await wait(async () => await c.status("Refused", { unseen: true }), {
          until: (st) => st !== false && st.unseen === 1,
        });
        await c.mailboxOpen("Refused", { readOnly: true });
        const unseen = [];
        for await (const m of c.fetch("1:*", { uid: true, flags: true }, { uid: true })) {
          if (!m.flags?.has("\\Seen")) unseen.push(m.uid);
        }
        expect(unseen).toEqual([2]);
      } finally {
        await c.logout();
        await source.stop();
        await app.request("DELETE", `/v1/mailboxes/${id}`, { apiKey: p.apiKey });
      }
    });

    test("a backfill fetched first takes exactly the mail that arrived from since on", async () => {
      const p = await project();
      await createFolder("StagedSince");
      const now = Date.now();
      const since = new Date(now - 3600 * 1000);
      // before since (left alone); just after it (within a minute: its arrival time is compared); well
      // after it (the server's own search says so)
      await append(
        dovecot,
        "StagedSince",
        [0, 1, 2].map((i) => mail(`before since ${i}`)),
        new Date(since.getTime() - 30 * 60 * 1000),
      );
      await append(
        dovecot,
        "StagedSince",
        [0, 1, 2].map((i) => mail(`just after since ${i}`)),
        new Date(since.getTime() + 30 * 1000),
      );
      await append(
        dovecot,
        "StagedSince",
        [0, 1, 2, 3].map((i) => mail(`well after since ${i}`)),
      );
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("StagedSince", { since: since.toISOString() }),
      });
      const id = created.body.id as string;
      const source = await startSource(app, { stageFrom: 5, batchSize: 5 });
      try {
        const done = await wait(
          async () => (await app.request("GET", `/v1/mailboxes/${id}`, { apiKey: p.apiKey })).body,
          { until: (b) => b.status.last_uid === 10 && b.status.state === "idle" },
        );
        expect(done.status.messages_ingested).toBe(7);
        expect(done.status.messages_pending).toBe(0);
        const subjects = (
          await app.ctx.database.rows<{ subject: string }>(
            sql`select parsed->>'subject' as subject from messages where project_id = ${p.id} order by 1`,
          )
        ).map((r) => r.subject);
        expect(subjects).toEqual([
          "just after since 0",
          "just after since 1",
          "just after since 2",
          "well after since 0",
          "well after since 1",
          "well after since 2",
          "well after since 3",
        ]);
        const [uids] = await app.ctx.database.rows<{ n: number }>(
          sql`select count(*)::int as n from mailbox_uids where mailbox_id = ${id}`,
        );
        expect(uids?.n).toBe(7);
      } finally {
        await source.stop();
        await app.request("DELETE", `/v1/mailboxes/${id}`, { apiKey: p.apiKey });
      }
    });

    test("staged messages outlive an outage and a UIDVALIDITY change: the next poller processes each once", async () => {
      const p = await project();
      await createFolder("StagedOutage");
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      const raws = Array.from({ length: 8 }, (_, i) => mail(`staged outage ${i}`));
      await append(dovecot, "StagedOutage", raws);
      const down: typeof ingestMessage = async () => {
        throw new Error("connection refused");
      };
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: mailboxBody("StagedOutage", { since }),
      });
      const id = created.body.id as string;
      const view = async () => (await app.request("GET", `/v1/mailboxes/${id}`, { apiKey: p.apiKey })).body;
      const failing = await createImapSource({
        ...FAST,
        owner: "failing",
        stageFrom: 5,
        batchSize: 5,
        backoffMs: { min: 60_000, max: 60_000 },
      }).start(app.ctx, new Intake(app.ctx, "imap", { ingest: down }));
      let first: number;
      try {
        const failed = await wait(view, { until: (b) => b.status.state === "error" });
        expect(failed.status.last_error).toContain("connection refused");
        expect(failed.status.messages_pending).toBe(8);
        expect(failed.status.messages_ingested).toBe(0);
        first = failed.status.uidvalidity;
      } finally {
        await failing.stop();
      }
      // The folder is recreated meanwhile (new UIDVALIDITY) with the same messages: the staged ones of
      // the old UIDVALIDITY are processed all the same, and the re-fetched copies are the same bytes.
      const c = await imapClient(dovecot);
      await c.mailboxDelete("StagedOutage");
      await c.mailboxCreate("StagedOutage");
      await c.logout();
      await append(dovecot, "StagedOutage", raws);
      const source = await startSource(app, { owner: "healthy", stageFrom: 5, batchSize: 5 });
      try {
        const done = await wait(view, {
          until: (b) =>
            b.status.uidvalidity !== first && b.status.last_uid === 8 && b.status.state === "idle",
        });
        expect(done.status.messages_pending).toBe(0);
        expect(done.status.messages_ingested).toBe(8);
        const rows = await app.ctx.database.rows<{ uidvalidity: number; n: number; staged: number }>(
          sql`select uidvalidity::int8 as uidvalidity, count(*)::int as n,
                     count(*) filter (where raw is not null)::int as staged
              from mailbox_uids where mailbox_id = ${id} group by uidvalidity order by uidvalidity`,
        );
        expect(rows.map((r) => ({ n: r.n, staged: r.staged }))).toEqual([
          { n: 8, staged: 0 },
          { n: 8, staged: 0 },
        ]);
        expect((await imapMessages(app, p.id)).length).toBe(8);
        expect(await eventCount(app, p.id)).toBe(8);
      } finally {
        await source.stop();
        await app.request("DELETE", `/v1/mailboxes/${id}`, { apiKey: p.apiKey });
      }
    });

    test("polling finds new mail on a server without IDLE; a wrong password is reported and recovers after PATCH", async () => {
      const noIdle = await startDovecot({ idle: false });
      const p = await project();
      const source = await startSource(app);
      try {
        const created = await app.request("POST", "/v1/mailboxes", {
          apiKey: p.apiKey,
          body: {
            ...mailboxBody("INBOX"),
            port: noIdle.port,
            auth: { user: noIdle.user, password: "wrong" },
          },
        });
        const failing = await wait(
          async () =>
            (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).body,
          { until: (b) => b.status.state === "error" },
        );
        expect(failing.status.last_error).toMatch(/auth/i);
        await app.request("PATCH", `/v1/mailboxes/${created.body.id}`, {
          apiKey: p.apiKey,
          body: { auth: { user: noIdle.user, password: noIdle.password } },
        });
        await wait(
          async () =>
            (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).body,
          { until: (b) => b.status.state === "idle" && b.status.last_error === null },
        );
        await append(noIdle, "INBOX", [mail("polled")]);
        await wait(() => imapMessages(app, p.id), { until: (m) => m.length === 1 });
      } finally {
        await source.stop();
        await noIdle.stop();
      }
    });

    test("implicit TLS and STARTTLS connect with the server's certificate trusted", async () => {
      const p = await project();
      await createFolder("Tls");
      await append(dovecot, "Tls", [mail("over tls")]);
      const since = new Date(Date.now() - 3600 * 1000).toISOString();
      for (const [tls, port] of [
        ["implicit", dovecot.tlsPort],
        ["starttls", dovecot.port],
      ] as const) {
        await app.request("POST", "/v1/mailboxes", {
          apiKey: p.apiKey,
          body: { ...mailboxBody("Tls", { since }), name: tls, host: "localhost", tls, port },
        });
      }
      const source = await startSource(app, { tls: { ca: [dovecot.certPem] } });
      try {
        const boxes = await wait(
          async () => (await app.request("GET", "/v1/mailboxes", { apiKey: p.apiKey })).body.items,
          {
            until: (items: { status: { state: string; last_uid: number | null } }[]) =>
              items.every((m) => m.status.state === "idle" && m.status.last_uid === 1),
          },
        );
        expect(boxes.length).toBe(2);
        // the same bytes through two mailboxes: one message
        expect((await imapMessages(app, p.id)).length).toBe(1);
      } finally {
        await source.stop();
      }
    });
  });
}

describe("IMAP XOAUTH2", () => {
  test("an access token is sent with SASL XOAUTH2 and checked by the server (Dovecot's oauth2 passdb)", async () => {
    const tokens: string[] = [];
    const introspection = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const form = new URLSearchParams(await req.text());
        const token = form.get("token") ?? "";
        tokens.push(token);
        return Response.json(
          token === "good-token" ? { active: true, username: "alice" } : { active: false },
        );
      },
    });
    const d = await startDovecot({
      oauth2IntrospectionUrl: `http://127.0.0.1:${introspection.port}/introspect`,
    });
    const app = await createTestApp(testDbKinds()[0] ?? "pglite");
    const source = await createImapSource(FAST).start(app.ctx, new Intake(app.ctx, "imap"));
    try {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      const body = {
        name: "oauth",
        host: d.host,
        port: d.port,
        tls: "none",
        auth: { user: d.user, access_token: "bad-token" },
      };
      const created = await app.request("POST", "/v1/mailboxes", { apiKey: p.apiKey, body });
      await wait(
        async () => (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).body,
        { until: (b) => b.status.state === "error" },
      );
      await app.request("PATCH", `/v1/mailboxes/${created.body.id}`, {
        apiKey: p.apiKey,
        body: { auth: { user: d.user, access_token: "good-token" } },
      });
      await wait(
        async () => (await app.request("GET", `/v1/mailboxes/${created.body.id}`, { apiKey: p.apiKey })).body,
        { until: (b) => b.status.state === "idle" },
      );
      await append(d, "INBOX", [mail("oauth mail")]);
      await wait(() => imapMessages(app, p.id), { until: (m) => m.length === 1 });
      expect(tokens).toContain("bad-token");
      expect(tokens).toContain("good-token");
      const log = await Bun.file(join(d.dir, "dovecot.log")).text();
      expect(log).toContain("method=XOAUTH2");
    } finally {
      await source.stop();
      await app.close();
      await d.stop();
      introspection.stop(true);
    }
  });
});

describe.if(testDbKinds().includes("postgres"))("IMAP across processes (postgres)", () => {
  test("a serve process killed mid-backfill: another takes the mailbox over and every UID is ingested exactly once", async () => {
    const d = await startDovecot();
    const app = await createTestApp("postgres");
    let child: ReturnType<typeof Bun.spawn> | null = null;
    let source: RunningSource | null = null;
    try {
      const p = await app.newProject();
      await addRoute(app, p.apiKey);
      const total = 600;
      await append(
        d,
        "INBOX",
        Array.from({ length: total }, (_, i) => mail(`crash ${i}`)),
      );
      const created = await app.request("POST", "/v1/mailboxes", {
        apiKey: p.apiKey,
        body: {
          name: "crash",
          host: d.host,
          port: d.port,
          tls: "none",
          auth: { user: d.user, password: d.password },
          since: new Date(Date.now() - 3600 * 1000).toISOString(),
        },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const taken = async () =>
        Number(
          (
            await app.ctx.database.rows<{ n: number }>(
              sql`select count(*)::int as n from mailbox_uids where mailbox_id = ${id} and raw is null`,
            )
          )[0]?.n ?? 0,
        );
      child = Bun.spawn(["bun", "services/main.ts", "serve"], {
        cwd: REPO_ROOT,
        env: {
          ...process.env,
          PORT: "0",
          SMTP_PORT: "0",
          LOG_LEVEL: "warn",
          // the same DATA_DIR: its secrets key opens the mailbox's credential, its blob store is shared
          DATA_DIR: app.ctx.config.dataDir,
          DATABASE_URL: app.testDb.url ?? "",
          ALLOW_PRIVATE_ENDPOINTS: "true",
        },
        stdout: "ignore",
        stderr: "pipe",
      });
      await eventually("the serve process to be mid-backfill", taken, 60_000, {
        until: (n) => n >= 20,
        everyMs: 5,
      });
      child.kill("SIGKILL");
      await child.exited;
      const atKill = await taken();
      expect(atKill).toBeLessThan(total);
      // The dead process's lease runs out (30 s): fast-forwarded here instead of waited for.
      await app.ctx.database.rows(
        sql`update mailboxes set lease_until = now() - interval '1 second' where id = ${id}`,
      );
      source = await createImapSource({ ...FAST, owner: "survivor" }).start(
        app.ctx,
        new Intake(app.ctx, "imap"),
      );
      await eventually("every UID to be taken in", taken, 60_000, { until: (n) => n === total });
      const [counts] = await app.ctx.database.rows<{ messages: number; events: number; uids: number }>(
        sql`select (select count(*)::int from messages where project_id = ${p.id}) as messages,
                   (select count(*)::int from events where project_id = ${p.id}) as events,
                   (select count(distinct uid)::int from mailbox_uids where mailbox_id = ${id}) as uids`,
      );
      expect(counts).toEqual({ messages: total, events: total, uids: total });
      const view = await app.request("GET", `/v1/mailboxes/${id}`, { apiKey: p.apiKey });
      expect(view.body.status.last_uid).toBe(total);
    } finally {
      child?.kill("SIGKILL");
      await source?.stop();
      await app.close();
      await d.stop();
    }
  }, 120_000);
});
