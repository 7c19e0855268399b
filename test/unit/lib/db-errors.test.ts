import { describe, expect, test } from "bun:test";
import { createErrorHandler } from "../../../services/api/errors.ts";
import { isDatabaseUnavailable } from "../../../services/lib/db-errors.ts";
import { silentLogger } from "../../../services/lib/logger.ts";

describe("isDatabaseUnavailable", () => {
  test.each([
    [{ code: "53300" }, true],
    [{ code: "08006" }, true],
    [{ code: "57P01" }, true],
    [{ code: "CONNECTION_CLOSED" }, true],
    [{ message: "Failed query", cause: { code: "ECONNREFUSED" } }, true],
    [{ code: "23505" }, false],
    [new Error("boom"), false],
    [null, false],
  ])("%p → %p", (err, expected) => {
    expect(isDatabaseUnavailable(err)).toBe(expected);
  });
});

describe("the error handler", () => {
  const handle = createErrorHandler(silentLogger);
  const request = new Request("http://localhost/v1/events");

  test("a database that refuses connections is a 503 service.unavailable with Retry-After, not a 500", () => {
    const set = { headers: {} as Record<string, string | number>, status: 200 as number | string };
    const body = handle({
      code: "UNKNOWN",
      error: { message: "Failed query", cause: { code: "53300" } },
      set,
      request,
    });
    expect(set.status).toBe(503);
    expect(set.headers["retry-after"]).toBe("1");
    expect(body).toEqual({ error: { code: "service.unavailable", message: expect.any(String) } });
  });

  test("any other unexpected error is a 500 internal without internals", () => {
    const set = { headers: {} as Record<string, string | number>, status: 200 as number | string };
    const body = handle({ code: "UNKNOWN", error: new Error("secret detail"), set, request });
    expect(set.status).toBe(500);
    expect(JSON.stringify(body)).not.toContain("secret detail");
  });
});
