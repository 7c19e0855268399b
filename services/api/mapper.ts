/**
 * The mapper over HTTP (docs/api.md): validate a config, preview it on an inline or stored message, and the
 * public JSON Schemas under `{base_url}/v1/schemas/transform/…`.
 */
import { Elysia, t } from "elysia";
import { mapperSchemas, validateMapperConfig } from "../../mapper/index.ts";
import { ambiguousMessageId } from "../attachments/tokens.ts";
import type { AppContext } from "../context.ts";
import { AppError } from "../lib/errors.ts";
import { metrics } from "../lib/metrics.ts";
import { type PreviewResult, type PreviewSource, previewMapper } from "../resources/mapper-preview.ts";
import { MapperWarningSchema, mapperConfigWarnings } from "../resources/mapper-warnings.ts";
import type { ValidationIssue } from "../routing/issues.ts";
import { genericSchema, genericV2Schema } from "../routing/schemas/generic.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];

type PreviewBody = { message?: unknown; message_raw?: string; message_id?: string };

/** The request's one message source: inline model fields, raw text or a stored Message-ID (else empty). */
function previewSource(body: PreviewBody): PreviewSource {
  // One source of message: a second one would be silently ignored.
  // (A null counts as absent: JSON clients often send every field.)
  const given = (["message", "message_raw", "message_id"] as const).filter(
    (k) => body[k] !== undefined && body[k] !== null,
  );
  if (given.length > 1) {
    throw new AppError(
      "request.invalid",
      `give one of message, message_raw and message_id (got ${given.join(" and ")})`,
      given.slice(1).map((k) => ({ path: `/${k}`, message: `${given[0]} is already given` })),
    );
  }
  if (body.message_id !== undefined) return { kind: "message_id", messageId: body.message_id };
  if (body.message_raw !== undefined) return { kind: "raw", text: body.message_raw };
  const inline = body.message;
  if (inline !== undefined && (typeof inline !== "object" || inline === null || Array.isArray(inline))) {
    throw new AppError("request.invalid", "message must be an object", [
      { path: "/message", message: "expected an object" },
    ]);
  }
  return { kind: "inline", fields: (inline as Record<string, unknown> | undefined) ?? {} };
}

/** The preview's output, or the AppError its failure is reported as. */
function previewOutput(result: PreviewResult, source: PreviewSource): unknown {
  if (result.ok) return result.output;
  switch (result.stage) {
    case "config":
      throw invalidConfig(result.issues);
    case "message":
      if (result.problem === "not_found")
        throw new AppError("messages.not_found", "no stored message with that Message-ID in this project");
      if (result.problem === "ambiguous") {
        const asked = source.kind === "message_id" ? source.messageId : "";
        throw ambiguousMessageId(asked, result.messagePks);
      }
      // "unparseable" ("too_large" needs a limit this endpoint leaves to its body schema)
      throw new AppError("request.invalid", result.detail, [
        { path: "/message_raw", message: result.detail },
      ]);
    case "runtime": {
      const err = result.error;
      metrics.mapperErrors.inc({ stage: "preview", code: err.code });
      // Where the run stopped: the var or the output (`/config/vars/3/expr`, `/config/output`).
      throw new AppError("mapper.runtime_error", err.message, [
        { path: `/config${err.path ?? ""}`, message: err.message, code: err.code },
      ]);
    }
  }
}

/** `mapper.invalid_config` with each issue's path under `/config`. */
function invalidConfig(issues: readonly ValidationIssue[]): AppError {
  return new AppError(
    "mapper.invalid_config",
    "the mapper config is invalid",
    issues.map((e) => ({
      path: `/config${e.path === "/" ? "" : e.path}`,
      message: e.message,
      ...(e.code ? { code: e.code } : {}),
    })),
  );
}

/** Throws `mapper.invalid_config` for an invalid config; else its near-miss warnings (docs/mapper.md, "Warnings"). */
function checkConfig(config: unknown): ValidationIssue[] {
  const result = validateMapperConfig(config);
  if (!result.ok) throw invalidConfig(result.errors);
  return mapperConfigWarnings(config);
}

export function mapperApi(ctx: AppContext) {
  const schemaBase = `${ctx.config.publicBaseUrl}/v1/schemas`;
  const schemas = mapperSchemas(schemaBase);
  const documents: Record<string, Record<string, unknown>> = {
    "custom_json_mapper@1": schemas.mapper,
    "custom_json_output@1": schemas.output,
    "generic@1": genericSchema(schemaBase),
    "generic@2": genericV2Schema(schemaBase),
  };
  const authed = new Elysia({ tags: ["mapper"] })
    .use(projectAuth(ctx))
    .post("/mapper/validate", ({ body }) => ({ valid: true as const, warnings: checkConfig(body.config) }), {
      body: t.Object({ config: t.Unknown() }, { additionalProperties: false }),
      response: {
        200: t.Object({ valid: t.Literal(true), warnings: t.Array(MapperWarningSchema) }),
        ...authErrors,
        ...validationErrors,
      },
      detail: {
        summary: "Validate a map.custom_json config (422 mapper.invalid_config with paths)",
        security,
      },
    })
    .post(
      "/mapper/preview",
      async ({ auth, body }) => {
        const source = previewSource(body);
        const result = await previewMapper(ctx, auth.projectId, {
          config: body.config,
          source,
          ...(body.meta ? { meta: body.meta } : {}),
        });
        return { output: previewOutput(result, source) };
      },
      {
        body: t.Object(
          {
            config: t.Unknown(),
            message: t.Optional(t.Unknown()),
            message_raw: t.Optional(t.String({ maxLength: 10 * 1024 * 1024 })),
            message_id: t.Optional(t.String({ minLength: 1, maxLength: 1000 })),
            meta: t.Optional(t.Record(t.String(), t.Unknown())),
          },
          { additionalProperties: false },
        ),
        response: {
          200: t.Object({ output: t.Unknown() }),
          404: ErrorBody,
          409: ErrorBody,
          ...authErrors,
          ...validationErrors,
        },
        detail: {
          summary:
            "Run a mapper config on an inline message (model object or raw RFC 5322 text) or a stored message (by Message-ID)",
          security,
        },
      },
    );
  return new Elysia().use(authed).get(
    "/schemas/transform/:name",
    ({ params, set }) => {
      // Own keys only: `valueOf` or `constructor` would otherwise find Object.prototype members (a 500).
      const doc = Object.hasOwn(documents, params.name) ? documents[params.name] : undefined;
      if (!doc) throw new AppError("request.not_found", `no schema named ${params.name}`);
      set.headers["content-type"] = "application/schema+json";
      return doc;
    },
    {
      params: t.Object({ name: t.String() }),
      response: { 200: t.Record(t.String(), t.Unknown()), 404: ErrorBody },
      detail: {
        tags: ["schemas"],
        summary: "JSON Schemas: custom_json_mapper@1, custom_json_output@1, generic@1, generic@2",
      },
    },
  );
}
