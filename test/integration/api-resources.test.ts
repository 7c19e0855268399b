/**
 * The resources API on both databases: happy paths, bad input tables, authentication, and
 * cross-project isolation (every project-scoped route with another project's ids → 404).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { createTestApp, TEST_SETUP_TOKEN, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

for (const kind of testDbKinds()) {
  describe(`resources API on ${kind}`, () => {
    let app: TestApp;
    let a: { id: string; apiKey: string; inbound: string };
    let b: { id: string; apiKey: string; inbound: string };

    beforeAll(async () => {
      app = await createTestApp(kind);
      a = await app.newProject("alpha");
      b = await app.newProject("beta");
    });
    afterAll(async () => {
      await app?.close();
    });

    const setup = { "x-setup-token": TEST_SETUP_TOKEN };

    async function makeRoute(key: string, overrides: Record<string, unknown> = {}) {
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: key,
        body: { url: "https://hooks.example.com/in" },
      });
      const ss = await app.request("POST", "/v1/signing-secrets", { apiKey: key });
      const rt = await app.request("POST", "/v1/routes", {
        apiKey: key,
        body: { name: "all mail", endpoint_id: ep.body.id, signing_secret_kid: ss.body.kid, ...overrides },
      });
      return { ep, ss, rt };
    }

    describe("operator endpoints", () => {
      test("creates a project with an inbound address and a default key shown once", async () => {
        const r = await app.request("POST", "/v1/admin/projects", {
          body: { name: "gamma", api_key_name: "ci" },
          headers: setup,
        });
        expect(r.status, r.text).toBe(201);
        expect(r.body.project_id).toStartWith("prj_");
        expect(r.body.inbound_address).toMatch(/^[a-z2-7]{16}@in\.localhost$/);
        expect(r.body.api_key).toMatchObject({ name: "ci" });
        expect(r.body.api_key.secret).toStartWith("mh_");
        const list = await app.request("GET", "/v1/admin/projects", { headers: setup });
        expect(list.status).toBe(200);
        expect(list.body.items.map((p: { id: string }) => p.id)).toContain(r.body.project_id);
        expect(JSON.stringify(list.body)).not.toContain(r.body.api_key.secret);
      });

      test.each([
        [{}, 401, "auth.missing_setup_token"],
        [{ "x-setup-token": "wrong-token-wrong-token" }, 401, "auth.invalid_setup_token"],
      ])("refuses operator calls with headers %p", async (headers, status, code) => {
        for (const [method, body] of [
          ["POST", { name: "x" }],
          ["GET", undefined],
        ] as const) {
          const r = await app.request(method, "/v1/admin/projects", { headers, body });
          expect(r.status, r.text).toBe(status);
          expect(r.body.error.code).toBe(code);
        }
      });

      test.each([
        [{}, "/name"],
        [{ name: "" }, "/name"],
        [{ name: 5 }, "/name"],
        [{ name: "x", extra: true }, "/extra"],
      ])("rejects project body %p with a path", async (body, path) => {
        const r = await app.request("POST", "/v1/admin/projects", { body, headers: setup });
        expect(r.status, r.text).toBe(422);
        expect(r.body.error.code).toBe("request.invalid");
        expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
      });

      test("malformed JSON is a 400 request.invalid with details (docs/api.md)", async () => {
        const r = await app.request("POST", "/v1/admin/projects", {
          rawBody: "{nope",
          headers: { ...setup, "content-type": "application/json" },
        });
        expect(r.status, r.text).toBe(400);
        expect(r.body.error.code).toBe("request.invalid");
        expect(r.body.error.details).toEqual([{ path: "", message: "the body is not valid JSON" }]);
      });
    });

    describe("authentication", () => {
      const projectRoutes: [string, string][] = [
        ["GET", "/v1/project"],
        ["GET", "/v1/project/api-keys"],
        ["POST", "/v1/project/api-keys"],
        ["DELETE", "/v1/project/api-keys/key_x"],
        ["GET", "/v1/endpoints"],
        ["POST", "/v1/endpoints"],
        ["GET", "/v1/endpoints/ep_x"],
        ["PATCH", "/v1/endpoints/ep_x"],
        ["DELETE", "/v1/endpoints/ep_x"],
        ["GET", "/v1/signing-secrets"],
        ["POST", "/v1/signing-secrets"],
        ["DELETE", "/v1/signing-secrets/kid_x"],
        ["GET", "/v1/routes"],
        ["POST", "/v1/routes"],
        ["GET", "/v1/routes/rt_x"],
        ["PATCH", "/v1/routes/rt_x"],
        ["DELETE", "/v1/routes/rt_x"],
      ];

      test.each(projectRoutes)(
        "%s %s without a key is 401 auth.missing_api_key, before body validation",
        async (method, path) => {
          const r = await app.request(
            method,
            path,
            method === "GET" || method === "DELETE" ? {} : { body: { bogus: 1 } },
          );
          expect(r.status, r.text).toBe(401);
          expect(r.body.error.code).toBe("auth.missing_api_key");
        },
      );

      test.each(projectRoutes)("%s %s with a wrong key is 401 auth.invalid_api_key", async (method, path) => {
        const r = await app.request(method, path, { apiKey: "mh_wrong" });
        expect(r.status, r.text).toBe(401);
        expect(r.body.error.code).toBe("auth.invalid_api_key");
      });

      test("rotation: a replacement key works, the disabled one is refused, the last key cannot be disabled", async () => {
        const p = await app.newProject("rotating");
        const created = await app.request("POST", "/v1/project/api-keys", {
          apiKey: p.apiKey,
          body: { name: "replacement" },
        });
        expect(created.status, created.text).toBe(201);
        const newKey = created.body.secret as string;
        const keys = await app.request("GET", "/v1/project/api-keys", { apiKey: newKey });
        expect(keys.body.items).toHaveLength(2);
        expect(JSON.stringify(keys.body)).not.toContain(newKey);
        const oldId = keys.body.items.find((k: { name: string }) => k.name === "default").id;
        const disabled = await app.request("DELETE", `/v1/project/api-keys/${oldId}`, { apiKey: newKey });
        expect(disabled.status, disabled.text).toBe(200);
        expect(disabled.body.disabled_at).not.toBeNull();
        const refused = await app.request("GET", "/v1/project", { apiKey: p.apiKey });
        expect(refused.status).toBe(401);
        expect(refused.body.error.code).toBe("auth.invalid_api_key");
        const last = await app.request("DELETE", `/v1/project/api-keys/${created.body.id}`, {
          apiKey: newKey,
        });
        expect(last.status, last.text).toBe(409);
        expect(last.body.error.code).toBe("api_keys.last_active_key");
        const after = await app.request("GET", "/v1/project/api-keys", { apiKey: newKey });
        const current = after.body.items.find((k: { id: string }) => k.id === created.body.id);
        expect(current.last_used_at).not.toBeNull();
      });
    });

    describe("endpoints", () => {
      test("create, read, update and delete an endpoint; secret header values are masked", async () => {
        const c = await app.request("POST", "/v1/endpoints", {
          apiKey: a.apiKey,
          body: {
            url: "https://hooks.example.com/mail",
            headers: { Authorization: "Bearer s3cret", "X-Team": "ops", "X-Token": "t0k" },
            secret_headers: ["X-Token"],
            timeout_s: 15,
          },
        });
        expect(c.status, c.text).toBe(201);
        expect(c.body).toMatchObject({ url: "https://hooks.example.com/mail", timeout_s: 15 });
        expect(c.body.headers).toEqual({ Authorization: "***", "X-Team": "ops", "X-Token": "***" });
        expect(c.text).not.toContain("s3cret");
        const g = await app.request("GET", `/v1/endpoints/${c.body.id}`, { apiKey: a.apiKey });
        expect(g.body.id).toBe(c.body.id);
        const u = await app.request("PATCH", `/v1/endpoints/${c.body.id}`, {
          apiKey: a.apiKey,
          body: { url: "http://hooks.example.com/v2" },
        });
        expect(u.status, u.text).toBe(200);
        expect(u.body.url).toBe("http://hooks.example.com/v2");
        expect(u.body.timeout_s).toBe(15);
        const d = await app.request("DELETE", `/v1/endpoints/${c.body.id}`, { apiKey: a.apiKey });
        expect(d.status, d.text).toBe(204);
        const gone = await app.request("GET", `/v1/endpoints/${c.body.id}`, { apiKey: a.apiKey });
        expect(gone.status).toBe(404);
        expect(gone.body.error.code).toBe("endpoints.not_found");
      });

      test("defaults timeout_s to 10", async () => {
        const c = await app.request("POST", "/v1/endpoints", {
          apiKey: a.apiKey,
          body: { url: "https://x.example/h" },
        });
        expect(c.body.timeout_s).toBe(10);
        expect(c.body.headers).toEqual({});
      });

      test.each([
        [{}, "/url"],
        [{ url: "ftp://example.com/x" }, "/url"],
        [{ url: "not a url" }, "/url"],
        [{ url: "https://user:pw@example.com/x" }, "/url"],
        [{ url: "https://example.com/x", timeout_s: 0 }, "/timeout_s"],
        [{ url: "https://example.com/x", timeout_s: 61 }, "/timeout_s"],
        [
          { url: "https://example.com/x", headers: { "X-Service-Signature": "x" } },
          "/headers/X-Service-Signature",
        ],
        [
          { url: "https://example.com/x", headers: { "Content-Type": "text/plain" } },
          "/headers/Content-Type",
        ],
        [{ url: "https://example.com/x", headers: { "bad name": "x" } }, "/headers/bad name"],
        [{ url: "https://example.com/x", headers: { "X-A": "a\r\nX-B: b" } }, "/headers/X-A"],
        [{ url: "https://example.com/x", secret_headers: ["X-Missing"], headers: {} }, "/secret_headers/0"],
        [{ url: "https://example.com/x", extra: 1 }, "/extra"],
      ])("rejects endpoint %p at %s", async (body, path) => {
        const r = await app.request("POST", "/v1/endpoints", { apiKey: a.apiKey, body });
        expect(r.status, r.text).toBe(422);
        expect(r.body.error.code).toBe("request.invalid");
        expect(r.body.error.details.map((d: { path: string }) => d.path)).toContain(path);
      });

      test("an endpoint used by a route cannot be deleted", async () => {
        const { ep } = await makeRoute(a.apiKey);
        const d = await app.request("DELETE", `/v1/endpoints/${ep.body.id}`, { apiKey: a.apiKey });
        expect(d.status, d.text).toBe(409);
        expect(d.body.error.code).toBe("endpoints.in_use");
      });
    });

    describe("signing secrets", () => {
      test("a secret is whsec_ + base64 of 32 bytes, shown once", async () => {
        const c = await app.request("POST", "/v1/signing-secrets", { apiKey: a.apiKey });
        expect(c.status, c.text).toBe(201);
        expect(c.body.kid).toStartWith("kid_");
        expect(c.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
        expect(Buffer.from(c.body.secret.slice(6), "base64")).toHaveLength(32);
        const list = await app.request("GET", "/v1/signing-secrets", { apiKey: a.apiKey });
        expect(list.body.items.map((s: { kid: string }) => s.kid)).toContain(c.body.kid);
        expect(list.text).not.toContain(c.body.secret);
        const d = await app.request("DELETE", `/v1/signing-secrets/${c.body.kid}`, { apiKey: a.apiKey });
        expect(d.status, d.text).toBe(204);
        const again = await app.request("DELETE", `/v1/signing-secrets/${c.body.kid}`, { apiKey: a.apiKey });
        expect(again.status).toBe(404);
        expect(again.body.error.code).toBe("signing_secrets.not_found");
      });

      test("a secret used by a route cannot be deleted", async () => {
        const { ss } = await makeRoute(a.apiKey);
        const d = await app.request("DELETE", `/v1/signing-secrets/${ss.body.kid}`, { apiKey: a.apiKey });
        expect(d.status, d.text).toBe(409);
        expect(d.body.error.code).toBe("signing_secrets.in_use");
      });

      test("secrets and header values are sealed at rest", async () => {
        const c = await app.request("POST", "/v1/signing-secrets", { apiKey: a.apiKey });
        await app.request("POST", "/v1/endpoints", {
          apiKey: a.apiKey,
          body: { url: "https://e.example/x", headers: { Authorization: "Bearer plain-value-123" } },
        });
        const dump = JSON.stringify(await app.ctx.database.rows(sqlAll()));
        expect(dump).not.toContain(c.body.secret);
        expect(dump).not.toContain("plain-value-123");
      });
    });

    describe("routes", () => {
      test("creates a route with the default generic pipeline and reads, updates, deletes it", async () => {
        const { rt } = await makeRoute(a.apiKey, { rule: { subject_contains: ["invoice", "receipt"] } });
        expect(rt.status, rt.text).toBe(201);
        expect(rt.body.pipeline).toEqual({ steps: [{ name: "map.generic_json", args: {} }] });
        expect(rt.body.enabled).toBe(true);
        const u = await app.request("PATCH", `/v1/routes/${rt.body.id}`, {
          apiKey: a.apiKey,
          body: { enabled: false, rule: {} },
        });
        expect(u.status, u.text).toBe(200);
        expect(u.body).toMatchObject({ enabled: false, rule: {} });
        const list = await app.request("GET", "/v1/routes", { apiKey: a.apiKey });
        expect(list.body.items.map((r: { id: string }) => r.id)).toContain(rt.body.id);
        const d = await app.request("DELETE", `/v1/routes/${rt.body.id}`, { apiKey: a.apiKey });
        expect(d.status).toBe(204);
        const g = await app.request("GET", `/v1/routes/${rt.body.id}`, { apiKey: a.apiKey });
        expect(g.status).toBe(404);
        expect(g.body.error.code).toBe("routes.not_found");
      });

      test("accepts a custom_json pipeline with a transform step", async () => {
        const { rt } = await makeRoute(a.apiKey, {
          pipeline: {
            steps: [
              { name: "strip_attachments_if", args: { mime_in: ["image/*"] } },
              {
                name: "map.custom_json",
                args: { version: "v1", output: { subject: { var: "message.subject" } } },
              },
            ],
          },
        });
        expect(rt.status, rt.text).toBe(201);
      });

      test("accepts the deepest mapper config /v1/mapper/validate accepts (the same validator)", async () => {
        // 49 calls around a literal: 50 expression levels, three JSON levels each.
        let expr: unknown = "x";
        for (let i = 0; i < 49; i++) expr = { call: { fn: "transform.html_to_text", args: { html: expr } } };
        const deepest = { version: "v1", vars: [{ name: "a", expr }], output: { var: "vars.a" } };
        const valid = await app.request("POST", "/v1/mapper/validate", {
          apiKey: a.apiKey,
          body: { config: deepest },
        });
        expect(valid.status, valid.text).toBe(200);
        const { rt } = await makeRoute(a.apiKey, {
          pipeline: { steps: [{ name: "map.custom_json", args: deepest }] },
        });
        expect(rt.status, rt.text).toBe(201);
        // One level deeper is refused by both, by the mapper's validator, with its path.
        const deeper = {
          ...deepest,
          vars: [{ name: "a", expr: { call: { fn: "transform.html_to_text", args: { html: expr } } } }],
        };
        const invalid = await app.request("POST", "/v1/mapper/validate", {
          apiKey: a.apiKey,
          body: { config: deeper },
        });
        expect(invalid.status, invalid.text).toBe(422);
        expect(invalid.body.error.code).toBe("mapper.invalid_config");
        expect(invalid.body.error.details[0].code).toBe("mapper.depth_exceeded");
        const refused = await makeRoute(a.apiKey, {
          pipeline: { steps: [{ name: "map.custom_json", args: deeper }] },
        });
        expect(refused.rt.status, refused.rt.text).toBe(422);
        expect(refused.rt.body.error.code).toBe("routes.invalid_pipeline");
        expect(refused.rt.body.error.details[0].path).toStartWith("/pipeline/steps/0/args/vars/0/expr");
        expect(refused.rt.body.error.details[0].code).toBe("mapper.depth_exceeded");
      });

      test.each([
        [{ rule: { unknown_key: "x" } }, "routes.invalid_rule", "/rule/unknown_key"],
        [{ rule: { subject_regex: "(unclosed" } }, "routes.invalid_rule", "/rule/subject_regex"],
        [{ rule: "subject" }, "routes.invalid_rule", "/rule"],
        [{ pipeline: { steps: [] } }, "routes.invalid_pipeline", "/pipeline/steps"],
        [
          { pipeline: { steps: [{ name: "nope", args: {} }] } },
          "routes.invalid_pipeline",
          "/pipeline/steps/0/name",
        ],
        [
          {
            pipeline: {
              steps: [
                { name: "map.generic_json", args: {} },
                { name: "remove_fields", args: { paths: ["html"] } },
              ],
            },
          },
          "routes.invalid_pipeline",
          "/pipeline/steps",
        ],
        [
          {
            pipeline: {
              steps: [
                {
                  name: "map.custom_json",
                  args: { version: "v1", output: { x: { "string.reverse": "a" } } },
                },
              ],
            },
          },
          "routes.invalid_pipeline",
          "/pipeline/steps/0/args/output/x",
        ],
      ])("rejects %p with %s at %s", async (overrides, code, path) => {
        const { rt } = await makeRoute(a.apiKey, overrides);
        expect(rt.status, rt.text).toBe(422);
        expect(rt.body.error.code).toBe(code);
        const paths = rt.body.error.details.map((d: { path: string }) => d.path);
        expect(
          paths.some((p: string) => p.startsWith(path)),
          `${path} in ${paths}`,
        ).toBe(true);
      });

      test("a route cannot point at another project's endpoint or secret", async () => {
        const other = await makeRoute(b.apiKey);
        const mine = await makeRoute(a.apiKey);
        const r = await app.request("POST", "/v1/routes", {
          apiKey: a.apiKey,
          body: { name: "x", endpoint_id: other.ep.body.id, signing_secret_kid: mine.ss.body.kid },
        });
        expect(r.status, r.text).toBe(422);
        expect(r.body.error.code).toBe("routes.invalid_reference");
        const r2 = await app.request("POST", "/v1/routes", {
          apiKey: a.apiKey,
          body: { name: "x", endpoint_id: mine.ep.body.id, signing_secret_kid: other.ss.body.kid },
        });
        expect(r2.status, r2.text).toBe(422);
        expect(r2.body.error.details[0].path).toBe("/signing_secret_kid");
      });
    });

    describe("cross-project isolation", () => {
      test("every project-scoped route with another project's ids is a 404", async () => {
        const theirs = await makeRoute(b.apiKey);
        const keys = await app.request("GET", "/v1/project/api-keys", { apiKey: b.apiKey });
        const theirKey = keys.body.items[0].id;
        const cases: [string, string, unknown, string][] = [
          ["GET", `/v1/endpoints/${theirs.ep.body.id}`, undefined, "endpoints.not_found"],
          ["PATCH", `/v1/endpoints/${theirs.ep.body.id}`, { timeout_s: 5 }, "endpoints.not_found"],
          ["DELETE", `/v1/endpoints/${theirs.ep.body.id}`, undefined, "endpoints.not_found"],
          ["DELETE", `/v1/signing-secrets/${theirs.ss.body.kid}`, undefined, "signing_secrets.not_found"],
          ["GET", `/v1/routes/${theirs.rt.body.id}`, undefined, "routes.not_found"],
          ["PATCH", `/v1/routes/${theirs.rt.body.id}`, { enabled: false }, "routes.not_found"],
          ["DELETE", `/v1/routes/${theirs.rt.body.id}`, undefined, "routes.not_found"],
          ["DELETE", `/v1/project/api-keys/${theirKey}`, undefined, "api_keys.not_found"],
        ];
        for (const [method, path, body, code] of cases) {
          const r = await app.request(method, path, { apiKey: a.apiKey, body });
          expect(r.status, `${method} ${path}: ${r.text}`).toBe(404);
          expect(r.body.error.code).toBe(code);
        }
        const still = await app.request("GET", `/v1/routes/${theirs.rt.body.id}`, { apiKey: b.apiKey });
        expect(still.body.enabled).toBe(true);
        const lists = await Promise.all(
          ["/v1/endpoints", "/v1/routes", "/v1/signing-secrets"].map((p) =>
            app.request("GET", p, { apiKey: a.apiKey }),
          ),
        );
        const text = lists.map((l) => l.text).join();
        expect(text).not.toContain(theirs.ep.body.id);
        expect(text).not.toContain(theirs.rt.body.id);
        expect(text).not.toContain(theirs.ss.body.kid);
      });
    });

    describe("documents and errors", () => {
      test("serves an OpenAPI 3.1 document naming every operation, and a rendered reference", async () => {
        const r = await app.request("GET", "/v1/openapi.json");
        expect(r.status).toBe(200);
        expect(r.body.openapi).toStartWith("3.1");
        for (const p of [
          "/v1/admin/projects",
          "/v1/project",
          "/v1/endpoints/{id}",
          "/v1/routes/{id}",
          "/v1/signing-secrets/{kid}",
        ]) {
          expect(Object.keys(r.body.paths)).toContain(p);
        }
        const docs = await app.request("GET", "/v1/docs");
        expect(docs.status).toBe(200);
        expect(docs.headers.get("content-type")).toContain("text/html");
      });

      test("an unknown path is a JSON 404", async () => {
        const r = await app.request("GET", "/v1/nope", { apiKey: a.apiKey });
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe("request.not_found");
      });
    });
  });
}

function sqlAll() {
  // every sealed column, to prove no plaintext is stored
  return sql`select (select json_agg(s) from signing_secrets s) as s, (select json_agg(e) from endpoints e) as e`;
}
