/**
 * Request bodies (docs/api.md#basics): credentials are checked before a body is read, JSON bodies stop
 * at 1 MiB (413 `request.too_large`), a body that is not JSON is 415, and only `POST /v1/messages`
 * takes more. In-process, a request body is a stream that counts what was pulled from it, so "never
 * read" is a count of zero; over a real socket (the listener of services/http.ts), the same limits
 * hold for a declared `Content-Length` and for a chunked body that never ends.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { MAX_JSON_BODY_BYTES } from "../../services/api/body-limit.ts";
import { createHttpApp, httpSource } from "../../services/http.ts";
import { Intake } from "../../services/ingest/intake.ts";
import { createTestApp, TEST_SETUP_TOKEN, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { partsOf, rawRequest, repeated } from "../support/raw-http.ts";
import { buildMail } from "../support/raw-mail.ts";

const JSON_TYPE = { "content-type": "application/json" };
const enc = new TextEncoder();

/** The audit's body: 10 MB of nesting inside an otherwise ordinary endpoint. */
const NESTED = enc.encode(`{"url":${"[".repeat(5_000_000)}${"]".repeat(5_000_000)}}`);

/** 32 MiB of JSON whitespace, in 64 KiB parts, sent without a length: far past the limit. */
const SPACES = () => repeated(enc.encode(" ".repeat(65536)), 32 * 1024 * 1024);

/** `{"url": …}` padded with JSON whitespace to exactly `size` bytes: valid, and creates an endpoint. */
function endpointBodyOf(size: number): Uint8Array {
  const json = '{"url":"https://example.com/hook"}';
  return enc.encode(json.slice(0, -1) + " ".repeat(size - json.length) + json.slice(-1));
}

/** A request body that records how many bytes were pulled from it (pulled on demand only). */
function countingBody(parts: Iterable<Uint8Array>) {
  const read = { bytes: 0 };
  const it = parts[Symbol.iterator]();
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const next = it.next();
        if (next.done) return controller.close();
        read.bytes += next.value.byteLength;
        controller.enqueue(next.value);
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, read };
}

for (const kind of testDbKinds()) {
  describe(`request bodies, in-process (${kind})`, () => {
    let app: TestApp;
    let key: string;
    beforeAll(async () => {
      app = await createTestApp(kind);
      key = (await app.newProject()).apiKey;
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    async function send(path: string, headers: Record<string, string>, parts: Iterable<Uint8Array>) {
      const body = countingBody(parts);
      const init = { method: "POST", headers, body: body.stream, duplex: "half" } as RequestInit;
      const res = await app.api.handle(new Request(`http://localhost${path}`, init));
      const text = await res.text();
      return { status: res.status, body: JSON.parse(text), read: body.read.bytes };
    }

    test("counting bodies are read when a request is allowed (the spy works)", async () => {
      const r = await send("/v1/endpoints", { ...JSON_TYPE, "x-api-key": key }, partsOf(endpointBodyOf(100)));
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.read).toBe(100);
    });

    test.each([
      ["no key", {}, "auth.missing_api_key"],
      ["a wrong key", { "x-api-key": "mh_wrong" }, "auth.invalid_api_key"],
    ])("10 MB of nested JSON with %s is a 401 and not one byte of it is read", async (_, auth, code) => {
      for (const length of [{ "content-length": String(NESTED.byteLength) }, {}] as Record<
        string,
        string
      >[]) {
        const r = await send("/v1/endpoints", { ...JSON_TYPE, ...auth, ...length }, partsOf(NESTED));
        expect(r.status, JSON.stringify(r.body)).toBe(401);
        expect(r.body.error.code).toBe(code);
        expect(r.read).toBe(0);
      }
    });

    test("the operator route with a wrong setup token and a big body is a 401, the body unread", async () => {
      const headers = { ...JSON_TYPE, "x-setup-token": "wrong" };
      const r = await send("/v1/admin/projects", headers, partsOf(NESTED));
      expect(r.status, JSON.stringify(r.body)).toBe(401);
      expect(r.body.error.code).toBe("auth.invalid_setup_token");
      expect(r.read).toBe(0);
    });

    test("malformed JSON and U+0000 without credentials are 401, not 400/422", async () => {
      for (const body of ["{nope", '{"url":"http://x/\\u0000"}']) {
        const r = await app.request("POST", "/v1/endpoints", { rawBody: body, headers: JSON_TYPE });
        expect(r.status, r.text).toBe(401);
      }
    });

    test("2 MiB of JSON with a key is 413 request.too_large; a declared length is refused unread", async () => {
      const big = endpointBodyOf(2 * 1024 * 1024);
      const headers = { ...JSON_TYPE, "x-api-key": key, "content-length": String(big.byteLength) };
      const r = await send("/v1/endpoints", headers, partsOf(big));
      expect(r.status, JSON.stringify(r.body)).toBe(413);
      expect(r.body.error.code).toBe("request.too_large");
      expect(typeof r.body.error.message).toBe("string");
      expect(r.read).toBe(0);
    });

    test("32 MiB without a length is cut off just past 1 MiB", async () => {
      const r = await send("/v1/endpoints", { ...JSON_TYPE, "x-api-key": key }, SPACES());
      expect(r.status, JSON.stringify(r.body)).toBe(413);
      expect(r.body.error.code).toBe("request.too_large");
      expect(r.read).toBeLessThanOrEqual(MAX_JSON_BODY_BYTES + 65536);
    });

    test.each([MAX_JSON_BODY_BYTES - 1, MAX_JSON_BODY_BYTES])(
      "a %d-byte JSON body is accepted",
      async (size) => {
        const body = endpointBodyOf(size);
        for (const length of [{ "content-length": String(size) }, {}] as Record<string, string>[]) {
          const r = await send("/v1/endpoints", { ...JSON_TYPE, "x-api-key": key, ...length }, partsOf(body));
          expect(r.status, JSON.stringify(r.body)).toBe(201);
        }
      },
    );

    test("one byte over 1 MiB is 413", async () => {
      const r = await send(
        "/v1/endpoints",
        { ...JSON_TYPE, "x-api-key": key },
        partsOf(endpointBodyOf(MAX_JSON_BODY_BYTES + 1)),
      );
      expect(r.status, JSON.stringify(r.body)).toBe(413);
    });

    test("a form-encoded body is 415 on a JSON operation and creates nothing", async () => {
      const before = await app.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from projects`);
      const r = await app.request("POST", "/v1/admin/projects", {
        rawBody: "name=x",
        headers: { "x-setup-token": TEST_SETUP_TOKEN, "content-type": "application/x-www-form-urlencoded" },
      });
      expect(r.status, r.text).toBe(415);
      expect(r.body.error.code).toBe("request.unsupported_media_type");
      const after = await app.ctx.database.rows<{ n: number }>(sql`select count(*)::int as n from projects`);
      expect(after[0]?.n).toBe(before[0]?.n);
    });

    test("a key lookup that finds the database down is still a 503 service.unavailable", async () => {
      const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), {
        code: "ECONNREFUSED",
      });
      const database = new Proxy(app.ctx.database, {
        get: (target, prop) => (prop === "rows" ? () => Promise.reject(refused) : Reflect.get(target, prop)),
      });
      const down = createHttpApp({ ...app.ctx, database });
      const res = await down.handle(
        new Request("http://localhost/v1/endpoints", {
          method: "POST",
          headers: { ...JSON_TYPE, "x-api-key": key },
          body: '{"url":"https://example.com/hook"}',
        }),
      );
      expect(res.status, await res.clone().text()).toBe(503);
      expect((await res.json()).error.code).toBe("service.unavailable");
    });

    test("operations without a body still work with no body and no content type", async () => {
      const r = await app.request("POST", "/v1/signing-secrets", { apiKey: key });
      expect(r.status, r.text).toBe(201);
      const k = await app.request("POST", "/v1/project/api-keys", { apiKey: key, headers: JSON_TYPE });
      expect(k.status, k.text).toBe(201);
    });
  });

  describe(`request bodies over a socket (${kind})`, () => {
    let app: TestApp;
    let key: string;
    let listener: Awaited<ReturnType<typeof httpSource.start>>;
    beforeAll(async () => {
      app = await createTestApp(kind, { env: { HOST: "127.0.0.1" } });
      key = (await app.newProject()).apiKey;
      listener = await httpSource.start(app.ctx, new Intake(app.ctx, "api"));
    }, 60_000);
    afterAll(async () => {
      await listener?.stop();
      await app?.close();
    });

    const post = (path: string, headers: Record<string, string>, body: Parameters<typeof rawRequest>[4]) =>
      rawRequest(listener.port ?? 0, "POST", path, { ...JSON_TYPE, ...headers }, body);

    test("10 MB of nested JSON without a key is a 401 with the error body, declared or chunked", async () => {
      for (const framing of [{ contentLength: NESTED.byteLength }, { chunked: true }]) {
        const r = await post("/v1/endpoints", {}, { chunks: partsOf(NESTED), ...framing });
        expect(r.status, r.text).toBe(401);
        expect(JSON.parse(r.text).error.code).toBe("auth.missing_api_key");
      }
    });

    test("a wrong setup token with a big body is a 401", async () => {
      const r = await post(
        "/v1/admin/projects",
        { "x-setup-token": "wrong" },
        { chunks: partsOf(NESTED), chunked: true },
      );
      expect(r.status, r.text).toBe(401);
      expect(JSON.parse(r.text).error.code).toBe("auth.invalid_setup_token");
    });

    test("2 MiB declared is 413 request.too_large with the error body", async () => {
      const big = endpointBodyOf(2 * 1024 * 1024);
      const r = await post(
        "/v1/endpoints",
        { "x-api-key": key },
        { chunks: partsOf(big), contentLength: big.byteLength },
      );
      expect(r.status, r.text).toBe(413);
      expect(JSON.parse(r.text).error.code).toBe("request.too_large");
    });

    test("a 32 MiB chunked JSON body is cut off with 413 request.too_large", async () => {
      // The API's JSON 413 (the listener's own is bare), answered while the body was still being sent.
      const r = await post("/v1/endpoints", { "x-api-key": key }, { chunks: SPACES(), chunked: true });
      expect(r.status, r.text).toBe(413);
      expect(JSON.parse(r.text).error.code).toBe("request.too_large");
      expect(r.sent).toBeLessThan(32 * 1024 * 1024);
    });

    test("a 1 MiB - 1 byte body is accepted", async () => {
      const body = endpointBodyOf(MAX_JSON_BODY_BYTES - 1);
      const r = await post(
        "/v1/endpoints",
        { "x-api-key": key },
        { chunks: partsOf(body), contentLength: body.byteLength },
      );
      expect(r.status, r.text).toBe(201);
    });

    test("POST /v1/messages still takes a 20 MiB message", async () => {
      const line = `${"x".repeat(76)}\r\n`;
      const raw = buildMail({
        messageId: "<big.20@example.com>",
        text: line.repeat(Math.ceil((20 * 1024 * 1024) / line.length)),
      });
      const res = await fetch(`${listener.url}/v1/messages`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "message/rfc822" },
        body: raw,
      });
      const text = await res.text();
      expect(res.status, text).toBe(202);
      expect(JSON.parse(text).message_id).toBe("<big.20@example.com>");
    }, 60_000);
  });

  describe(`a configured JSON limit (${kind})`, () => {
    let app: TestApp;
    let key: string;
    beforeAll(async () => {
      app = await createTestApp(kind, { env: { API_MAX_JSON_BYTES: "4096" } });
      key = (await app.newProject()).apiKey;
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    test("API_MAX_JSON_BYTES sets the limit: 4,096 bytes pass, 4,097 are 413 naming it", async () => {
      for (const [size, status] of [
        [4096, 201],
        [4097, 413],
      ] as const) {
        const r = await app.request("POST", "/v1/endpoints", {
          apiKey: key,
          rawBody: new Blob([endpointBodyOf(size) as BlobPart]),
          headers: JSON_TYPE,
        });
        expect(r.status, r.text).toBe(status);
        if (status === 413) expect(r.body.error.message).toContain("4096-byte limit");
      }
    });
  });
}
