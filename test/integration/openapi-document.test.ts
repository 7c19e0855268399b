/**
 * `/v1/openapi.json` is a document the standard tools accept: `@redocly/cli lint` (recommended rules)
 * reports no error and `@apidevtools/swagger-parser` validates it; path parameters, operationIds,
 * integer types, shared components and the `webhooks` section are as docs/api.md describes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SwaggerParser from "@apidevtools/swagger-parser";
import { createTestApp, type TestApp } from "../support/app.ts";

const ROOT = join(import.meta.dir, "..", "..");

type Doc = {
  paths: Record<string, Record<string, { operationId: string; security?: unknown[] }>>;
  components: { schemas: Record<string, Record<string, unknown>> };
  webhooks: Record<string, unknown>;
};

describe("the OpenAPI document", () => {
  let app: TestApp;
  let doc: Doc;
  let dir: string;
  let file: string;

  beforeAll(async () => {
    app = await createTestApp("pglite");
    doc = (await app.request("GET", "/v1/openapi.json")).body;
    dir = mkdtempSync(join(tmpdir(), "mh-openapi-"));
    file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(doc));
  });
  afterAll(async () => {
    await app?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("@redocly/cli lint with the recommended rules reports no error", async () => {
    // Redocly's CLI runs on Node; the machine has it (Bun is installed with npm).
    const proc = Bun.spawn(
      [
        "node",
        join(ROOT, "node_modules", ".bin", "redocly"),
        "lint",
        file,
        "--format=json",
        "--extends=recommended",
      ],
      {
        cwd: dir,
        stdout: "pipe",
        stderr: "pipe",
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      },
    );
    const [out, err] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ]);
    await proc.exited;
    const report = JSON.parse(out) as {
      totals: { errors: number };
      problems: { ruleId: string; message: string; severity: string }[];
    };
    const errors = report.problems.filter((p) => p.severity === "error");
    expect(errors, err).toEqual([]);
    expect(report.totals.errors).toBe(0);
  }, 60_000);

  test("@apidevtools/swagger-parser validates it", async () => {
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeDefined();
  });

  test("path parameters are named as the spec names them", () => {
    const paths = Object.keys(doc.paths);
    expect(paths).toContain("/v1/events/{event_id}");
    expect(paths).toContain("/v1/events/{event_id}/replay");
    expect(paths).toContain("/v1/messages/{message_id}/attachments/{attachment_id}/url");
    expect(paths.filter((p) => p.startsWith("/v1/events/{id}"))).toEqual([]);
  });

  test("every operation has a unique camelCase operationId and states its security", () => {
    const ids: string[] = [];
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item)) {
        expect(op.operationId).toMatch(/^[a-z][a-zA-Z]+$/);
        expect(Array.isArray(op.security)).toBe(true);
        ids.push(op.operationId);
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of [
      "listEvents",
      "getEvent",
      "replayEvent",
      "listEventAttempts",
      "createRoute",
      "uploadMessage",
    ]) {
      expect(ids).toContain(id);
    }
    expect(doc.paths["/v1/attachments/{token}"]?.get?.security).toEqual([]);
  });

  test("integers are integers, and no schema says `string | integer`", () => {
    const text = JSON.stringify(doc);
    expect(text).not.toContain('"format":"integer"');
    expect(doc.components.schemas.Event?.properties).toMatchObject({ attempts: { type: "integer" } });
    expect(text).not.toContain('"nullable"');
  });

  test("shared shapes are components, referenced by the operations", () => {
    for (const name of ["Event", "EventDetail", "EventPage", "Endpoint", "Route", "Attempt", "Error"]) {
      expect(Object.keys(doc.components.schemas)).toContain(name);
    }
    const list = doc.paths["/v1/events"]?.get as unknown as {
      responses: Record<string, { content: Record<string, { schema: unknown }> }>;
    };
    expect(list.responses["200"]?.content["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/EventPage",
    });
  });

  test("webhooks describe the bodies the service delivers", () => {
    for (const name of ["generic@1", "postmark_json", "raw_mime", "slack_simple", "telegram_simple"]) {
      expect(Object.keys(doc.webhooks)).toContain(name);
    }
  });
});
