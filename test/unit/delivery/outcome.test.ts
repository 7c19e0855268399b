import { describe, expect, test } from "bun:test";
import { decideOutcome, describeFailure } from "../../../services/delivery/outcome.ts";

const SCHEDULE = [0, 30_000, 120_000, 600_000, 1_800_000];
const NOW = Date.parse("2026-01-01T00:00:00Z");
const res = (
  status: number,
  extra: { body?: string; headers?: Record<string, string>; networkError?: string } = {},
) => ({
  status,
  headers: extra.headers ?? {},
  bodyPreview: extra.body ?? "",
  networkError: extra.networkError ?? null,
});
const decide = (result: ReturnType<typeof res>, attemptsBefore = 0, budgetStart = 0) =>
  decideOutcome({ result, attemptsBefore, budgetStart, schedule: SCHEDULE, nowMs: NOW, random: () => 0.5 });

describe("decideOutcome", () => {
  test("a 2xx delivers and clears the error and schedule", () => {
    expect(decide(res(201))).toEqual({
      attemptStatus: "success",
      eventStatus: "delivered",
      lastError: null,
      nextAttemptAt: null,
    });
  });

  test("the second attempt is due immediately after the first retryable failure, the third ~30 s later", () => {
    expect(decide(res(503), 0).nextAttemptAt?.getTime()).toBe(NOW);
    expect(decide(res(503), 1).nextAttemptAt?.getTime()).toBe(NOW + 30_000);
  });

  test("the sixth retryable failure ends the event dead, naming the budget", () => {
    const o = decide(res(500, { body: "oops" }), 5);
    expect(o.eventStatus).toBe("dead");
    expect(o.lastError).toBe("http 500: oops (gave up after 6 attempts)");
  });

  test("a replay's budget counts from budget_start", () => {
    expect(decide(res(500), 6, 6).eventStatus).toBe("retry");
    expect(decide(res(500), 11, 6).eventStatus).toBe("dead");
  });

  test.each([400, 401, 403, 404, 410, 422, 302])("%i is terminal", (status) => {
    expect(decide(res(status)).eventStatus).toBe("dead");
    expect(decide(res(status)).nextAttemptAt).toBeNull();
  });

  test("a network error is retried and kept verbatim as last_error", () => {
    const o = decide(res(0, { networkError: "timeout after 10000 ms" }));
    expect(o).toMatchObject({ eventStatus: "retry", lastError: "timeout after 10000 ms" });
  });
});

describe("describeFailure", () => {
  test("squeezes whitespace and cuts the body snippet at 200 characters", () => {
    const text = describeFailure(res(503, { body: `  down\n\n for   maintenance ${"x".repeat(500)}` }));
    expect(text.startsWith("http 503: down for maintenance x")).toBe(true);
    expect(text.length).toBe("http 503: ".length + 200);
  });

  test("a redirect names its location", () => {
    expect(describeFailure(res(301, { headers: { location: "https://new.example/hook" } }))).toBe(
      "http 301: redirects are not followed (location: https://new.example/hook)",
    );
  });

  test("a status without body is just the status", () => {
    expect(describeFailure(res(404))).toBe("http 404");
  });
});
