/**
 * The project's intake policy at ingest (docs/routing.md, "Intake policy"): before a message is stored,
 * its `reject` rule refuses it (nothing is stored; SMTP answers `550 5.7.1`, the HTTP upload 422
 * `ingest.rejected`) and its `hold` rule stores it with every event `held`, delivered only once
 * released. Rules are the route rule language, keys on what the service understands included.
 */
import type { AppContext } from "../context.ts";
import type { Envelope, NormalizedMessage } from "../lib/message.ts";
import {
  type PendingNotification,
  pendingNotification,
  raiseNotification,
} from "../resources/notifications.ts";
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

/**
 * The `message.held` or `message.rejected` notification (docs/delivery.md, "Notifications") of a
 * message the policy held or refused: one per message, naming the rule that decided.
 */
export function intakeNotification(input: {
  decision: "hold" | "reject";
  projectId: string;
  policy: { reject?: unknown; hold?: unknown } | null | undefined;
  message: NormalizedMessage;
  /** the stored message's id; absent for a refused message, which is not stored */
  storedId?: string;
  now: Date;
}): PendingNotification {
  const { message } = input;
  return pendingNotification({
    projectId: input.projectId,
    type: input.decision === "hold" ? "message.held" : "message.rejected",
    data: {
      message_id: message.message_id,
      ...(input.storedId ? { msg_id: input.storedId } : {}),
      project: input.projectId,
      rule: (input.decision === "hold" ? input.policy?.hold : input.policy?.reject) ?? null,
      reason: input.decision === "hold" ? "intake_policy.hold" : "intake_policy.reject",
      from: message.from[0]?.email ?? null,
      subject: message.subject,
    },
    now: input.now,
  });
}

/**
 * Raises `message.rejected` for a refused message, which leaves nothing stored: queued on its own
 * (a held message's notification goes into the statement storing it, store.ts). Never throws.
 */
export async function notifyRejected(
  ctx: AppContext,
  input: Omit<Parameters<typeof intakeNotification>[0], "decision" | "now" | "storedId">,
): Promise<void> {
  const n = intakeNotification({ ...input, decision: "reject", now: ctx.clock.now() });
  await raiseNotification(ctx, { projectId: n.project_id, type: n.body.type, data: n.body.data });
}
