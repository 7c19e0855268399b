// The Messages API read endpoints: list with full-text search, filters and cursor pages; one message by
// msg_ id or URL-encoded Message-ID (409 when several share it); the raw bytes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { drainSearchQueue, startSearchIndexer } from "../../services/resources/message-search-index.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { addRoute, postMessage } from "../support/ingest.ts";
import { buildMail, TINY_PNG } from "../support/raw-mail.ts";

for (const kind of testDbKinds()) {
  describe(`Messages API: reading (${kind})`, () => {
    let app: TestApp;
    let p: { id: string; apiKey: string };
    let other: { id: string; apiKey: string };
    const raws: Uint8Array[] = [];
    beforeAll(async () => {
      app = await createTestApp(kind);
      p = await app.newProject();
      other = await app.newProject("other");
      await addRoute(app, p.apiKey);
      const specs = [
        {
          subject: "Invoice 1001 for March",
          from: "Billing <billing@acme.test>",
          text: "Please pay the invoice by Friday.",
        },
        {
          subject: "Lunch?",
          from: "Carol <carol@example.com>",
          to: "team@example.org",
          text: "Pizza or sushi today",
        },
        {
          subject: "Report attached",
          from: "Dave <dave@example.com>",
          text: "Quarterly numbers inside, see the chart.",
          attachments: [{ filename: "chart.png", contentType: "image/png", content: TINY_PNG }],
        },
        {
          subject: "Rechnung Nr. 77",
          from: "Buchhaltung <buchhaltung@firma.test>",
          text: "Bitte überweisen Sie den Betrag.",
        },
      ];
      for (const spec of specs) {
        const raw = buildMail(spec);
        raws.push(raw);
        const r = await postMessage(app, p.apiKey, raw);
        if (r.status !== 202) throw new Error(r.text);
        await Bun.sleep(5); // distinct received_at
      }
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    const list = (query: string, apiKey = p.apiKey) => app.request("GET", `/v1/messages${query}`, { apiKey });

    test("lists newest first with the summary fields", async () => {
      const r = await list("");
      expect(r.status).toBe(200);
      expect(r.body.items.map((m: { subject: string }) => m.subject)).toEqual([
        "Rechnung Nr. 77",
        "Report attached",
        "Lunch?",
        "Invoice 1001 for March",
      ]);
      const report = r.body.items[1];
      expect(report).toMatchObject({
        source_type: "api",
        from: [{ email: "dave@example.com", name: "Dave" }],
        attachments_count: 1,
      });
      expect(report.id).toMatch(/^msg_/);
      expect(report.message_id).toMatch(/^<.*>$/);
      expect(report.size_bytes).toBe(raws[2]?.byteLength);
      expect(report.events).toHaveLength(1);
      expect(report.events[0]).toMatchObject({
        status: expect.any(String),
        route_id: expect.stringMatching(/^rt_/),
      });
      expect(r.body.next_cursor).toBeNull();
      expect((await list("", other.apiKey)).body.items).toEqual([]);
    });

    const subjects = async (query: string) =>
      (await list(query)).body.items.map((m: { subject: string }) => m.subject);

    test("q searches subject, addresses and text; filters narrow by from, to, subject and time", async () => {
      expect(await subjects("?q=invoice")).toEqual(["Invoice 1001 for March"]);
      expect(await subjects("?q=sushi")).toEqual(["Lunch?"]);
      expect(await subjects("?q=betrag")).toEqual(["Rechnung Nr. 77"]);
      expect(await subjects(`?q=${encodeURIComponent("carol@example.com")}`)).toEqual(["Lunch?"]);
      expect(await subjects(`?q=${encodeURIComponent('"quarterly numbers"')}`)).toEqual(["Report attached"]);
      expect(await subjects("?q=nothing-like-this")).toEqual([]);
      expect(await subjects("?from=example.com")).toEqual(["Report attached", "Lunch?"]);
      expect(await subjects("?to=team@example.org")).toEqual(["Lunch?"]);
      expect(await subjects("?subject=rechnung")).toEqual(["Rechnung Nr. 77"]);
      expect(await subjects("?subject=100%25")).toEqual([]);
      const all = (await list("")).body.items;
      const middle = all[2].received_at;
      expect(await subjects(`?until=${encodeURIComponent(middle)}`)).toEqual([
        "Lunch?",
        "Invoice 1001 for March",
      ]);
      expect(await subjects(`?since=${encodeURIComponent(middle)}`)).toEqual([
        "Rechnung Nr. 77",
        "Report attached",
        "Lunch?",
      ]);
      const bad = await list("?since=yesterday");
      expect(bad.status).toBe(422);
      expect(bad.body.error.details[0].path).toBe("/since");
    });

    test("search finds messages before and after the background indexer has indexed them", async () => {
      const queued = async () =>
        Number(
          (
            await app.ctx.database.rows<{ n: number }>(
              sql`select count(*)::int as n from message_search_queue`,
            )
          )[0]?.n,
        );
      // Stored messages wait in the queue (the test app runs no indexer): found by evaluating them.
      expect(await queued()).toBeGreaterThanOrEqual(4);
      expect(await subjects("?q=sushi")).toEqual(["Lunch?"]);
      expect(await drainSearchQueue(app.ctx.database)).toBeGreaterThanOrEqual(4);
      expect(await queued()).toBe(0);
      const documents = await app.ctx.database.rows<{ n: number }>(
        sql`select count(*)::int as n from message_search s join messages m on m.id = s.message_pk
            where m.project_id = ${p.id}`,
      );
      expect(Number(documents[0]?.n)).toBe(4);
      // The same answers from the index alone.
      expect(await subjects("?q=invoice")).toEqual(["Invoice 1001 for March"]);
      expect(await subjects("?q=sushi")).toEqual(["Lunch?"]);
      expect(await subjects(`?q=${encodeURIComponent("carol@example.com")}`)).toEqual(["Lunch?"]);
      expect(await subjects(`?q=${encodeURIComponent('"quarterly numbers"')}`)).toEqual(["Report attached"]);
      expect(await subjects("?q=nothing-like-this")).toEqual([]);
      // Another project's search never sees them.
      const r = await list("?q=sushi", other.apiKey);
      expect(r.body.items).toEqual([]);
    });

    test("the full-text condition is served by the GIN index", async () => {
      const plan = await app.ctx.database.db.transaction(async (tx) => {
        await tx.execute(sql`set local enable_seqscan = off`);
        const r = (await tx.execute(
          sql`explain select message_pk from message_search where document @@ websearch_to_tsquery('simple', 'invoice')`,
        )) as unknown as { rows?: Record<string, string>[] } & Record<string, string>[];
        const rows = r.rows ?? r;
        return rows.map((row) => Object.values(row).join(" ")).join("\n");
      });
      expect(plan).toContain("message_search_document_idx");
    });

    test("the background indexer empties the queue", async () => {
      await addRoute(app, other.apiKey);
      const raw = buildMail({ subject: "Indexed in the background", text: "walrus" });
      expect((await postMessage(app, other.apiKey, raw)).status).toBe(202);
      const indexer = startSearchIndexer(app.ctx, { tickMs: 10, maxDeferralMs: 50 });
      try {
        for (let i = 0; i < 500; i++) {
          const rows = await app.ctx.database.rows<{ n: number }>(
            sql`select count(*)::int as n from message_search_queue`,
          );
          if (Number(rows[0]?.n) === 0) break;
          await Bun.sleep(10);
        }
      } finally {
        await indexer.stop();
      }
      const doc = await app.ctx.database.rows<{ n: number }>(
        sql`select count(*)::int as n from message_search s join messages m on m.id = s.message_pk
            where m.parsed ->> 'subject' = 'Indexed in the background'`,
      );
      expect(Number(doc[0]?.n)).toBe(1);
      const found = await list("?q=walrus", other.apiKey);
      expect(found.body.items.map((m: { subject: string }) => m.subject)).toEqual([
        "Indexed in the background",
      ]);
    });

    test("a common phrase pages newest first, each match once, the words in another order left out", async () => {
      const q = await app.newProject("phrases");
      await addRoute(app, q.apiKey);
      const expected: string[] = [];
      for (let i = 0; i < 9; i++) {
        // every third message has the words but not the phrase
        const phrase = i % 3 !== 2;
        const subject = `whale note ${i}`;
        const text = phrase ? "we saw a blue whale today" : "the whale was not blue";
        const r = await postMessage(app, q.apiKey, buildMail({ subject, text }));
        if (r.status !== 202) throw new Error(r.text);
        if (phrase) expected.unshift(subject);
        await Bun.sleep(5); // distinct received_at
      }
      await drainSearchQueue(app.ctx.database);
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const r: Awaited<ReturnType<typeof list>> = await list(
          `?q=${encodeURIComponent('"blue whale"')}&limit=2${cursor ? `&cursor=${cursor}` : ""}`,
          q.apiKey,
        );
        expect(r.status).toBe(200);
        seen.push(...r.body.items.map((m: { subject: string }) => m.subject));
        cursor = r.body.next_cursor;
      } while (cursor);
      expect(seen).toEqual(expected);
      expect(seen).toHaveLength(6);
    });

    test("cursor pages cover every message once", async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const r: Awaited<ReturnType<typeof list>> = await list(
          `?limit=3${cursor ? `&cursor=${cursor}` : ""}`,
        );
        seen.push(...r.body.items.map((m: { id: string }) => m.id));
        cursor = r.body.next_cursor;
      } while (cursor);
      expect(seen).toHaveLength(4);
      expect(new Set(seen).size).toBe(4);
      expect((await list("?cursor=garbage")).body.error.code).toBe("request.invalid");
    });

    test("one message by msg_ id or by URL-encoded Message-ID, and its raw bytes", async () => {
      const [first] = (await list("?q=report")).body.items;
      const byPk = await app.request("GET", `/v1/messages/${first.id}`, { apiKey: p.apiKey });
      expect(byPk.status).toBe(200);
      expect(byPk.body).toMatchObject({ id: first.id, subject: "Report attached", attachments_count: 1 });
      expect(byPk.body.text).toContain("Quarterly numbers");
      expect(byPk.body.headers.subject).toBe("Report attached");
      expect(byPk.body.attachments[0]).toMatchObject({ filename: "chart.png" });
      expect(typeof byPk.body.mail).toBe("object");
      const byMid = await app.request("GET", `/v1/messages/${encodeURIComponent(first.message_id)}`, {
        apiKey: p.apiKey,
      });
      expect(byMid.body.id).toBe(first.id);
      const raw = await app.api.handle(
        new Request(`http://localhost/v1/messages/${first.id}/raw`, { headers: { "x-api-key": p.apiKey } }),
      );
      expect(raw.status).toBe(200);
      expect(raw.headers.get("content-type")).toBe("message/rfc822");
      expect(Buffer.from(await raw.arrayBuffer()).equals(Buffer.from(raws[2] as Uint8Array))).toBe(true);
      const elsewhere = await app.request("GET", `/v1/messages/${first.id}`, { apiKey: other.apiKey });
      expect(elsewhere.status).toBe(404);
      expect(elsewhere.body.error.code).toBe("messages.not_found");
    });

    test("a Message-ID shared by messages with different bytes is 409 messages.ambiguous listing them", async () => {
      const shared = "<shared-id@test.example>";
      const a = await postMessage(app, p.apiKey, buildMail({ messageId: shared, subject: "copy a" }));
      const b = await postMessage(app, p.apiKey, buildMail({ messageId: shared, subject: "copy b" }));
      expect([a.status, b.status]).toEqual([202, 202]);
      const r = await app.request("GET", `/v1/messages/${encodeURIComponent(shared)}`, { apiKey: p.apiKey });
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe("messages.ambiguous");
      const ids = r.body.error.details.map((d: { message: string }) => d.message);
      expect(ids).toHaveLength(2);
      const one = await app.request("GET", `/v1/messages/${ids[1]}/raw`, { apiKey: p.apiKey });
      expect(one.status).toBe(200);
      expect(one.text).toContain("copy b");
    });
  });
}
