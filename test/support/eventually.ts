/**
 * The one way a test waits for work it does not control (a worker, a child process, a socket): poll a
 * probe until its answer says the condition holds, with a deadline. No fixed sleeps.
 *
 * Invariants:
 * - The probe runs at least once, and once more after the deadline has passed, so a slow machine
 *   never fails a condition that holds by the time the deadline is checked.
 * - On timeout the error names what was awaited and prints the probe's last answer (or its last error),
 *   so a failure says what the test saw instead of only that it waited.
 */

/** What a probe answers while the condition does not hold (when no `until` is given). */
type NotYet = undefined | null | false;

export interface EventuallyOptions<T> {
  /** the condition on the probe's answer; default: the answer is not undefined, null or false */
  until?: (value: T) => boolean;
  /** pause between probes (default 10 ms) */
  everyMs?: number;
  /** a probe that throws counts as "not yet" (its error becomes the last answer) instead of failing */
  retryErrors?: boolean;
}

const present = (v: unknown) => v !== undefined && v !== null && v !== false;

/** The last answer, readable in an error message (long answers are cut). */
function readable(value: unknown): string {
  let text: string;
  if (value instanceof Error) text = `${value.name}: ${value.message}`;
  else if (typeof value === "string") text = JSON.stringify(value);
  else {
    try {
      text = JSON.stringify(value) ?? String(value);
    } catch {
      text = String(value);
    }
  }
  return text.length > 4000 ? `${text.slice(0, 4000)}… (${text.length} chars)` : text;
}

/**
 * Polls `probe` until it answers (not undefined, null or false, or what `options.until` accepts) and
 * returns that answer; throws after `timeoutMs` with `what` and the last answer.
 *
 *   const row = await eventually("the event to be delivered", () => eventRow(id), 10_000, {
 *     until: (e) => e?.status === "delivered",
 *   });
 */
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 10_000,
  options: EventuallyOptions<T> = {},
): Promise<Exclude<T, NotYet>> {
  const done = options.until ?? present;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const late = Date.now() > deadline;
    try {
      const value = await probe();
      if (done(value)) return value as Exclude<T, NotYet>;
      last = value;
    } catch (error) {
      if (!options.retryErrors) throw error;
      last = error;
    }
    if (late)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last answer: ${readable(last)}`);
    await Bun.sleep(options.everyMs ?? 10);
  }
}
