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

type Schema = {
  type?: string;
  const?: unknown;
  anyOf?: Schema[];
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  format?: string;
  items?: Schema;
};

/** The constants a schema allows, when it is a choice of constants (or a list of them); else null. */
function allowedValues(schema: Schema | undefined): unknown[] | null {
  if (!schema) return null;
  if (Array.isArray(schema.enum)) return schema.enum;
  if ("const" in schema) return [schema.const];
  if (schema.items) return allowedValues(schema.items);
  if (!schema.anyOf) return null;
  const values: unknown[] = [];
  for (const option of schema.anyOf) {
    const inner = allowedValues(option);
    if (!inner) return null;
    values.push(...inner);
  }
  return values;
}

/** The integer variant of a schema (Elysia turns a query integer into `string | integer`), if any. */
function integerSchema(schema: Schema | undefined): Schema | null {
  if (!schema) return null;
  if (schema.type === "integer") return schema;
  return schema.anyOf?.find((o) => o.type === "integer") ?? null;
}

/**
 * A sentence a person can act on: the allowed values of a choice, the range of an integer. Elysia's
 * own summary for a union reads "should be one of: 'string', 'string'", which names types, not values.
 */
function describeExpectation(name: string, schema: Schema | undefined, fallback: string): string {
  const allowed = allowedValues(schema);
  if (allowed && allowed.length > 0) {
    return `${name} must be one of: ${allowed.map((v) => String(v)).join(", ")}`;
  }
  const integer = integerSchema(schema);
  if (integer) {
    const { minimum: min, maximum: max } = integer;
    if (min !== undefined && max !== undefined) return `${name} must be an integer from ${min} to ${max}`;
    if (min !== undefined) return `${name} must be an integer of at least ${min}`;
    if (max !== undefined) return `${name} must be an integer of at most ${max}`;
    return `${name} must be an integer`;
  }
  return fallback;
}

/**
 * The query parameter a nameless error is about. Elysia checks a coerced query number on its own and
 * reports it without its name (path ""), so the name is recovered from the request: the one parameter
 * whose value coerces to the failing value.
 */
function queryParameterOf(request: Request, value: unknown): string | null {
  const params = new URL(request.url).searchParams;
  const names = [...new Set(params.keys())].filter((k) =>
    params.getAll(k).some((v) => v === String(value) || Number(v) === value),
  );
  return names.length === 1 ? (names[0] as string) : null;
}

function validationDetails(
  error: ValidationError,
  where: string | undefined,
  request: Request,
): ErrorDetail[] {
  try {
    return error.all.map((e) => {
      const item = e as {
        path?: string;
        summary?: string;
        message?: string;
        schema?: Schema;
        value?: unknown;
      };
      let path = item.path || "";
      if (!path && where === "property") {
        const name = queryParameterOf(request, item.value ?? (error as { value?: unknown }).value);
        if (name) path = `/${name}`;
      }
      const fallback = item.summary ?? item.message ?? "invalid value";
      const name = path.split("/").filter(Boolean).join(".");
      const message = name ? describeExpectation(`'${name}'`, item.schema, fallback) : fallback;
      return { path: path || "/", message };
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
        // "property" is a query value Elysia coerced and checked on its own (a number)
        const where = (v as { type?: string }).type;
        const part =
          where === "query" || where === "property" ? "query" : where === "params" ? "path" : "body";
        set.status = 422;
        return errorBody(
          "request.invalid",
          `the request ${part} is invalid`,
          validationDetails(v, where, request),
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
