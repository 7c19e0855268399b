/**
 * The README's quickstart uploads `docs/examples/invoice.eml`: the file exists, is accepted by
 * `POST /v1/messages`, and the generic body a route makes of it carries its subject and text.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createTestApp, type TestApp } from "../support/app.ts";

const EXAMPLE = join(import.meta.dir, "..", "..", "docs", "examples", "invoice.eml");

describe("the README's sample message", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp("pglite");
  });
  afterAll(async () => {
    await app?.close();
  });

  test("is referenced by the README and accepted by the HTTP upload", async () => {
    const readme = readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8");
    expect(readme).toContain("--data-binary @docs/examples/invoice.eml");
    const p = await app.newProject();
    const r = await app.request("POST", "/v1/messages", {
      apiKey: p.apiKey,
      rawBody: new Blob([readFileSync(EXAMPLE)]),
      headers: { "content-type": "message/rfc822" },
    });
    expect(r.status, r.text).toBe(202);
    const preview = await app.request("POST", "/v1/mapper/preview", {
      apiKey: p.apiKey,
      body: {
        message_raw: readFileSync(EXAMPLE, "utf8"),
        config: {
          version: "v1",
          output: { subject: { var: "message.subject" }, text: { var: "message.text" } },
        },
      },
    });
    expect(preview.status, preview.text).toBe(200);
    expect(JSON.stringify(preview.body)).toContain("Invoice 2041 for November");
  });

  test("the service's root address leads to the dashboard", async () => {
    const r = await app.api.handle(new Request("http://localhost/"));
    expect(r.status).toBe(302);
    expect(r.headers.get("location")).toBe("/ui");
  });
});
