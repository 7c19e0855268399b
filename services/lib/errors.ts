/**
 * The closed list of error codes (contract section 2) and their HTTP statuses, in one table.
 * Domain code throws `AppError`; the API's single error handler renders
 * `{"error": {"code", "message", "details"?}}` with the status from this table.
 */
export const ERROR_STATUS = {
  "auth.missing_api_key": 401,
  "auth.invalid_api_key": 401,
  "auth.missing_setup_token": 401,
  "auth.invalid_setup_token": 401,
  "request.invalid": 422,
  "request.not_found": 404,
  "request.method_not_allowed": 405,
  "request.too_large": 413,
  "request.unsupported_media_type": 415,
  "projects.not_found": 404,
  "api_keys.not_found": 404,
  "api_keys.last_active_key": 409,
  "endpoints.not_found": 404,
  "endpoints.invalid_url": 422,
  "endpoints.in_use": 409,
  "signing_secrets.not_found": 404,
  "signing_secrets.in_use": 409,
  "routes.not_found": 404,
  "routes.invalid_rule": 422,
  "routes.invalid_pipeline": 422,
  "routes.invalid_reference": 422,
  "messages.not_found": 404,
  "attachments.not_found": 404,
  "attachments.expired": 410,
  "attachments.reused": 410,
  "attachments.range_invalid": 400,
  "attachments.range_not_satisfiable": 416,
  "events.not_found": 404,
  "events.not_replayable": 409,
  "ingest.too_large": 413,
  "ingest.quota_exceeded": 507,
  "ingest.unparseable": 422,
  "ingest.unavailable": 503,
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

export class AppError extends Error {
  override name = "AppError";
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

export function errorBody(code: string, message: string, details?: ErrorDetail[]) {
  return { error: { code, message, ...(details && details.length > 0 ? { details } : {}) } };
}
