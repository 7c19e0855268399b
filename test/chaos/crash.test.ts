/**
 * CI quick mode of the crash suite (tools/chaos/crash.ts): ~200 messages over SMTP into 2 `serve` +
 * 1 `worker` processes on Postgres while they are SIGKILLed and restarted at random.
 */
import { expect, test } from "bun:test";
import { QUICK, run } from "../../tools/chaos/crash.ts";

test("no accepted message is lost and every event is delivered while serve and worker processes are SIGKILLed", async () => {
  const report = await run(QUICK);
  expect(report.violations).toEqual([]);
  expect(report.accepted).toBe(QUICK.messages);
  expect(report.events).toBe(QUICK.messages);
  expect(report.delivered).toBe(QUICK.messages);
  expect(report.kills.serve + report.kills.worker).toBeGreaterThan(0);
}, 180_000);
