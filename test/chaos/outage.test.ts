/**
 * CI quick mode of the outage drill (tools/chaos/outage.ts): the receiver is down for two simulated
 * hours while mail arrives, then recovers. Nothing is lost or dead, the attempts spent while down stay
 * within the failure threshold plus the probes, and the backlog drains at the first probe after
 * recovery. Figures are printed; only the invariants are asserted.
 */
import { expect, test } from "bun:test";
import { QUICK, runOutageDrill } from "../../tools/chaos/outage.ts";
import { testDbKinds } from "../support/db.ts";

for (const db of testDbKinds()) {
  test(`a 2 h receiver outage (${db}): 0 dead, 0 lost, attempts ≤ threshold + probes, drained after recovery`, async () => {
    const report = await runOutageDrill({ ...QUICK, db });
    console.log(`outage quick (${db}): ${JSON.stringify(report)}`);
    expect(report.delivered).toBe(QUICK.messages);
    expect(report.dead).toBe(0);
    expect(report.lost).toBe(0);
    expect(report.attemptsWhileDown).toBeLessThanOrEqual(report.threshold + report.probeBudget);
    expect(report.probes).toBeLessThanOrEqual(report.probeBudget);
    // Recovery is noticed by the next probe: at most one probe interval (30 min) of simulated time.
    expect(report.drainSimulatedMin).toBeLessThanOrEqual(30);
  }, 300_000);
}
