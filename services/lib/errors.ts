/**
 * The closed list of error codes and their HTTP statuses, in one table: there is
 * no other code → status map anywhere (the attachment proxy's range refusals are codes here too).
 * Domain code throws `AppError`; the API's single error handler (api/errors.ts) renders
 * `{"error": {"code", "message", "details"?}}` with the status from this table, and so does the
 * dashboard's (ui/guard.ts).
 *
 * Why the statuses live here and not in api/errors.ts: two renderers need them, the API and the
 * dashboard, and the dashboard may not import the API (tools/deps/rules.ts). The status is part of
 * each code's published meaning (docs/architecture.md, Invariants), not a choice of one renderer.
 */
export const ERROR_STATUS = {
  "auth.missing_api_key": 401,
  "auth.invalid_api_key": 401,
  "auth.missing_setup_token": 401,
  "auth.invalid_setup_token": 401,
  "auth.missing_metrics_token": 401,
  "auth.invalid_metrics_token": 401,
  "request.invalid": 422,
  "request.not_found": 404,
  "request.method_not_allowed": 405,
  "request.too_large": 413,
  "request.unsupported_media_type": 415,
  "projects.not_found": 404,
  "projects.invalid_intake_policy": 422,
  "projects.invalid_notifications": 422,
  "api_keys.not_found": 404,
  "api_keys.last_active_key": 409,
  "endpoints.not_found": 404,
  "endpoints.invalid_url": 422,
  "endpoints.in_use": 409,
  "endpoints.private_address": 422,
  "signing_secrets.not_found": 404,
  "signing_secrets.in_use": 409,
  "routes.not_found": 404,
  "routes.invalid_rule": 422,
  "routes.invalid_pipeline": 422,
  "routes.invalid_reference": 422,
  "routes.invalid_attachment_policy": 422,
  "messages.not_found": 404,
  "messages.ambiguous": 409,
  "mailboxes.not_found": 404,
  "mailboxes.private_host": 422,
  "mailboxes.invalid_host": 422,
  "attachments.not_found": 404,
  "attachments.expired": 410,
  "attachments.reused": 410,
  "attachments.range_invalid": 400,
  "attachments.range_not_satisfiable": 416,
  "domains.not_found": 404,
  "domains.invalid": 422,
  "domains.taken": 409,
  "domains.mx_mismatch": 422,
  "domains.txt_missing": 422,
  "domains.dns_failed": 502,
  "addresses.not_found": 404,
  "addresses.invalid": 422,
  "addresses.domain_not_verified": 422,
  "addresses.taken": 409,
  "events.not_found": 404,
  "events.not_replayable": 409,
  "events.not_held": 409,
  "jobs.not_found": 404,
  "events.message_erased": 409,
  "ingest.too_large": 413,
  "ingest.quota_exceeded": 507,
  "ingest.unparseable": 422,
  "ingest.unavailable": 503,
  "ingest.rejected": 422,
  "mapper.invalid_config": 422,
  "mapper.runtime_error": 422,
  "service.unavailable": 503,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** One problem with a request, located by a JSON pointer into the request body or query. */
export interface ErrorDetail {
  path: string;
  message: string;
  code?: string;
}

/**
 * A refusal with a code from {@link ERROR_STATUS}. `details` locate problems in the request;
 * `headers` are the few protocol headers a refusal must carry to be correct, which only the code's
 * thrower can compute: today only `Content-Range: bytes *\/<size>` on a 416 (RFC 9110 §15.5.17), whose
 * size the attachment proxy knows and the error handler does not.
 */
export class AppError extends Error {
  override name = "AppError";
  /** The HTTP status of {@link code}, from {@link ERROR_STATUS}. */
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }
}

/** The error body every refusal is rendered as: `{"error": {"code", "message", "details"?}}`. */
export function errorBody(code: string, message: string, details?: ErrorDetail[]) {
  return { error: { code, message, ...(details && details.length > 0 ? { details } : {}) } };
}
