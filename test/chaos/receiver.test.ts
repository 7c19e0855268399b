/**
 * CI quick mode of the receiver chaos suite (tools/chaos/receiver.ts): a receiver answering at random
 * with 503, 429 + Retry-After, slow answers past `timeout_s`, resets and 2xx, bounded per event.
 */
import { expect, test } from "bun:test";
import { QUICK, run } from "../../tools/chaos/receiver.ts";

test("every event ends delivered and the attempt log explains every failure of a chaotic receiver", async () => {
  const report = await run(QUICK);
  expect(report.violations).toEqual([]);
  expect(report.delivered).toBe(QUICK.messages);
  expect(report.maxAttemptsPerEvent).toBeLessThanOrEqual(QUICK.maxFailures + 1);
  // Every failure class the receiver can produce shows up in the log (60 events, p = 0.6 per try).
  const failures = Object.keys(report.classes).filter((c) => c !== "2xx");
  expect(failures.length).toBeGreaterThanOrEqual(3);
}, 180_000);
