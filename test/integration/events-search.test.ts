/**
 * `GET /v1/events` with `q` (words in the subject, a From address or the Message-ID), `since` and
 * `until`, on both databases; and the dashboard's event list with the same search and a day range.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

function mail(from: string, subject: string, id: string): string {
  return [
    `From: ${from}`,
    "To: x@in.localhost",
    `Subject: ${subject}`,
    `Message-ID: <${id}>`,
    "MIME-Version: 1.0",
    "Content-Type: text/plain; charset=utf-8",
    "",
    "body",
    "",
  ].join("\r\n");
}

for (const kind of testDbKinds()) {
  describe(`event search (${kind})`, () => {
    let app: TestApp;
    let key: string;
    const ids = {} as Record<"invoice" | "receipt" | "hello", string>;

    beforeAll(async () => {
      app = await createTestApp(kind);
      const p = await app.newProject("search");
      key = p.apiKey;
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: key,
        body: { url: "https://hooks.example.com/in" },
      });
      const ss = await app.request("POST", "/v1/signing-secrets", { apiKey: key });
      await app.request("POST", "/v1/routes", {
        apiKey: key,
        body: { name: "all", endpoint_id: ep.body.id, signing_secret_kid: ss.body.kid },
      });
      for (const [name, from, subject, id] of [
        [
          "invoice",
          "Ada Billing <billing@acme.example>",
          "Invoice 2041 for November",
          "inv-2041@acme.example",
        ],
        ["receipt", "Shop <noreply@shop.example>", "Your receipt 99_1%", "rcpt-99@shop.example"],
        ["hello", "Grace <grace@example.org>", "Hello there", "hello-1@example.org"],
      ] as const) {
        const r = await app.request("POST", "/v1/messages", {
          apiKey: key,
          rawBody: mail(from, subject, id),
          headers: { "content-type": "message/rfc822" },
        });
        expect(r.status, r.text).toBe(202);
        ids[name] = r.body.events[0].id;
      }
      // the invoice's event is two days old
      await app.ctx.database.db.execute(
        sql`update events set created_at = now() - interval '2 days' where id = ${ids.invoice}`,
      );
    });
    afterAll(async () => {
      await app?.close();
    });

    async function found(query: string): Promise<string[]> {
      const r = await app.request("GET", `/v1/events?${query}`, { apiKey: key });
      expect(r.status, r.text).toBe(200);
      return r.body.items.map((e: { id: string }) => e.id).sort();
    }

    test("q finds words in the subject, the sender and the Message-ID, case-insensitively", async () => {
      expect(await found("q=invoice")).toEqual([ids.invoice]);
      expect(await found("q=NOVEMBER%202041")).toEqual([ids.invoice]);
      expect(await found("q=grace%40example.org")).toEqual([ids.hello]);
      expect(await found("q=Billing")).toEqual([ids.invoice]);
      expect(await found("q=rcpt-99")).toEqual([ids.receipt]);
      expect(await found("q=invoice%20hello")).toEqual([]);
    });

    test("% and _ in q are matched literally", async () => {
      expect(await found("q=99_1%25")).toEqual([ids.receipt]);
      expect(await found("q=%25")).toEqual([ids.receipt]);
      expect(await found("q=_")).toEqual([ids.receipt]);
    });

    test("since and until bound the creation time", async () => {
      const yesterday = new Date(Date.now() - 86_400_000).toISOString();
      expect(await found(`since=${yesterday}`)).toEqual([ids.hello, ids.receipt].sort());
      expect(await found(`until=${yesterday}`)).toEqual([ids.invoice]);
    });

    test("a bad since names the parameter", async () => {
      const r = await app.request("GET", "/v1/events?since=yesterday", { apiKey: key });
      expect(r.status).toBe(422);
      expect(r.body.error.details[0]).toMatchObject({ path: "/since" });
    });

    test("the dashboard's event list searches and filters by day", async () => {
      const call = async (path: string, init: RequestInit = {}) => {
        const res = await app.api.handle(new Request(`http://localhost${path}`, init));
        return { res, text: await res.text() };
      };
      const form = await call("/ui/sign-in");
      const anon = (form.res.headers.get("set-cookie") ?? "").split(";")[0] as string;
      const csrf = form.text.match(/name="_csrf" value="([^"]+)"/)?.[1] as string;
      const signedIn = await call("/ui/sign-in", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: anon },
        body: new URLSearchParams({ _csrf: csrf, api_key: key }),
      });
      const cookie = (signedIn.res.headers.get("set-cookie") ?? "").split(";")[0] as string;
      const searched = await call("/ui/events?q=invoice", { headers: { cookie } });
      expect(searched.text).toContain("Invoice 2041 for November");
      expect(searched.text).not.toContain("Hello there");
      const today = new Date().toISOString().slice(0, 10);
      const byDay = await call(`/ui/events?from=${today}&to=${today}`, { headers: { cookie } });
      expect(byDay.text).toContain("Hello there");
      expect(byDay.text).not.toContain("Invoice 2041 for November");
      expect(byDay.text).toContain(`name="from" value="${today}"`);
    });
  });
}
