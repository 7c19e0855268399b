/**
 * What one attempt's result does to its event (spec: States and transitions), as a pure function so
 * the table of cases can be tested without a network: the new status, an actionable `last_error`, and
 * the next attempt time from the retry policy. The attempt budget counts from `budget_start`, so a
 * replay gets a fresh budget of 6 (docs/delivery.md, "Replay").
 */
import type { DispatchResult } from "./dispatch.ts";
import { attemptBudget, classifyOutcome, nextAttemptDelay } from "./retry-policy.ts";

/** Inputs of {@link decideOutcome}. */
export interface OutcomeInput {
  result: Pick<DispatchResult, "status" | "headers" | "bodyPreview" | "networkError">;
  /** `events.attempts` before this attempt. */
  attemptsBefore: number;
  /** `events.budget_start`: the attempt count when the current budget began. */
  budgetStart: number;
  /** Delays before attempts 2..n in ms (`RETRY_SCHEDULE`). */
  schedule: readonly number[];
  nowMs: number;
  random: () => number;
}

/** The event's new state after an attempt. */
export interface Outcome {
  attemptStatus: "success" | "failed";
  eventStatus: "delivered" | "retry" | "dead";
  lastError: string | null;
  nextAttemptAt: Date | null;
}

const SNIPPET_CHARS = 200;

/** Decides the event's state after one attempt; see the module comment. */
export function decideOutcome(input: OutcomeInput): Outcome {
  const { result } = input;
  const kind = classifyOutcome({ status: result.status, networkError: result.networkError });
  if (kind === "success") {
    return { attemptStatus: "success", eventStatus: "delivered", lastError: null, nextAttemptAt: null };
  }
  const error = describeFailure(result);
  if (kind === "terminal") {
    return { attemptStatus: "failed", eventStatus: "dead", lastError: error, nextAttemptAt: null };
  }
  const attemptNumber = input.attemptsBefore + 1 - input.budgetStart;
  const delay = nextAttemptDelay({
    attemptNumber: Math.max(1, attemptNumber),
    schedule: input.schedule,
    status: result.status,
    retryAfterHeader: result.headers["retry-after"] ?? null,
    random: input.random,
    nowMs: input.nowMs,
  });
  if (delay === null) {
    return {
      attemptStatus: "failed",
      eventStatus: "dead",
      lastError: `${error} (gave up after ${attemptBudget(input.schedule)} attempts)`,
      nextAttemptAt: null,
    };
  }
  return {
    attemptStatus: "failed",
    eventStatus: "retry",
    lastError: error,
    nextAttemptAt: new Date(input.nowMs + delay),
  };
}

/**
 * `last_error` for a failed attempt, worded so a user can act on it: `http 503: <body snippet>`,
 * `http 302: redirects are not followed (location: …)`, or the network error as dispatch named it
 * (`timeout after 10000 ms`, `ssrf_blocked:127.0.0.1`, `connection_reset: …`).
 */
export function describeFailure(
  result: Pick<DispatchResult, "status" | "headers" | "bodyPreview" | "networkError">,
): string {
  if (result.status <= 0) return result.networkError ?? "network_error: no response";
  if (result.status >= 300 && result.status <= 399) {
    const location = result.headers.location;
    return `http ${result.status}: redirects are not followed${location ? ` (location: ${location})` : ""}`;
  }
  const snippet = result.bodyPreview.replace(/\s+/g, " ").trim().slice(0, SNIPPET_CHARS);
  return snippet ? `http ${result.status}: ${snippet}` : `http ${result.status}`;
}
