/**
 * The mapper over HTTP (contract §2): validate a config, preview it on an inline or stored message, and the
 * public JSON Schemas under `{base_url}/v1/schemas/transform/…`.
 */
import { and, desc, eq } from "drizzle-orm";
import { Elysia, t } from "elysia";
import { MapperRuntimeError, mapperSchemas, validateMapperConfig } from "../../mapper/index.ts";
import type { AppContext } from "../context.ts";
import { messages } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { metrics } from "../lib/metrics.ts";
import {
  emptyMessage,
  type PreviewMessage,
  parsePastedMessage,
  previewInput,
} from "../resources/mapper-preview.ts";
import { genericSchema } from "../routing/schemas/generic.ts";
import { projectAuth } from "./auth.ts";
import { authErrors, ErrorBody, validationErrors } from "./schemas.ts";

const security = [{ apiKey: [] }];

async function previewMessage(
  ctx: AppContext,
  projectId: string,
  body: { message?: unknown; message_raw?: string; message_id?: string },
): Promise<PreviewMessage> {
  const now = ctx.clock.now();
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
  if (body.message_id !== undefined) {
    const id = body.message_id.trim();
    const candidates = id.startsWith("<") ? [id] : [id, `<${id}>`];
    for (const messageId of candidates) {
      const [row] = await ctx.database.db
        .select({ parsed: messages.parsed, size: messages.rawSizeBytes, source: messages.sourceType })
        .from(messages)
        .where(and(eq(messages.projectId, projectId), eq(messages.messageId, messageId)))
        .orderBy(desc(messages.receivedAt))
        .limit(1);
      if (row) return { message: row.parsed, rawSize: row.size, source: row.source };
    }
    throw new AppError("messages.not_found", "no stored message with that Message-ID in this project");
  }
  if (body.message_raw !== undefined) {
    return parsePastedMessage(ctx, body.message_raw);
  }
  const inline = body.message;
  if (inline !== undefined && (typeof inline !== "object" || inline === null || Array.isArray(inline))) {
    throw new AppError("request.invalid", "message must be an object", [
      { path: "/message", message: "expected an object" },
    ]);
  }
  return {
    message: emptyMessage(now, (inline as Record<string, unknown>) ?? {}),
    rawSize: 0,
    source: "api",
  };
}

function checkConfig(config: unknown): void {
  const result = validateMapperConfig(config);
  if (!result.ok) {
    throw new AppError(
      "mapper.invalid_config",
      "the mapper config is invalid",
      result.errors.map((e) => ({
        path: `/config${e.path === "/" ? "" : e.path}`,
        message: e.message,
        ...(e.code ? { code: e.code } : {}),
      })),
    );
  }
}

export function mapperApi(ctx: AppContext) {
  const schemaBase = `${ctx.config.publicBaseUrl}/v1/schemas`;
  const schemas = mapperSchemas(schemaBase);
  const documents: Record<string, Record<string, unknown>> = {
    "custom_json_mapper@1": schemas.mapper,
    "custom_json_output@1": schemas.output,
    "generic@1": genericSchema(schemaBase),
  };
  const authed = new Elysia({ tags: ["mapper"] })
    .use(projectAuth(ctx))
    .post(
      "/mapper/validate",
      ({ body }) => {
        checkConfig(body.config);
        return { valid: true as const };
      },
      {
        body: t.Object({ config: t.Unknown() }, { additionalProperties: false }),
        response: { 200: t.Object({ valid: t.Literal(true) }), ...authErrors, ...validationErrors },
        detail: {
          summary: "Validate a map.custom_json config (422 mapper.invalid_config with paths)",
          security,
        },
      },
    )
    .post(
      "/mapper/preview",
      async ({ auth, body }) => {
        checkConfig(body.config);
        const picked = await previewMessage(ctx, auth.projectId, body);
        const input = previewInput(ctx.clock.now().toISOString(), auth.projectId, picked, body.meta ?? {});
        try {
          return { output: await ctx.runMapper(body.config, input) };
        } catch (err) {
          if (err instanceof MapperRuntimeError) {
            metrics.mapperErrors.inc({ stage: "preview", code: err.code });
            // Where the run stopped: the var or the output (`/config/vars/3/expr`, `/config/output`).
            throw new AppError("mapper.runtime_error", err.message, [
              { path: `/config${err.path ?? ""}`, message: err.message, code: err.code },
            ]);
          }
          throw err;
        }
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
        summary: "JSON Schemas: custom_json_mapper@1, custom_json_output@1, generic@1",
      },
    },
  );
}
