/**
 * Routes: a rule (docs/routing.md) and a pipeline (spec: Pipeline) delivering to an endpoint, signed with a
 * signing secret. Validation errors carry JSON-pointer paths into the request body.
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, eq, isNull } from "drizzle-orm";
import { validateMapperConfig } from "../../mapper/index.ts";
import type { AppContext } from "../context.ts";
import { routes } from "../db/schema/index.ts";
import type { AttachmentPolicy } from "../lib/attachment-policy.ts";
import { parseRetrySchedule, RetryScheduleError } from "../lib/durations.ts";
import { AppError, type ErrorCode, type ErrorDetail } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { Nullable, Timestamp } from "../lib/schema.ts";
import { attachmentPolicyProblems, completeAttachmentPolicy } from "../mail/policy.ts";
import { DEFAULT_PIPELINE, orderedPipeline, type Pipeline, validatePipeline } from "../routing/pipeline.ts";
import { validateRule } from "../routing/rules.ts";
import { findEndpointRow } from "./endpoints.ts";
import { findSigningSecret } from "./signing-secrets.ts";

export interface RouteInput {
  name?: string;
  endpoint_id?: string;
  signing_secret_kid?: string;
  rule?: unknown;
  pipeline?: unknown;
  /** null (or omitted at creation): the service-wide attachment policy */
  attachment_policy?: unknown;
  enabled?: boolean;
  retry_policy?: unknown;
  /** a duration; null (or omitted at creation): no `route.silent` notification */
  expect_mail_within?: unknown;
}

/** Bounds of a route's `retry_policy.max_attempts`. */
export const MAX_ROUTE_ATTEMPTS = 50;

/** A route's own retry policy as the API shows it; null = the global `RETRY_SCHEDULE`. */
export const RetryPolicyViewSchema = Type.Object({
  schedule: Type.Array(Type.String()),
  max_attempts: Type.Integer(),
});

/** A pipeline as the API shows it: its steps in order, each a name and its arguments. */
export const PipelineViewSchema = Type.Object({
  steps: Type.Array(Type.Object({ name: Type.String(), args: Type.Record(Type.String(), Type.Unknown()) })),
});

const PolicyActionSchema = Type.Union([
  Type.Literal("discard"),
  Type.Literal("strip"),
  Type.Literal("deliver"),
]);

/** A route as the API shows it; `pipeline` keeps the key order its author wrote. */
export const RouteViewSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  endpoint_id: Type.String(),
  signing_secret_kid: Type.String(),
  rule: Type.Record(Type.String(), Type.Unknown()),
  pipeline: PipelineViewSchema,
  /** null: the service-wide policy (docs/routing.md, "Attachment policy") */
  attachment_policy: Nullable(
    Type.Object({
      allowed_prefixes: Type.Array(Type.String()),
      on_disallowed: PolicyActionSchema,
      on_mismatch: PolicyActionSchema,
    }),
  ),
  enabled: Type.Boolean(),
  retry_policy: Nullable(RetryPolicyViewSchema),
  /** `route.silent` is raised after this long without a matching message (docs/delivery.md); null: off */
  expect_mail_within: Nullable(Type.String()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
/** See {@link RouteViewSchema}. */
export type RouteView = Static<typeof RouteViewSchema>;

type Row = typeof routes.$inferSelect;

function view(row: Row): RouteView {
  return {
    id: row.id,
    name: row.name,
    endpoint_id: row.endpointId,
    signing_secret_kid: row.signingSecretKid,
    rule: row.rule,
    pipeline: orderedPipeline({ pipeline: row.pipeline as Pipeline, pipeline_text: row.pipelineText }),
    attachment_policy: row.attachmentPolicy ?? null,
    enabled: row.enabled,
    retry_policy: row.retryPolicy
      ? { schedule: row.retryPolicy.schedule, max_attempts: row.retryPolicy.max_attempts }
      : null,
    expect_mail_within: row.expectMailWithin ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

type StoredRetryPolicy = NonNullable<Row["retryPolicy"]>;

/**
 * Checks an `expect_mail_within` value: one duration in `RETRY_SCHEDULE`'s syntax (`90s`, `30m`, `6h`;
 * a bare number is seconds), at least one minute and at most 7 days. Returns it as stored (the text as
 * written, a number as seconds), or null.
 */
export function parseExpectMailWithin(value: unknown): string | null {
  if (value === null) return null;
  const text = typeof value === "number" ? String(value) : typeof value === "string" ? value.trim() : "";
  const problem = (message: string) =>
    new AppError("request.invalid", "the route's expect_mail_within is invalid", [
      { path: "/expect_mail_within", message },
    ]);
  if (text === "" || text.includes(",")) throw problem("expected one duration such as 30m or 6h, or null");
  let ms: number;
  try {
    [ms = 0] = parseRetrySchedule(text);
  } catch (err) {
    throw problem(
      err instanceof Error ? err.message.replace("retry schedule entry 1", "duration") : String(err),
    );
  }
  if (ms < 60_000) throw problem("must be at least 1m");
  return text;
}

/**
 * Checks a `retry_policy` (`{schedule: [duration], max_attempts}`: `max_attempts` 1–50, the schedule
 * its `max_attempts - 1` delays, each in `RETRY_SCHEDULE`'s syntax; null clears it) and returns what
 * is stored, or throws `request.invalid` naming each problem.
 */
export function parseRetryPolicy(value: unknown): StoredRetryPolicy | null {
  if (value === null) return null;
  const problems: ErrorDetail[] = [];
  const v = value as { schedule?: unknown; max_attempts?: unknown };
  if (typeof value !== "object" || Array.isArray(value)) {
    throw new AppError("request.invalid", "retry_policy must be an object or null", [
      { path: "/retry_policy", message: "expected {schedule: [duration], max_attempts} or null" },
    ]);
  }
  for (const key of Object.keys(v)) {
    if (key !== "schedule" && key !== "max_attempts")
      problems.push({ path: `/retry_policy/${key}`, message: "unknown property" });
  }
  const max = v.max_attempts;
  if (typeof max !== "number" || !Number.isInteger(max) || max < 1 || max > MAX_ROUTE_ATTEMPTS) {
    problems.push({
      path: "/retry_policy/max_attempts",
      message: `max_attempts must be an integer from 1 to ${MAX_ROUTE_ATTEMPTS}`,
    });
  }
  const schedule: string[] = [];
  const scheduleMs: number[] = [];
  if (!Array.isArray(v.schedule)) {
    problems.push({ path: "/retry_policy/schedule", message: "schedule must be an array of durations" });
  } else {
    for (const [i, entry] of v.schedule.entries()) {
      const text =
        typeof entry === "number" ? String(entry) : typeof entry === "string" ? entry.trim() : null;
      try {
        if (text === null || text === "" || text.includes(",")) throw new RetryScheduleError("");
        scheduleMs.push(parseRetrySchedule(text)[0] as number);
        schedule.push(text);
      } catch (err) {
        if (!(err instanceof RetryScheduleError)) throw err;
        problems.push({
          path: `/retry_policy/schedule/${i}`,
          message: `${JSON.stringify(entry)} is not a duration (a number with ms, s, m or h, at most 7 days; bare numbers are seconds)`,
        });
      }
    }
    if (typeof max === "number" && Number.isInteger(max) && v.schedule.length !== max - 1) {
      problems.push({
        path: "/retry_policy/schedule",
        message: `the schedule has ${v.schedule.length} delays; max_attempts ${max} needs ${max - 1} (the delays before attempts 2..${max})`,
      });
    }
  }
  if (problems.length) throw new AppError("request.invalid", "the route's retry_policy is invalid", problems);
  return { schedule, schedule_ms: scheduleMs, max_attempts: max as number };
}

/** Rule and pipeline checks, in that order; the first failing one decides the error code. */
function validateDefinition(input: RouteInput): void {
  if (input.rule !== undefined) {
    const issues = validateRule(input.rule, "/rule");
    if (issues.length) throw new AppError("routes.invalid_rule", "the route's rule is invalid", issues);
  }
  if (input.pipeline !== undefined) {
    const issues = validatePipeline(input.pipeline, { validateMapperConfig }, "/pipeline");
    if (issues.length)
      throw new AppError("routes.invalid_pipeline", "the route's pipeline is invalid", issues);
  }
  if (input.attachment_policy !== undefined && input.attachment_policy !== null) {
    const issues = attachmentPolicyProblems(input.attachment_policy, "/attachment_policy");
    if (issues.length)
      throw new AppError(
        "routes.invalid_attachment_policy",
        "the route's attachment policy is invalid",
        issues,
      );
  }
}

/** The policy to store: null for none, else every member present. */
function storedPolicy(value: unknown): AttachmentPolicy | null {
  return value === null || value === undefined
    ? null
    : completeAttachmentPolicy(value as Partial<AttachmentPolicy>);
}

/**
 * Awaits `lookup`; its `notFound` refusal, and only that, becomes `routes.invalid_reference` with
 * `message` and `detail`. Any other failure, such as the database being unavailable, propagates
 * unchanged: a 503 to retry, not a claim that the caller named something that does not exist.
 */
async function referenced(
  lookup: Promise<unknown>,
  notFound: ErrorCode,
  message: string,
  detail: ErrorDetail,
): Promise<void> {
  try {
    await lookup;
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== notFound) throw err;
    throw new AppError("routes.invalid_reference", message, [detail]);
  }
}

async function checkReferences(ctx: AppContext, projectId: string, input: RouteInput): Promise<void> {
  if (input.endpoint_id !== undefined) {
    await referenced(
      findEndpointRow(ctx, projectId, input.endpoint_id),
      "endpoints.not_found",
      "endpoint_id does not name an endpoint of this project",
      { path: "/endpoint_id", message: "no such endpoint" },
    );
  }
  if (input.signing_secret_kid !== undefined) {
    await referenced(
      findSigningSecret(ctx, projectId, input.signing_secret_kid),
      "signing_secrets.not_found",
      "signing_secret_kid does not name a signing secret of this project",
      { path: "/signing_secret_kid", message: "no such signing secret" },
    );
  }
}

export async function findRouteRow(ctx: AppContext, projectId: string, id: string): Promise<Row> {
  const [row] = await ctx.database.db
    .select()
    .from(routes)
    .where(and(eq(routes.projectId, projectId), eq(routes.id, id), isNull(routes.deletedAt)));
  if (!row) throw new AppError("routes.not_found", "route not found");
  return row;
}

export async function createRoute(ctx: AppContext, projectId: string, input: RouteInput): Promise<RouteView> {
  validateDefinition(input);
  const retryPolicy = input.retry_policy === undefined ? null : parseRetryPolicy(input.retry_policy);
  await checkReferences(ctx, projectId, input);
  const now = ctx.clock.now();
  const [row] = await ctx.database.db
    .insert(routes)
    .values({
      id: newId("rt"),
      projectId,
      name: input.name ?? "route",
      endpointId: input.endpoint_id as string,
      signingSecretKid: input.signing_secret_kid as string,
      rule: (input.rule as Record<string, unknown> | undefined) ?? {},
      retryPolicy,
      expectMailWithin:
        input.expect_mail_within === undefined ? null : parseExpectMailWithin(input.expect_mail_within),
      pipeline: (input.pipeline as Pipeline | undefined) ?? DEFAULT_PIPELINE,
      pipelineText: JSON.stringify((input.pipeline as Pipeline | undefined) ?? DEFAULT_PIPELINE),
      attachmentPolicy: storedPolicy(input.attachment_policy),
      enabled: input.enabled ?? true,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  if (!row) throw new AppError("internal", "route was not created");
  return view(row);
}

export async function listRoutes(ctx: AppContext, projectId: string): Promise<RouteView[]> {
  const rows = await ctx.database.db
    .select()
    .from(routes)
    .where(and(eq(routes.projectId, projectId), isNull(routes.deletedAt)))
    .orderBy(asc(routes.createdAt));
  return rows.map(view);
}

export async function getRoute(ctx: AppContext, projectId: string, id: string): Promise<RouteView> {
  return view(await findRouteRow(ctx, projectId, id));
}

export async function updateRoute(
  ctx: AppContext,
  projectId: string,
  id: string,
  input: RouteInput,
): Promise<RouteView> {
  const current = await findRouteRow(ctx, projectId, id);
  validateDefinition(input);
  const retryPolicy = input.retry_policy === undefined ? undefined : parseRetryPolicy(input.retry_policy);
  await checkReferences(ctx, projectId, input);
  const [row] = await ctx.database.db
    .update(routes)
    .set({
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.endpoint_id !== undefined ? { endpointId: input.endpoint_id } : {}),
      ...(input.signing_secret_kid !== undefined ? { signingSecretKid: input.signing_secret_kid } : {}),
      ...(input.rule !== undefined ? { rule: input.rule as Record<string, unknown> } : {}),
      ...(retryPolicy !== undefined ? { retryPolicy } : {}),
      ...(input.expect_mail_within !== undefined
        ? { expectMailWithin: parseExpectMailWithin(input.expect_mail_within) }
        : {}),
      ...(input.pipeline !== undefined
        ? { pipeline: input.pipeline as Pipeline, pipelineText: JSON.stringify(input.pipeline) }
        : {}),
      ...(input.attachment_policy !== undefined
        ? { attachmentPolicy: storedPolicy(input.attachment_policy) }
        : {}),
      ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
      updatedAt: ctx.clock.now(),
    })
    .where(eq(routes.id, current.id))
    .returning();
  return view(row ?? current);
}

/** Soft delete: events already created keep their route snapshot; pending ones end `dead` (route_deleted). */
export async function deleteRoute(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const current = await findRouteRow(ctx, projectId, id);
  await ctx.database.db
    .update(routes)
    .set({ deletedAt: ctx.clock.now(), enabled: false })
    .where(eq(routes.id, current.id));
}
