/**
 * The one error handler. Every failure leaves as `{"error": {"code", "message", "details"?}}` with the
 * status from `ERROR_STATUS`; a 500 never carries internals (they go to the log with the request id).
 */
import type { ValidationError } from "elysia";
import { isDatabaseUnavailable } from "../lib/db-errors.ts";
import { AppError, type ErrorDetail, errorBody } from "../lib/errors.ts";
import type { Logger } from "../lib/logger.ts";

interface ErrorHandlerInput {
  code: string | number;
  error: unknown;
  set: { status?: number | string; headers: Record<string, string | number> };
  request: Request;
}

function validationDetails(error: ValidationError): ErrorDetail[] {
  try {
    return error.all.map((e) => {
      const item = e as { path?: string; summary?: string; message?: string };
      return { path: item.path || "/", message: item.summary ?? item.message ?? "invalid value" };
    });
  } catch {
    return [];
  }
}

function render(error: AppError, set: ErrorHandlerInput["set"]) {
  set.status = error.status;
  if (error.headers) Object.assign(set.headers, error.headers);
  return errorBody(error.code, error.message, error.details);
}

function unavailable(logger: Logger, error: unknown, set: ErrorHandlerInput["set"]) {
  logger.warn("database unavailable", { err: error, req_id: set.headers["x-request-id"] });
  set.status = 503;
  set.headers["retry-after"] = "1";
  return errorBody("service.unavailable", "the database is unavailable right now; retry shortly");
}

/** The `onError` hook of the API (and of the root app around it). */
export function createErrorHandler(logger: Logger) {
  return ({ code, error, set, request }: ErrorHandlerInput) => {
    if (error instanceof AppError) return render(error, set);
    switch (code) {
      case "VALIDATION": {
        const v = error as ValidationError;
        const where = (v as { type?: string }).type;
        set.status = 422;
        return errorBody(
          "request.invalid",
          `the request ${where === "query" ? "query" : where === "params" ? "path" : "body"} is invalid`,
          validationDetails(v),
        );
      }
      case "PARSE": {
        // Elysia wraps whatever a parse hook throws; the auth guards and the body limit throw AppErrors
        // there (auth.ts, body-limit.ts), which keep their own code and status.
        // A key lookup that finds the database down is a 503 there as anywhere.
        const cause = (error as { cause?: unknown }).cause;
        if (cause instanceof AppError) return render(cause, set);
        if (isDatabaseUnavailable(cause)) return unavailable(logger, cause, set);
        // docs/api.md#errors: a malformed body is `request.invalid` (400; 422 when it parses but is wrong).
        set.status = 400;
        return errorBody("request.invalid", "the request body could not be parsed (expected JSON)", [
          { path: "", message: "the body is not valid JSON" },
        ]);
      }
      case "NOT_FOUND":
        set.status = 404;
        return errorBody("request.not_found", "no such operation; see /v1/openapi.json");
      case "INVALID_COOKIE_SIGNATURE":
        set.status = 400;
        return errorBody("request.invalid", "invalid cookie", [
          { path: "", message: "a cookie's signature is invalid" },
        ]);
    }
    const status =
      typeof (error as { status?: unknown })?.status === "number"
        ? (error as { status: number }).status
        : 500;
    if (status === 413) {
      set.status = 413;
      return errorBody("request.too_large", "the request body is too large");
    }
    if (isDatabaseUnavailable(error)) return unavailable(logger, error, set);
    logger.error("unhandled error", {
      err: error,
      // Set by the ops plugin's onRequest hook; links this line to the access line and the response.
      req_id: set.headers["x-request-id"],
      path: new URL(request.url).pathname,
      code: String(code),
    });
    set.status = 500;
    return errorBody("internal", "internal error; the service logged the details");
  };
}
