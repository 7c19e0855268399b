/**
 * A project's intake policy (docs/routing.md, "Intake policy"): `{reject, hold}`, each a route rule or
 * null. Set with `PATCH /v1/project`, shown by `GET /v1/project`; applied by ingest
 * (ingest/intake-policy.ts) to every message before it is stored.
 */
import { type Static, Type } from "@sinclair/typebox";
import { eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { projects } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { Nullable } from "../lib/schema.ts";
import type { ValidationIssue } from "../routing/issues.ts";
import { validateRule } from "../routing/rules.ts";

/** The policy as the API shows it: a missing rule is null. */
export const IntakePolicySchema = Type.Object({
  reject: Nullable(Type.Record(Type.String(), Type.Unknown())),
  hold: Nullable(Type.Record(Type.String(), Type.Unknown())),
});
/** See {@link IntakePolicySchema}. */
export type IntakePolicy = Static<typeof IntakePolicySchema>;

/** The policy of a stored project row (null column: no policy). */
export function intakePolicyOf(
  stored: { reject?: unknown; hold?: unknown } | null | undefined,
): IntakePolicy {
  return {
    reject: (stored?.reject ?? null) as IntakePolicy["reject"],
    hold: (stored?.hold ?? null) as IntakePolicy["hold"],
  };
}

/** Every problem of an `intake_policy` value, with paths under `/intake_policy`. */
export function intakePolicyProblems(value: unknown): ValidationIssue[] {
  const base = "/intake_policy";
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return [{ path: base, message: 'must be an object {"reject": rule | null, "hold": rule | null}' }];
  const issues: ValidationIssue[] = [];
  for (const [key, rule] of Object.entries(value)) {
    if (key !== "reject" && key !== "hold") {
      issues.push({ path: `${base}/${key}`, message: `unknown key "${key}" (expected reject or hold)` });
    } else if (rule !== null) {
      issues.push(...validateRule(rule, `${base}/${key}`));
    }
  }
  return issues;
}

/**
 * Replaces the keys given (`reject`, `hold`; a key left out keeps its rule, null removes it) and
 * returns the policy now in force. Throws `projects.invalid_intake_policy` with every problem.
 */
export async function setIntakePolicy(
  ctx: AppContext,
  projectId: string,
  value: unknown,
): Promise<IntakePolicy> {
  const issues = intakePolicyProblems(value);
  if (issues.length > 0)
    throw new AppError("projects.invalid_intake_policy", "the intake policy is invalid", issues);
  const db = ctx.database.db;
  const [row] = await db
    .select({ policy: projects.intakePolicy })
    .from(projects)
    .where(eq(projects.id, projectId));
  if (!row) throw new AppError("projects.not_found", "project not found");
  const next = { ...intakePolicyOf(row.policy), ...(value as Partial<IntakePolicy>) };
  const stored = next.reject === null && next.hold === null ? null : next;
  await db.update(projects).set({ intakePolicy: stored }).where(eq(projects.id, projectId));
  return intakePolicyOf(stored);
}
