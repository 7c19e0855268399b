/**
 * CI quick mode of the scale-out suite (tools/chaos/scale.ts): backlogs drained by 1, 2 and 4 worker
 * processes, then 2 serve + 4 worker processes under a steady SMTP load. Throughput is printed, not
 * asserted; the invariants are.
 */
import { expect, test } from "bun:test";
import { QUICK, run } from "../../tools/chaos/scale.ts";

test("2 serve + 4 worker processes never attempt one event twice at once and keep lag bounded", async () => {
  const report = await run(QUICK);
  console.log(
    `scale quick: delivered/s ${JSON.stringify(report.throughput)}, lag ${JSON.stringify(report.steady)}`,
  );
  expect(report.violations).toEqual([]);
  expect(report.overlaps).toBe(0);
  expect(report.events).toBe(QUICK.backlog * QUICK.workerCounts.length + QUICK.rate * QUICK.seconds);
  expect(report.steady.lagP99Ms).toBeLessThanOrEqual(QUICK.lagBoundMs);
}, 180_000);
