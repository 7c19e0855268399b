/**
 * Attachment download URLs and the app proxy (spec: Endpoints, Errors, Limits; docs/api.md, docs/attachments.md), through
 * the real API in process, on both database kinds, with an injected clock.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { parse as parseDisposition } from "content-disposition";
import { sql } from "drizzle-orm";
import { manualClock } from "../../services/lib/clock.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { postMessage } from "../support/ingest.ts";
import { buildMail } from "../support/raw-mail.ts";
import { seedMessage } from "../support/seed-messages.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const sha = (b: Uint8Array | ArrayBuffer) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
/** 64 KiB of varied bytes, so ranges and hashes mean something. */
const FILE = Uint8Array.from({ length: 65_536 }, (_, i) => (i * 31 + (i >> 8)) & 0xff);
const MESSAGE_ID = "<a+b/c.d@mail.example>";

for (const kind of testDbKinds()) {
  describe(`attachment downloads (${kind})`, () => {
    const clock = manualClock(new Date("2026-03-01T12:00:00Z"));
    let app: TestApp;
    let project: { id: string; apiKey: string };
    let other: { id: string; apiKey: string };

    /** GET the URL endpoint for `att` of `messageId` (encoded here) with a query string. */
    const urlFor = (att = "att_0", query = "", messageId = MESSAGE_ID, apiKey = project.apiKey) =>
      app.request("GET", `/v1/messages/${encodeURIComponent(messageId)}/attachments/${att}/url${query}`, {
        apiKey,
      });
    /** A fresh URL's path (`/v1/attachments/<token>`). */
    const newPath = async (query = "", att = "att_0") => {
      const r = await urlFor(att, query);
      expect(r.status, r.text).toBe(200);
      return new URL(r.body.url).pathname;
    };
    /** The proxy through `app.handle`, body kept as bytes. */
    const fetchProxy = async (path: string, init: RequestInit = {}) => {
      const res = await app.api.handle(new Request(`http://localhost${path}`, init));
      const bytes = new Uint8Array(await res.arrayBuffer());
      // `text` is what an assertion failure prints: the start of the body only.
      const text = new TextDecoder().decode(bytes.subarray(0, 300));
      return { status: res.status, headers: res.headers, bytes, text };
    };
    const errorCode = (r: { text: string }) => JSON.parse(r.text).error.code as string;

    beforeAll(async () => {
      app = await createTestApp(kind, { clock });
      project = await app.newProject("downloads");
      other = await app.newProject("other");
      await seedMessage(app.ctx, {
        projectId: project.id,
        messageId: MESSAGE_ID,
        attachments: [
          { filename: "report.bin", contentType: "application/pdf", bytes: FILE },
          { filename: 'say "hi"\r\nX-Evil: 1.txt', contentType: "text/plain", bytes: enc("quotes") },
          { filename: "résumé 日本語.pdf", contentType: "application/pdf", bytes: enc("unicode") },
        ],
      });
      await seedMessage(app.ctx, {
        projectId: other.id,
        messageId: "<theirs@mail.example>",
        attachments: [{ filename: "secret.txt", bytes: enc("not yours") }],
      });
    }, 60_000);
    afterAll(() => app?.close());

    describe("URL endpoint", () => {
      test("issues a single-use app-proxy URL that expires in 900 s by default", async () => {
        const r = await urlFor();
        expect(r.status, r.text).toBe(200);
        expect(r.body.method).toBe("GET");
        expect(r.body.headers).toEqual({});
        expect(r.body.url).toMatch(/^http:\/\/127\.0\.0\.1:8080\/v1\/attachments\/[A-Za-z0-9_-]{43}$/);
        expect(r.body.expires_at).toBe(new Date(clock.now().getTime() + 900_000).toISOString());
      });

      test("stores the 256-bit token only as its SHA-256", async () => {
        const r = await urlFor();
        const token = r.body.url.split("/").pop() as string;
        expect(Buffer.from(token, "base64url").length).toBe(32);
        const rows = await app.ctx.database.rows<{ token_hash: string }>(
          sql`select token_hash from download_tokens where token_hash = ${sha(enc(token))}`,
        );
        expect(rows.length).toBe(1);
        const leaked = await app.ctx.database.rows(
          sql`select 1 from download_tokens where token_hash = ${token} or attachment_id = ${token}`,
        );
        expect(leaked.length).toBe(0);
      });

      test("issues a multi-use URL that expires in 300 s by default", async () => {
        const r = await urlFor("att_0", "?multi_use=true");
        expect(r.status, r.text).toBe(200);
        expect(r.body.expires_at).toBe(new Date(clock.now().getTime() + 300_000).toISOString());
      });

      test.each([
        ["1", 300],
        ["true", 300],
        ["0", 900],
        ["false", 900],
      ])("accepts multi_use=%s", async (value, lifetime) => {
        const r = await urlFor("att_0", `?multi_use=${value}`);
        expect(r.status, r.text).toBe(200);
        expect(Date.parse(r.body.expires_at) - clock.now().getTime()).toBe(lifetime * 1000);
      });

      test.each([
        ["59", 422],
        ["60", 200],
        ["86400", 200],
        ["86401", 422],
        ["abc", 422],
        ["60.5", 422],
      ])("ttl_seconds=%s gives %i", async (ttl, status) => {
        const r = await urlFor("att_0", `?ttl_seconds=${ttl}`);
        expect(r.status, r.text).toBe(status);
        if (status === 200) {
          expect(r.body.expires_at).toBe(new Date(clock.now().getTime() + Number(ttl) * 1000).toISOString());
        } else {
          expect(r.body.error.code).toBe("request.invalid");
          expect(r.body.error.details.map((d: { path: string }) => d.path)).toEqual(["/ttl_seconds"]);
        }
      });

      test("refuses multi_use values other than true/false/1/0 with 422 at /multi_use", async () => {
        const r = await urlFor("att_0", "?multi_use=yes");
        expect(r.status, r.text).toBe(422);
        expect(r.body.error.details[0].path).toBe("/multi_use");
      });

      test("finds a Message-ID with <, >, @, + and / URL-encoded, and without its brackets", async () => {
        expect(encodeURIComponent(MESSAGE_ID)).toBe("%3Ca%2Bb%2Fc.d%40mail.example%3E");
        expect((await urlFor("att_0", "", MESSAGE_ID)).status).toBe(200);
        const bare = await urlFor("att_0", "", "a+b/c.d@mail.example");
        expect(bare.status, bare.text).toBe(200);
      });

      test("an unknown Message-ID is 404 messages.not_found", async () => {
        const r = await urlFor("att_0", "", "<nope@mail.example>");
        expect(r.status, r.text).toBe(404);
        expect(r.body.error.code).toBe("messages.not_found");
      });

      test("another project's message is 404 messages.not_found, like a missing one", async () => {
        const r = await urlFor("att_0", "", "<theirs@mail.example>");
        expect(r.status, r.text).toBe(404);
        expect(r.body.error.code).toBe("messages.not_found");
      });

      test("an unknown attachment id is 404 attachments.not_found", async () => {
        const r = await urlFor("att_99");
        expect(r.status, r.text).toBe(404);
        expect(r.body.error.code).toBe("attachments.not_found");
      });

      test("requires the project API key", async () => {
        const r = await app.request(
          "GET",
          `/v1/messages/${encodeURIComponent(MESSAGE_ID)}/attachments/att_0/url`,
        );
        expect(r.status, r.text).toBe(401);
        expect(r.body.error.code).toBe("auth.missing_api_key");
      });

      test("never guesses among several stored messages with the same Message-ID and attachment id", async () => {
        // The newest was once picked, which let anyone reusing a Message-ID swap the file
        // (attachments-message-id.test.ts has the attack end to end).
        const id = "<resent@mail.example>";
        const at = clock.now().getTime();
        const pks: string[] = [];
        for (const [n, ago] of [
          ["older", 60_000],
          ["newest", 1_000],
          ["middle", 30_000],
        ] as const) {
          const seeded = await seedMessage(app.ctx, {
            projectId: project.id,
            messageId: id,
            receivedAt: new Date(at - ago),
            attachments: [{ filename: `${n}.txt`, bytes: enc(n) }],
          });
          pks.push(seeded.pk);
        }
        const r = await urlFor("att_0", "", id);
        expect(r.status, r.text).toBe(409);
        expect(r.body.error.code).toBe("messages.ambiguous");
        // oldest first
        const [older, newest, middle] = pks;
        expect(r.body.error.details.map((d: { message: string }) => d.message)).toEqual([
          older,
          middle,
          newest,
        ]);
      });
    });

    describe("proxy", () => {
      test("serves an attachment ingested through POST /v1/messages byte for byte", async () => {
        const pdf = Uint8Array.from([...enc("%PDF-1.4\n"), ...FILE.subarray(0, 20_000)]);
        const raw = buildMail({
          messageId: "<ingested+1/x@mail.example>",
          attachments: [{ filename: "Invoice “März”.pdf", contentType: "application/pdf", content: pdf }],
        });
        const posted = await postMessage(app, project.apiKey, raw);
        expect(posted.status, posted.text).toBe(202);
        const id = encodeURIComponent(posted.body.message_id);
        const [row] = await app.ctx.database.rows<{ attachment_id: string; filename: string }>(
          sql`select attachment_id, filename from attachments a join messages m on m.id = a.message_pk
              where m.message_id = ${posted.body.message_id}`,
        );
        const r = await app.request("GET", `/v1/messages/${id}/attachments/${row?.attachment_id}/url`, {
          apiKey: project.apiKey,
        });
        expect(r.status, r.text).toBe(200);
        const dl = await fetchProxy(new URL(r.body.url).pathname);
        expect(dl.status, dl.text).toBe(200);
        expect(sha(dl.bytes)).toBe(sha(pdf));
        expect(parseDisposition(dl.headers.get("content-disposition") ?? "").parameters.filename).toBe(
          row?.filename ?? "",
        );
        expect(row?.filename).toContain("März");
      });

      test("downloads the original bytes with the spec's headers, without an API key", async () => {
        const dl = await fetchProxy(await newPath());
        expect(dl.status, dl.text).toBe(200);
        expect(sha(dl.bytes)).toBe(sha(FILE));
        expect(dl.headers.get("content-length")).toBe(String(FILE.length));
        expect(dl.headers.get("content-type")).toBe("application/pdf");
        expect(dl.headers.get("content-disposition")).toBe(
          "attachment; filename=\"report.bin\"; filename*=UTF-8''report.bin",
        );
        expect(dl.headers.get("x-content-type-options")).toBe("nosniff");
        expect(dl.headers.get("cache-control")).toBe("no-store");
        expect(dl.headers.get("accept-ranges")).toBe("bytes");
      });

      test("ignores an X-API-Key header, even a wrong one", async () => {
        const dl = await fetchProxy(await newPath(), { headers: { "x-api-key": "mh_wrong" } });
        expect(dl.status, dl.text).toBe(200);
      });

      test("a single-use URL works once, then 410 attachments.reused", async () => {
        const path = await newPath();
        expect((await fetchProxy(path)).status).toBe(200);
        const again = await fetchProxy(path);
        expect(again.status, again.text).toBe(410);
        expect(errorCode(again)).toBe("attachments.reused");
      });

      test("a multi-use URL works repeatedly until it expires", async () => {
        const path = await newPath("?multi_use=true");
        for (let i = 0; i < 3; i++) expect((await fetchProxy(path)).status).toBe(200);
      });

      test("of 50 concurrent first requests to a single-use URL exactly one gets the bytes", async () => {
        const path = await newPath();
        const results = await Promise.all(Array.from({ length: 50 }, () => fetchProxy(path)));
        const ok = results.filter((r) => r.status === 200);
        expect(ok.length).toBe(1);
        expect(sha(ok[0]?.bytes ?? new Uint8Array())).toBe(sha(FILE));
        const rest = results.filter((r) => r.status !== 200);
        expect(rest.map((r) => `${r.status} ${errorCode(r)}`)).toEqual(
          Array(49).fill("410 attachments.reused"),
        );
      });

      test("expires at expires_at by the injected clock: 410 attachments.expired", async () => {
        const r = await urlFor("att_0", "?multi_use=true&ttl_seconds=60");
        const path = new URL(r.body.url).pathname;
        const single = await newPath("?ttl_seconds=60");
        const start = clock.now().getTime();
        try {
          clock.advance(59_999);
          expect((await fetchProxy(path)).status).toBe(200);
          clock.advance(1);
          for (const p of [path, single]) {
            const dl = await fetchProxy(p);
            expect(dl.status, dl.text).toBe(410);
            expect(errorCode(dl)).toBe("attachments.expired");
          }
        } finally {
          clock.set(new Date(start));
        }
      });

      test("an unknown or malformed token is 404 attachments.not_found", async () => {
        for (const token of ["A".repeat(43), "short", "x".repeat(200)]) {
          const dl = await fetchProxy(`/v1/attachments/${token}`);
          expect(dl.status, dl.text).toBe(404);
          expect(errorCode(dl)).toBe("attachments.not_found");
        }
      });

      test.each([
        ["bytes=2-5", 2, 5],
        ["bytes=65000-", 65_000, 65_535],
        ["bytes=-100", 65_436, 65_535],
        ["bytes=100-999999", 100, 65_535],
      ])("Range %s gives 206 with Content-Range", async (range, start, end) => {
        const dl = await fetchProxy(await newPath("?multi_use=true"), { headers: { range } });
        expect(dl.status, dl.text).toBe(206);
        expect(dl.headers.get("content-range")).toBe(`bytes ${start}-${end}/${FILE.length}`);
        expect(dl.headers.get("content-length")).toBe(String(end - start + 1));
        expect(sha(dl.bytes)).toBe(sha(FILE.subarray(start, end + 1)));
      });

      test("a ranged GET consumes a single-use URL", async () => {
        const path = await newPath();
        expect((await fetchProxy(path, { headers: { range: "bytes=0-0" } })).status).toBe(206);
        expect((await fetchProxy(path)).status).toBe(410);
      });

      test.each(["bytes=5-2", "bytes=abc", "bytes=1-2x", "bytes="])(
        "a malformed Range (%s) is 400 attachments.range_invalid and does not burn the URL",
        async (range) => {
          const path = await newPath();
          const dl = await fetchProxy(path, { headers: { range } });
          expect(dl.status, dl.text).toBe(400);
          expect(errorCode(dl)).toBe("attachments.range_invalid");
          expect((await fetchProxy(path)).status).toBe(200);
        },
      );

      test("a Range outside the file is 416 with Content-Range bytes */size and does not burn the URL", async () => {
        const path = await newPath();
        for (const range of ["bytes=65536-", "bytes=-0"]) {
          const dl = await fetchProxy(path, { headers: { range } });
          expect(dl.status, dl.text).toBe(416);
          expect(errorCode(dl)).toBe("attachments.range_not_satisfiable");
          expect(dl.headers.get("content-range")).toBe(`bytes */${FILE.length}`);
        }
        expect((await fetchProxy(path)).status).toBe(200);
      });

      test("HEAD gives the headers and length without a body and does not consume a single-use URL", async () => {
        const path = await newPath();
        for (let i = 0; i < 2; i++) {
          const head = await fetchProxy(path, { method: "HEAD" });
          expect(head.status, head.text).toBe(200);
          expect(head.bytes.length).toBe(0);
          expect(head.headers.get("content-length")).toBe(String(FILE.length));
          expect(head.headers.get("content-disposition")).toContain("attachment");
        }
        expect((await fetchProxy(path)).status).toBe(200);
        const after = await fetchProxy(path, { method: "HEAD" });
        expect(after.status).toBe(410);
      });

      test("HEAD with a Range reports the partial length", async () => {
        const head = await fetchProxy(await newPath(), { method: "HEAD", headers: { range: "bytes=0-9" } });
        expect(head.status).toBe(206);
        expect(head.headers.get("content-length")).toBe("10");
        expect(head.headers.get("content-range")).toBe(`bytes 0-9/${FILE.length}`);
      });

      test.each([
        ["att_1", "say _hi___X-Evil: 1.txt", 'say "hi"__X-Evil: 1.txt'],
        ["att_2", "resume ___.pdf", "résumé 日本語.pdf"],
      ])(
        "filename of %s survives in Content-Disposition (quotes, CR/LF, non-ASCII)",
        async (att, ascii, name) => {
          const dl = await fetchProxy(await newPath("", att));
          expect(dl.status, dl.text).toBe(200);
          const header = dl.headers.get("content-disposition") ?? "";
          expect(header).not.toMatch(/[\r\n]/);
          const parsed = parseDisposition(header);
          expect(parsed.type).toBe("attachment");
          expect(parsed.parameters.filename).toBe(name);
          expect(header).toContain(`filename="${ascii}"`);
          expect(header).toContain("filename*=UTF-8''");
        },
      );
    });
  });
}
