/**
 * The retry policy as pure functions (spec: States and transitions, Limits; docs/delivery.md).
 *
 * The schedule itself is parsed at start-up by `lib/durations.ts` (`RETRY_SCHEDULE`).
 *
 * Nothing here reads the clock or `Math.random`: the worker passes `nowMs` and `random` in, so a
 * table test pins every branch. Decisions:
 * - A bare number in `RETRY_SCHEDULE` means **seconds** (Svix's `retry_schedule` unit). Misreading
 *   seconds as milliseconds would hammer an endpoint; the other way round only waits longer.
 * - The attempt budget is `schedule.length + 1` (the default 5-entry schedule gives the spec's 6).
 * - Jitter is ±10% of the scheduled delay.
 * - `Retry-After` counts only on 429 and 503 (the statuses RFC 9110 §10.2.3 / RFC 6585 §4 give it
 *   meaning for). It may lengthen the wait, never shorten it below the jittered schedule, and is
 *   capped at `max(2 × scheduled, 60 s)` so a receiver cannot park an event for hours; the 60 s
 *   floor of the cap lets "attempt 2 is immediate" still honour a short Retry-After.
 */

/** Outcome of one attempt, per the spec's receiver response classification. */
export type AttemptOutcome = "success" | "retry" | "terminal";

/** Relative jitter applied to scheduled delays (docs/delivery.md allows ±10%). */
export const RETRY_JITTER = 0.1;

/** Lower bound of the Retry-After cap, so a zero scheduled delay can still honour a short Retry-After. */
export const RETRY_AFTER_MIN_CAP_MS = 60_000;

/** The number of attempts a schedule allows: the first attempt plus one per delay. */
export function attemptBudget(schedule: readonly number[]): number {
  return schedule.length + 1;
}

/**
 * Classifies one attempt (spec: Receiver response classification). A received status decides when
 * there is one, even if the body read failed afterwards: 2xx → success; 408, 409, 425, 429 and 5xx
 * → retry; every other status, 3xx included (redirects are not followed, docs/delivery.md), → terminal.
 * No status (absent or 0) means no response: a network error, which is retried — except an SSRF
 * refusal (`ssrf_blocked:<address>`), which no retry can change: it is terminal.
 */
export function classifyOutcome(input: { status?: number; networkError?: string | null }): AttemptOutcome {
  const { status } = input;
  if (status === undefined || status <= 0) {
    return input.networkError?.startsWith("ssrf_blocked:") ? "terminal" : "retry";
  }
  if (status >= 200 && status <= 299) return "success";
  if (status === 408 || status === 409 || status === 425 || status === 429) return "retry";
  if (status >= 500 && status <= 599) return "retry";
  return "terminal";
}

/** Inputs of {@link nextAttemptDelay}. */
export interface NextAttemptInput {
  /** The attempt that just failed with a retryable outcome, 1-based. */
  attemptNumber: number;
  /** Delays before attempts 2..n, from `parseRetrySchedule` (lib/durations.ts). */
  schedule: readonly number[];
  /** Status of the failed attempt (0 or absent when there was no response). */
  status?: number;
  /** Raw `Retry-After` response header, if any. */
  retryAfterHeader?: string | null;
  /** Uniform random number in [0, 1), injected. */
  random: () => number;
  /** Current time in ms since the epoch; needed only to honour an HTTP-date `Retry-After`. */
  nowMs?: number;
  /** Overrides {@link attemptBudget}; later attempts reuse the last schedule entry. */
  maxAttempts?: number;
}

/**
 * Milliseconds to wait before the next attempt, or `null` when the attempt budget is used up.
 * See the module comment for jitter and the `Retry-After` rule.
 */
export function nextAttemptDelay(input: NextAttemptInput): number | null {
  const { attemptNumber, schedule, random } = input;
  if (!Number.isSafeInteger(attemptNumber) || attemptNumber < 1) {
    throw new RangeError(`attemptNumber must be a positive integer, got ${attemptNumber}`);
  }
  if (schedule.length === 0) return null;
  const budget = input.maxAttempts ?? attemptBudget(schedule);
  if (attemptNumber >= budget) return null;

  const scheduled = schedule[Math.min(attemptNumber, schedule.length) - 1] ?? 0;
  const jittered = Math.max(0, Math.round(scheduled * (1 + RETRY_JITTER * (2 * random() - 1))));

  if (input.status !== 429 && input.status !== 503) return jittered;
  const requested = parseRetryAfter(input.retryAfterHeader, input.nowMs);
  if (requested === null || requested <= jittered) return jittered;
  // Positive-only jitter: never earlier than the receiver asked, yet not all at the same instant.
  const spread = Math.round(requested * (1 + RETRY_JITTER * random()));
  return Math.min(spread, Math.max(2 * scheduled, RETRY_AFTER_MIN_CAP_MS));
}

/**
 * Parses `Retry-After` (RFC 9110 §10.2.3): `delay-seconds` (digits only) or an HTTP-date
 * (RFC 9110 §5.6.7; accepted when it ends in `GMT`, so asctime's zone-less form, which `Date.parse`
 * would read as local time, is ignored). Returns milliseconds from `nowMs`, never negative, or
 * `null` when absent, malformed, or a date without a clock to compare against.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs?: number): number | null {
  if (value === null || value === undefined) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) {
    const seconds = Number(v);
    return Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : null;
  }
  if (nowMs === undefined || !/GMT$/.test(v)) return null;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}
