/**
 * Why an event ended `dead` without a delivery attempt, as one closed list (docs/delivery.md,
 * "Outcomes and retries"). A reason is a typed `{code, detail}`; {@link formatDeadReason} is the only
 * place that turns it into the `events.last_error` text, which users read through the API and the
 * dashboard.
 *
 * Invariant: the texts are published. `<code>: <detail>` for every code except `mapper`, whose text is
 * `mapper:<mapper error code>` (docs/mapper.md, "Errors and guards"), so changing a constructor below
 * changes what users see and what their tooling may match on.
 *
 * Failed attempts (`http 503: …`, `timeout after …`) are worded by delivery/outcome.ts; discarded
 * events (`mime_discard:<reason>`) by mail/policy.ts. Neither is a dead reason in this sense.
 */

/** The closed list of dead-reason codes. */
export const DEAD_REASON_CODES = [
  "route_deleted",
  "endpoint_deleted",
  "signing_secret_deleted",
  "message_missing",
  "message_erased",
  "pipeline_error",
  "mapper",
] as const;

/** One of {@link DEAD_REASON_CODES}. */
export type DeadReasonCode = (typeof DEAD_REASON_CODES)[number];

/** Why an event cannot be delivered: a code from the closed list and what the user should know. */
export interface DeadReason {
  readonly code: DeadReasonCode;
  readonly detail: string;
}

/** The `events.last_error` text of `reason`. */
export function formatDeadReason(reason: DeadReason): string {
  return reason.code === "mapper" ? `mapper:${reason.detail}` : `${reason.code}: ${reason.detail}`;
}

/**
 * The event's route was deleted: before an attempt (`when: "attempt"`), or before a queued replay
 * could take its snapshot (`when: "replay"`).
 */
export function routeDeleted(routeId: string, when: "attempt" | "replay"): DeadReason {
  const tail = when === "replay" ? "; the replay cannot run" : "";
  return { code: "route_deleted", detail: `route ${routeId} was deleted${tail}` };
}

/** The endpoint of the event's route snapshot was deleted. */
export function endpointDeleted(endpointId: string): DeadReason {
  return {
    code: "endpoint_deleted",
    detail: `endpoint ${endpointId} was deleted; replay after pointing the route at another endpoint`,
  };
}

/** The signing secret of the event's route snapshot was deleted. */
export function signingSecretDeleted(kid: string): DeadReason {
  return {
    code: "signing_secret_deleted",
    detail: `signing secret ${kid} was deleted; replay after giving the route another kid`,
  };
}

/** The event's message was erased (`DELETE /v1/messages/{message_id}`) before its body was sent. */
export function messageErased(): DeadReason {
  return { code: "message_erased", detail: "the message was erased; there is nothing to deliver" };
}

/** The stored message the body is built from is gone. */
export function messageMissing(): DeadReason {
  return { code: "message_missing", detail: "the stored message is gone" };
}

/** The pipeline could not run (no final `map.*` step, or a step failed): `message` says why. */
export function pipelineError(message: string): DeadReason {
  return { code: "pipeline_error", detail: message };
}

/**
 * `map.custom_json` failed with the mapper error `mapperCode` (`mapper.timeout`, …); `cause` is
 * added in parentheses when the mapper could not run at all (`mapper.unavailable`).
 */
export function mapperFailed(mapperCode: string, cause?: string): DeadReason {
  return { code: "mapper", detail: cause === undefined ? mapperCode : `${mapperCode} (${cause})` };
}
