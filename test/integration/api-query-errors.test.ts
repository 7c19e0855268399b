/**
 * A bad query parameter is answered with its name and what it allows: the values of a choice, the
 * range of a number — never Elysia's "should be one of: 'string', 'string'".
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../support/app.ts";

describe("query parameter errors", () => {
  let app: TestApp;
  let key: string;

  beforeAll(async () => {
    app = await createTestApp("pglite");
    key = (await app.newProject("queries")).apiKey;
  });
  afterAll(async () => {
    await app?.close();
  });

  test("an unknown status names the parameter and lists the statuses", async () => {
    const r = await app.request("GET", "/v1/events?status=failed", { apiKey: key });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("request.invalid");
    expect(r.body.error.message).toBe("the request query is invalid");
    const [detail] = r.body.error.details;
    expect(detail.path).toBe("/status");
    expect(detail.message).toStartWith("'status' must be one of: pending, ");
    for (const status of ["retry", "delivered", "dead"]) expect(detail.message).toContain(status);
    expect(detail.message).not.toContain("'string'");
  });

  test.each(["0", "201", "-3"])("limit=%s names the parameter and its range", async (limit) => {
    const r = await app.request("GET", `/v1/events?limit=${limit}`, { apiKey: key });
    expect(r.status).toBe(422);
    expect(r.body.error.message).toBe("the request query is invalid");
    expect(r.body.error.details).toEqual([
      { path: "/limit", message: "'limit' must be an integer from 1 to 200" },
    ]);
  });

  test("a limit that is not a number names the parameter and its range", async () => {
    const r = await app.request("GET", "/v1/events?limit=abc", { apiKey: key });
    expect(r.status).toBe(422);
    expect(r.body.error.details).toEqual([
      { path: "/limit", message: "'limit' must be an integer from 1 to 200" },
    ]);
  });
});
