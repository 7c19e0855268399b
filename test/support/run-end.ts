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
 * - Outside `bun test` nothing runs these by itself: a tool that uses the support modules calls
 *   {@link runEndOfRun} before it exits (tools/bench/delivery.ts, tools/chaos/fuzz-*.ts).
 */

/** A list of tasks run once, in registration order; `run` empties it. */
export interface TaskList {
  /** registers `run`; `what` names it in a failure report */
  add(what: string, run: () => Promise<void>): void;
  /** runs every registered task, even after one fails, and forgets them */
  run(): Promise<void>;
}

/** A fresh task list; failures go to `report` (default: stderr). */
export function taskList(report: (line: string) => void = console.error): TaskList {
  const tasks: { what: string; run: () => Promise<void> }[] = [];
  return {
    add(what, run) {
      tasks.push({ what, run });
    },
    async run() {
      for (const task of tasks.splice(0)) {
        try {
          await task.run();
        } catch (error) {
          report(`end of test run: ${task.what} failed: ${String(error)}`);
        }
      }
    },
  };
}

const endOfRun = taskList();

/** Registers `run` for the end of the test run; `what` names it in a failure report. */
export const atEndOfRun: TaskList["add"] = endOfRun.add;

/** Runs (and forgets) every task registered for the end of the run; the preload's `afterAll` calls it. */
export const runEndOfRun: TaskList["run"] = endOfRun.run;
