import { beforeAll, describe, expect, test } from "bun:test";
import { CoalescedWake, WAKE_INTERVAL_MS } from "../../../services/ingest/wake.ts";
import { silentLogger } from "../../../services/lib/logger.ts";

/** Polls `probe` until it is true, failing with `what` after `timeoutMs`. */
async function until(what: string, probe: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!probe()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(1);
  }
}

describe("CoalescedWake", () => {
  // A new coalescer counts its interval from `performance.now()` = 0 (the process's start): a test
  // process younger than one interval would see its first notification held back.
  beforeAll(async () => {
    const young = WAKE_INTERVAL_MS - performance.now();
    if (young > 0) await Bun.sleep(young + 1);
  });

  test("a lone request notifies at once", async () => {
    let sent = 0;
    const wake = new CoalescedWake(async () => {
      sent++;
    }, silentLogger);
    wake.request();
    expect(sent).toBe(1);
  });

  test("a burst of requests while one is in flight costs one more notification, not one each", async () => {
    let sent = 0;
    let finish: () => void = () => {};
    const wake = new CoalescedWake(
      () =>
        new Promise<void>((resolve) => {
          sent++;
          finish = resolve;
        }),
      silentLogger,
    );
    wake.request();
    for (let i = 0; i < 50; i++) wake.request();
    expect(sent).toBe(1);
    finish();
    await until("the follow-up notification", () => sent === 2);
    finish();
    await Bun.sleep(WAKE_INTERVAL_MS * 3);
    expect(sent).toBe(2);
  });

  test("notifications of a burst are at least WAKE_INTERVAL_MS apart", async () => {
    const times: number[] = [];
    const wake = new CoalescedWake(async () => {
      times.push(performance.now());
    }, silentLogger);
    wake.request();
    wake.request();
    await until("the second notification", () => times.length === 2);
    // Timers have millisecond resolution: a sleep of 9.6 ms may end after 9.
    expect((times[1] ?? 0) - (times[0] ?? 0)).toBeGreaterThanOrEqual(WAKE_INTERVAL_MS - 2);
  });

  test("a failing notification is logged and the next request notifies again", async () => {
    let calls = 0;
    const warnings: string[] = [];
    const logger = { ...silentLogger, warn: (msg: string) => void warnings.push(msg) };
    const wake = new CoalescedWake(async () => {
      calls++;
      if (calls === 1) throw new Error("connection lost");
    }, logger);
    wake.request();
    await until("the warning", () => warnings.length === 1);
    expect(warnings).toEqual(["could not wake workers"]);
    wake.request();
    await until("the second notification", () => calls === 2);
  });
});
