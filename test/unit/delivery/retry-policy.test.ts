import { describe, expect, test } from "bun:test";
import {
  attemptBudget,
  classifyOutcome,
  nextAttemptDelay,
  parseRetryAfter,
} from "../../../services/delivery/retry-policy.ts";
import {
  DEFAULT_RETRY_SCHEDULE_TEXT,
  parseRetrySchedule,
  RetryScheduleError,
} from "../../../services/lib/durations.ts";

const SCHEDULE = parseRetrySchedule(DEFAULT_RETRY_SCHEDULE_TEXT);
const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const mid = () => 0.5; // no jitter
const low = () => 0; // -10%
const high = () => 0.999_999; // ≈ +10%

describe("parseRetrySchedule", () => {
  test("parses the default schedule into delays before attempts 2..6", () => {
    expect(SCHEDULE).toEqual([0, 30_000, 120_000, 600_000, 1_800_000]);
    expect(attemptBudget(SCHEDULE)).toBe(6);
  });

  test.each([
    ["250ms", [250]],
    ["1.5s", [1500]],
    ["2h", [7_200_000]],
    [" 0 , 5s ,1m ", [0, 5000, 60_000]],
    ["10", [10_000]], // a bare number is seconds
    ["0.0005s", [1]], // rounded to whole ms
  ])("parses %j", (text, expected) => {
    expect(parseRetrySchedule(text)).toEqual(expected);
  });

  test.each([
    ["", /empty/],
    ["   ", /empty/],
    ["0,,5s", /entry 2 ""/],
    ["30x", /entry 1 "30x"/],
    ["-5s", /entry 1 "-5s"/],
    ["5 s", /entry 1 "5 s"/],
    ["5S", /entry 1 "5S"/],
    ["1e3", /entry 1 "1e3"/],
    ["8d", /entry 1 "8d"/],
    ["169h", /exceeds 7 days/],
    [Array(21).fill("1s").join(","), /at most 20/],
  ])("rejects %j with a message naming the problem", (text, message) => {
    expect(() => parseRetrySchedule(text)).toThrow(RetryScheduleError);
    expect(() => parseRetrySchedule(text)).toThrow(message);
  });
});

describe("classifyOutcome", () => {
  test.each([
    [200, "success"],
    [201, "success"],
    [204, "success"],
    [299, "success"],
    [408, "retry"],
    [409, "retry"],
    [425, "retry"],
    [429, "retry"],
    [500, "retry"],
    [502, "retry"],
    [503, "retry"],
    [599, "retry"],
    [301, "terminal"],
    [302, "terminal"],
    [304, "terminal"],
    [307, "terminal"],
    [400, "terminal"],
    [401, "terminal"],
    [403, "terminal"],
    [404, "terminal"],
    [410, "terminal"],
    [413, "terminal"],
    [422, "terminal"],
    [100, "terminal"],
  ] as const)("status %d → %s", (status, outcome) => {
    expect(classifyOutcome({ status })).toBe(outcome);
  });

  test("a network error without a response is retried", () => {
    expect(classifyOutcome({ networkError: "connection_reset: ECONNRESET" })).toBe("retry");
    expect(classifyOutcome({ status: 0, networkError: "timeout after 10000 ms" })).toBe("retry");
  });

  test("an SSRF refusal is terminal: no retry can change where the name points", () => {
    expect(classifyOutcome({ status: 0, networkError: "ssrf_blocked:127.0.0.1" })).toBe("terminal");
  });

  test("a received status decides even if the body read failed afterwards", () => {
    expect(classifyOutcome({ status: 200, networkError: "timeout after 10 ms" })).toBe("success");
    expect(classifyOutcome({ status: 404, networkError: "body_read_error: x" })).toBe("terminal");
  });
});

describe("nextAttemptDelay", () => {
  test.each([
    [1, 0],
    [2, 30_000],
    [3, 120_000],
    [4, 600_000],
    [5, 1_800_000],
  ])("after failed attempt %d waits the scheduled %d ms", (attemptNumber, expected) => {
    expect(nextAttemptDelay({ attemptNumber, schedule: SCHEDULE, random: mid })).toBe(expected);
  });

  test("returns null once the budget of 6 attempts is used", () => {
    expect(nextAttemptDelay({ attemptNumber: 6, schedule: SCHEDULE, random: mid })).toBeNull();
    expect(nextAttemptDelay({ attemptNumber: 7, schedule: SCHEDULE, random: mid })).toBeNull();
  });

  test("jitter stays within ±10% of the schedule", () => {
    expect(nextAttemptDelay({ attemptNumber: 2, schedule: SCHEDULE, random: low })).toBe(27_000);
    expect(nextAttemptDelay({ attemptNumber: 2, schedule: SCHEDULE, random: high })).toBe(33_000);
    expect(nextAttemptDelay({ attemptNumber: 1, schedule: SCHEDULE, random: high })).toBe(0);
    for (let i = 0; i < 200; i++) {
      const d = nextAttemptDelay({ attemptNumber: 4, schedule: SCHEDULE, random: Math.random })!;
      expect(d).toBeGreaterThanOrEqual(540_000);
      expect(d).toBeLessThanOrEqual(660_000);
    }
  });

  test("maxAttempts overrides the budget and reuses the last delay", () => {
    const input = { schedule: [1000, 2000], random: mid, maxAttempts: 5 };
    expect(nextAttemptDelay({ ...input, attemptNumber: 3 })).toBe(2000);
    expect(nextAttemptDelay({ ...input, attemptNumber: 4 })).toBe(2000);
    expect(nextAttemptDelay({ ...input, attemptNumber: 5 })).toBeNull();
  });

  test.each([0, -1, 1.5, Number.NaN])("rejects attemptNumber %p", (attemptNumber) => {
    expect(() => nextAttemptDelay({ attemptNumber, schedule: SCHEDULE, random: mid })).toThrow(RangeError);
  });

  const httpDate = (msFromNow: number) => new Date(NOW + msFromNow).toUTCString();

  test.each([
    // [case, attempt, status, Retry-After, random, expected ms]
    ["429 seconds longer than schedule lengthens the wait", 2, 429, "45", mid, 45_000 * 1.05],
    ["503 seconds longer than schedule lengthens the wait", 2, 503, "45", low, 45_000],
    ["Retry-After shorter than the schedule never shortens it", 3, 429, "5", mid, 120_000],
    ["Retry-After 0 keeps the schedule", 2, 503, "0", low, 27_000],
    ["capped at twice the scheduled delay", 3, 429, "3600", mid, 240_000],
    [
      "the cap is at least 60 s, so an immediate retry honours a short Retry-After",
      1,
      429,
      "20",
      low,
      20_000,
    ],
    ["and caps a long one at 60 s", 1, 429, "600", mid, 60_000],
    ["an HTTP-date is measured from nowMs", 2, 503, httpDate(50_000), low, 50_000],
    ["an HTTP-date in the past keeps the schedule", 2, 503, httpDate(-50_000), mid, 30_000],
    ["ignored on other statuses", 2, 500, "45", mid, 30_000],
    ["ignored without a status", 2, undefined, "45", mid, 30_000],
    ["a malformed value is ignored", 2, 429, "soon", mid, 30_000],
    ["an asctime date (no zone) is ignored", 2, 429, "Sun Nov  6 08:49:37 2033", mid, 30_000],
  ] as const)("Retry-After: %s", (_name, attemptNumber, status, retryAfterHeader, random, expected) => {
    const delay = nextAttemptDelay({
      attemptNumber,
      schedule: SCHEDULE,
      status,
      retryAfterHeader,
      random,
      nowMs: NOW,
    });
    expect(delay).toBe(Math.round(expected));
  });

  test("Retry-After does not extend the budget", () => {
    const input = { attemptNumber: 6, schedule: SCHEDULE, status: 429, retryAfterHeader: "1", random: mid };
    expect(nextAttemptDelay(input)).toBeNull();
  });
});

describe("parseRetryAfter", () => {
  test.each([
    ["120", 120_000],
    [" 7 ", 7000],
    [new Date(NOW + 90_000).toUTCString(), 90_000],
    ["-1", null],
    ["1.5", null],
    ["", null],
  ])("%j → %p", (value, expected) => {
    expect(parseRetryAfter(value, NOW)).toBe(expected);
  });

  test("an HTTP-date needs a clock", () => {
    expect(parseRetryAfter(new Date(NOW).toUTCString())).toBeNull();
    expect(parseRetryAfter(null, NOW)).toBeNull();
  });
});
