/**
 * The project's intake policy at ingest (docs/routing.md, "Intake policy"): before a message is stored,
 * its `reject` rule refuses it (nothing is stored; SMTP answers `550 5.7.1`, the HTTP upload 422
 * `ingest.rejected`) and its `hold` rule stores it with every event `held`, delivered only once
 * released. Rules are the route rule language, keys on what the service understands included.
 */
import type { Envelope, NormalizedMessage } from "../lib/message.ts";
import { compileRule } from "../routing/rules.ts";

/** What the policy decides for one message. */
export type IntakeDecision = "accept" | "hold" | "reject";

/** Whether a stored rule holds; one that no longer compiles never holds (it cannot lose a message). */
function holds(rule: unknown, message: NormalizedMessage, envelope: Envelope | null): boolean {
  if (rule === null || rule === undefined) return false;
  try {
    return compileRule(rule)(message, envelope ?? undefined);
  } catch {
    return false;
  }
}

/** `reject` is checked first, then `hold`; no policy accepts. */
export function decideIntake(
  policy: { reject?: unknown; hold?: unknown } | null | undefined,
  message: NormalizedMessage,
  envelope: Envelope | null,
): IntakeDecision {
  if (!policy) return "accept";
  if (holds(policy.reject, message, envelope)) return "reject";
  if (holds(policy.hold, message, envelope)) return "hold";
  return "accept";
}
