/**
 * Work to do once, after the last test file of a `bun test` run: the preload's top-level `afterAll`
 * (which Bun runs after every file has finished) calls `runEndOfRun`. Support modules register what
 * they created for the whole run, such as the Postgres template database, so a run leaves nothing behind.
 *
 * Invariants:
 * - Bun loads the preload and the test files into one module registry, so a registration made while a
 *   test file runs is seen by the preload's hook.
 * - Every registered task runs, even when an earlier one fails; failures are reported, not thrown
 *   (the tests have already passed or failed by then).
 * - Outside `bun test` (a tool importing the support modules) nothing runs these; such tools clean up
 *   after themselves or leave the leftovers to db.ts's age-based sweep.
 */

const tasks: { what: string; run: () => Promise<void> }[] = [];

/** Registers `run` for the end of the test run; `what` names it in a failure report. */
export function atEndOfRun(what: string, run: () => Promise<void>): void {
  tasks.push({ what, run });
}

/** Runs (and forgets) every registered task, in registration order. */
export async function runEndOfRun(): Promise<void> {
  for (const task of tasks.splice(0)) {
    try {
      await task.run();
    } catch (error) {
      console.error(`end of test run: ${task.what} failed: ${String(error)}`);
    }
  }
}
