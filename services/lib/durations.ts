/**
 * The retry schedule's text form (`RETRY_SCHEDULE`, docs/delivery.md "Retries"): a comma-separated
 * list of durations, the delays before attempts 2..n. Parsed once at start-up by `config.ts`; the
 * retry policy (`delivery/retry-policy.ts`) works on the resulting milliseconds.
 *
 * A bare number means **seconds** (Svix's `retry_schedule` unit): misreading seconds as
 * milliseconds would hammer an endpoint; the other way round only waits longer.
 */

/** The default `RETRY_SCHEDULE` : delays before attempts 2..6. */
export const DEFAULT_RETRY_SCHEDULE_TEXT = "0,30s,2m,10m,30m";

const MAX_SCHEDULE_ENTRIES = 20;
const MAX_DELAY_MS = 7 * 24 * 3_600_000;
const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const ENTRY = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/;

/** Thrown by {@link parseRetrySchedule}; the message names the offending entry. */
export class RetryScheduleError extends Error {
  override name = "RetryScheduleError";
}

/**
 * Parses a schedule such as `"0,30s,2m,10m,30m"` into delays in milliseconds.
 * Entries are comma-separated, whitespace around them is ignored, units are `ms`, `s`, `m`, `h`
 * (lowercase); a bare number is seconds. Fractions are allowed and rounded to whole ms.
 * @throws RetryScheduleError on an empty schedule, an unparseable entry, or more than 20 entries / over 7 days.
 */
export function parseRetrySchedule(text: string): number[] {
  if (text.trim() === "") throw new RetryScheduleError("retry schedule is empty (expected e.g. 0,30s,2m)");
  const entries = text.split(",").map((e) => e.trim());
  if (entries.length > MAX_SCHEDULE_ENTRIES) {
    throw new RetryScheduleError(
      `retry schedule has ${entries.length} entries; at most ${MAX_SCHEDULE_ENTRIES}`,
    );
  }
  return entries.map((entry, i) => {
    const m = ENTRY.exec(entry);
    if (!m) {
      throw new RetryScheduleError(
        `retry schedule entry ${i + 1} ${JSON.stringify(entry)} is not a duration (a number with ms, s, m or h; bare numbers are seconds)`,
      );
    }
    const ms = Math.round(Number(m[1]) * (UNIT_MS[m[2] ?? "s"] ?? 1000));
    if (ms > MAX_DELAY_MS) {
      throw new RetryScheduleError(`retry schedule entry ${i + 1} ${JSON.stringify(entry)} exceeds 7 days`);
    }
    return ms;
  });
}
