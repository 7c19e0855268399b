/** Near-miss warnings and constant-regex errors over HTTP: `POST /v1/mapper/validate` and route create/update. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

for (const kind of testDbKinds()) {
  describe(`mapper warnings on ${kind}`, () => {
    let app: TestApp;
    let key: string;
    beforeAll(async () => {
      app = await createTestApp(kind);
      key = (await app.newProject()).apiKey;
    });
    afterAll(async () => {
      await app?.close();
    });

    const typos = {
      version: "v1",
      output: {
        a: { varr: "message.subject" },
        b: { mapp: [[1], { var: "" }] },
        c: { concat: ["x", "y"] },
        d: { subject: { var: "message.subject" } },
      },
    };

    test("validate answers 200 with a warning at each near miss", async () => {
      const r = await app.request("POST", "/v1/mapper/validate", { apiKey: key, body: { config: typos } });
      expect(r.status, r.text).toBe(200);
      expect(r.body.valid).toBe(true);
      const byPath = Object.fromEntries(
        r.body.warnings.map((w: { path: string; message: string }) => [w.path, w.message]),
      );
      expect(Object.keys(byPath).sort()).toEqual(["/output/a/varr", "/output/b/mapp", "/output/c/concat"]);
      expect(byPath["/output/a/varr"]).toContain('did you mean "var"');
      expect(byPath["/output/b/mapp"]).toContain('did you mean "map"');
      expect(byPath["/output/c/concat"]).toContain('did you mean "cat"');
    });

    test("a dotted unknown name is a 422 error whose message carries the hint", async () => {
      const config = { version: "v1", output: { x: { "string.lowr": { var: "message.subject" } } } };
      const r = await app.request("POST", "/v1/mapper/validate", { apiKey: key, body: { config } });
      expect(r.status, r.text).toBe(422);
      expect(r.body.error.details).toContainEqual({
        path: "/config/output/x/string.lowr",
        message: expect.stringContaining('did you mean "string.lower"'),
      });
    });

    test("a constant regex pattern that does not compile is a 422 error at its path", async () => {
      const config = {
        version: "v1",
        output: { x: { "regex.match": { value: { var: "message.subject" }, pattern: "(?P<x" } } },
      };
      const r = await app.request("POST", "/v1/mapper/validate", { apiKey: key, body: { config } });
      expect(r.status, r.text).toBe(422);
      expect(r.body.error.details[0].path).toBe("/config/output/x/regex.match/pattern");
    });

    test("route create and update answers carry the warnings of their custom_json steps", async () => {
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey: key,
        body: { url: "https://hooks.example.com/in" },
      });
      const ss = await app.request("POST", "/v1/signing-secrets", { apiKey: key });
      const created = await app.request("POST", "/v1/routes", {
        apiKey: key,
        body: {
          name: "typos",
          endpoint_id: ep.body.id,
          signing_secret_kid: ss.body.kid,
          pipeline: { steps: [{ name: "map.custom_json", args: typos }] },
        },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body.warnings.map((w: { path: string }) => w.path).sort()).toEqual([
        "/pipeline/steps/0/args/output/a/varr",
        "/pipeline/steps/0/args/output/b/mapp",
        "/pipeline/steps/0/args/output/c/concat",
      ]);
      // The literal objects are saved and emitted as they are: warnings never change what runs.
      expect(created.body.pipeline.steps[0].args.output.a).toEqual({ varr: "message.subject" });

      const fixed = await app.request("PATCH", `/v1/routes/${created.body.id}`, {
        apiKey: key,
        body: {
          pipeline: {
            steps: [
              { name: "map.custom_json", args: { version: "v1", output: { a: { var: "message.subject" } } } },
            ],
          },
        },
      });
      expect(fixed.status, fixed.text).toBe(200);
      expect(fixed.body.warnings).toEqual([]);

      const renamed = await app.request("PATCH", `/v1/routes/${created.body.id}`, {
        apiKey: key,
        body: { name: "renamed" },
      });
      expect(renamed.status, renamed.text).toBe(200);
      expect(renamed.body.warnings).toEqual([]);
    });
  });
}
