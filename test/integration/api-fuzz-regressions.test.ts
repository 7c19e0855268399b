/**
 * Requests the API fuzzer (tools/chaos/fuzz-api.ts) once answered with a 500, replayed as they were
 * found (`test/fixtures/fuzz/api/*.json`): each must now get a documented error body (docs/api.md#errors), never a 500.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ERROR_STATUS } from "../../services/lib/errors.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

const DIR = join(import.meta.dir, "../fixtures/fuzz/api");
const cases = readdirSync(DIR)
  .filter((f) => f.endsWith(".json"))
  .map((f) => ({ file: f, ...JSON.parse(readFileSync(join(DIR, f), "utf8")) }));
const [kind] = testDbKinds();

describe(`API fuzz regressions on ${kind}`, () => {
  let app: TestApp;
  let key: string;
  beforeAll(async () => {
    app = await createTestApp(kind ?? "pglite");
    key = (await app.newProject()).apiKey;
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  test.each(cases)("$file: answered with a documented error, not a 500", async (c) => {
    const res = await app.request(c.method, c.url, {
      apiKey: key,
      ...(c.body === null ? {} : { rawBody: c.body }),
      headers: c.contentType ? { "content-type": c.contentType } : {},
    });
    expect(res.status, res.text).toBeLessThan(500);
    if (res.status >= 400) {
      expect(Object.keys(ERROR_STATUS)).toContain(res.body.error.code);
      expect(typeof res.body.error.message).toBe("string");
    }
  });

  test("a body nested deeper than MAX_BODY_DEPTH (200) levels is a 422 request.invalid, on every JSON operation", async () => {
    const deep = `${"[".repeat(5000)}1${"]".repeat(5000)}`;
    for (const [path, body] of [
      ["/v1/routes", `{"rule":${deep}}`],
      ["/v1/endpoints", `{"url":${deep}}`],
      ["/v1/mapper/preview", `{"config":{"version":"v1","output":1},"meta":${deep}}`],
    ] as const) {
      const res = await app.request("POST", path, {
        apiKey: key,
        rawBody: body,
        headers: { "content-type": "application/json" },
      });
      expect(res.status, res.text).toBe(422);
      expect(res.body.error.code).toBe("request.invalid");
    }
  });

  test.each([
    ["GET", "/v1/endpoints/%00"],
    ["DELETE", "/v1/routes/a%00b"],
    ["DELETE", "/v1/project/api-keys/%00"],
    ["DELETE", "/v1/signing-secrets/%00"],
    ["GET", "/v1/messages/%00/attachments/x/url"],
    ["GET", "/v1/events?route_id=%00"],
    ["POST", "/v1/endpoints", { url: "http://example.com/\u0000" }],
    ["POST", "/v1/mapper/preview", { config: { version: "v1", output: 1 }, message_id: "\u0000" }],
  ] as [string, string, unknown?][])(
    "U+0000 in %s %s is a 422 request.invalid (Postgres text cannot hold it)",
    async (method, url, body?) => {
      const res = await app.request(method, url, { apiKey: key, ...(body ? { body } : {}) });
      expect(res.status, res.text).toBe(422);
      expect(res.body.error.code).toBe("request.invalid");
    },
  );

  test.each(["valueOf", "constructor", "__proto__", "toString", "hasOwnProperty"])(
    "GET /v1/schemas/transform/%s is a 404, not an Object.prototype member",
    async (name) => {
      const res = await app.request("GET", `/v1/schemas/transform/${name}`);
      expect(res.status, res.text).toBe(404);
      expect(res.body.error.code).toBe("request.not_found");
    },
  );

  test("a body object with an own toString key is a 422 request.invalid (Elysia formats failing values as strings)", async () => {
    for (const [path, body] of [
      ["/v1/endpoints", '{"url":{"toString":"x"}}'],
      ["/v1/routes", '{"name":"r","endpoint_id":"e","signing_secret_kid":[{"toString":1}]}'],
    ] as const) {
      const res = await app.request("POST", path, {
        apiKey: key,
        rawBody: body,
        headers: { "content-type": "application/json" },
      });
      expect(res.status, res.text).toBe(422);
      expect(res.body.error.code).toBe("request.invalid");
    }
  });
});
