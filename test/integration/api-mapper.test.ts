/** The mapper over HTTP: validate, preview (inline model, raw message, stored message) and the schemas. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

const [kind] = testDbKinds();

describe(`mapper API on ${kind}`, () => {
  let app: TestApp;
  let key: string;
  beforeAll(async () => {
    app = await createTestApp(kind ?? "pglite");
    key = (await app.newProject()).apiKey;
  });
  afterAll(async () => {
    await app?.close();
  });

  const config = {
    version: "v1",
    vars: [{ name: "sender", expr: { var: "message.from[0].email" } }],
    output: {
      subject: { "string.upper": { var: "message.subject" } },
      sender: { var: "vars.sender" },
      project: { var: "ctx.project_id" },
    },
  };

  test("validate accepts a good config", async () => {
    const r = await app.request("POST", "/v1/mapper/validate", { apiKey: key, body: { config } });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({ valid: true, warnings: [] });
  });

  test.each([
    [{ version: "v2", output: {} }, "/config/version"],
    [{ version: "v1", output: { x: { "string.reverse": "a" } } }, "/config/output/x"],
    [{ version: "v1", output: 1, extra: true }, "/config"],
    [{ version: "v1", vars: [{ name: "1bad", expr: 1 }], output: 1 }, "/config/vars/0/name"],
  ])("validate rejects %p with a path under %s", async (bad, path) => {
    const r = await app.request("POST", "/v1/mapper/validate", { apiKey: key, body: { config: bad } });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.code).toBe("mapper.invalid_config");
    expect(
      r.body.error.details.some((d: { path: string }) => d.path.startsWith(path)),
      r.text,
    ).toBe(true);
  });

  test("validate needs an API key", async () => {
    const r = await app.request("POST", "/v1/mapper/validate", { body: { config } });
    expect(r.status).toBe(401);
  });

  test("preview runs on an inline message model", async () => {
    const r = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config, message: { subject: "Invoice 42", from: [{ email: "a@b.example", name: "A" }] } },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.output).toMatchObject({ subject: "INVOICE 42", sender: "a@b.example" });
    expect(r.body.output.project).toStartWith("prj_");
  });

  test("preview parses a raw RFC 5322 message", async () => {
    const raw =
      "From: Zoë <ZOE@Example.com>\r\nTo: x@in.localhost\r\nSubject: =?UTF-8?B?SMOpbGxv?=\r\nMessage-ID: <m1@example.com>\r\n\r\nbody\r\n";
    const r = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config, message_raw: raw },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.output).toMatchObject({ subject: "HÉLLO", sender: "zoe@example.com" });
  });

  test("preview sees meta as delivery does (source, raw size, received at), with the request's meta over it", async () => {
    const raw =
      "From: a@example.com\r\nTo: b@example.com\r\nSubject: meta\r\nMessage-ID: <meta-1@example.com>\r\n\r\nhi\r\n";
    const posted = await app.request("POST", "/v1/messages", {
      apiKey: key,
      rawBody: raw,
      headers: { "content-type": "message/rfc822" },
    });
    expect(posted.status, posted.text).toBe(202);
    const metaOf = { version: "v1", output: { var: "meta" } };
    const r = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config: metaOf, message_id: "<meta-1@example.com>" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.body.output).toEqual({
      source: "api",
      raw_size_bytes: new TextEncoder().encode(raw).length,
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    const withMeta = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config: metaOf, message_id: "<meta-1@example.com>", meta: { source: "test", extra: 1 } },
    });
    expect(withMeta.body.output).toMatchObject({
      source: "test",
      extra: 1,
      raw_size_bytes: r.body.output.raw_size_bytes,
    });
  });

  test("preview with more than one message source is 422 request.invalid", async () => {
    const r = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config, message: { subject: "x" }, message_id: "<a@b>" },
    });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.code).toBe("request.invalid");
    expect(r.body.error.details[0].path).toBe("/message_id");
    // A null is an absent field, not a second source.
    const nulled = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config, message: null, message_id: "<nobody@example.com>" },
    });
    expect(nulled.status, nulled.text).toBe(404);
    expect(nulled.body.error.code).toBe("messages.not_found");
  });

  test("preview of an unknown stored message is messages.not_found", async () => {
    const r = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config, message_id: "<nope@x>" },
    });
    expect(r.status, r.text).toBe(404);
    expect(r.body.error.code).toBe("messages.not_found");
  });

  test("a guard overrun is 422 mapper.runtime_error with the guard's code", async () => {
    const loop = {
      version: "v1",
      output: {
        map: {
          over: { var: "meta.xs" },
          as: "x",
          do: { map: { over: { var: "meta.xs" }, as: "y", do: { cat: ["a"] } } },
        },
      },
    };
    const xs = Array.from({ length: 200 }, (_, i) => i);
    const r = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config: loop, meta: { xs } },
    });
    expect(r.status, r.text).toBe(422);
    expect(r.body.error.code).toBe("mapper.runtime_error");
    expect(r.body.error.details[0].code).toBe("mapper.nodes_exceeded");
    expect(r.body.error.details[0].path).toBe("/config/output");
    // In a var, the path names that var.
    const inVar = {
      version: "v1",
      vars: [
        { name: "ok", expr: 1 },
        { name: "big", expr: loop.output },
      ],
      output: 1,
    };
    const v = await app.request("POST", "/v1/mapper/preview", {
      apiKey: key,
      body: { config: inVar, meta: { xs } },
    });
    expect(v.status, v.text).toBe(422);
    expect(v.body.error.details[0]).toMatchObject({
      code: "mapper.nodes_exceeded",
      path: "/config/vars/1/expr",
    });
  });

  test("serves the three JSON Schemas with their $ids, and they compile under 2020-12", async () => {
    const ajv = new Ajv2020({ strict: false });
    for (const name of ["custom_json_mapper@1", "custom_json_output@1", "generic@1"]) {
      const r = await app.request("GET", `/v1/schemas/transform/${name}`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.$id).toBe(`http://127.0.0.1:8080/v1/schemas/transform/${name}`);
      expect(() => ajv.compile(r.body)).not.toThrow();
    }
    const missing = await app.request("GET", "/v1/schemas/transform/nope@1");
    expect(missing.status).toBe(404);
  });
});
