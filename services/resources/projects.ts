/** Projects: created by the operator; each gets an inbound address and a default API key. */

import { randomBytes } from "node:crypto";
import { type Static, Type } from "@sinclair/typebox";
import { desc, eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { projects } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { Timestamp } from "../lib/schema.ts";
import { type CreatedApiKey, createApiKey } from "./api-keys.ts";
import { IntakePolicySchema, intakePolicyOf } from "./intake-policy.ts";
import { NotificationsViewSchema, notificationsOf } from "./notifications.ts";

/** A project as the API shows it (`GET /v1/project`, the operator's project list). */
export const ProjectViewSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  inbound_address: Type.String(),
  created_at: Timestamp,
  /** rules applied to every message before it is stored (docs/routing.md, "Intake policy") */
  intake_policy: IntakePolicySchema,
  /** where operational notifications go (docs/delivery.md, "Notifications"); null: off */
  notifications: NotificationsViewSchema,
});
/** See {@link ProjectViewSchema}. */
export type ProjectView = Static<typeof ProjectViewSchema>;

/** Lowercase base32 (RFC 4648 alphabet) so the inbound local part survives case-folding MTAs. */
function inboundToken(): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz234567";
  const bytes = randomBytes(16);
  let out = "";
  for (const b of bytes) out += alphabet[b & 31];
  return out;
}

export function inboundAddress(ctx: AppContext, token: string): string {
  return `${token}@${ctx.config.inboundDomain}`;
}

function view(ctx: AppContext, row: typeof projects.$inferSelect): ProjectView {
  return {
    id: row.id,
    name: row.name,
    inbound_address: inboundAddress(ctx, row.inboundToken),
    created_at: row.createdAt.toISOString(),
    intake_policy: intakePolicyOf(row.intakePolicy),
    notifications: notificationsOf(row.notifications ?? undefined),
  };
}

export async function createProject(
  ctx: AppContext,
  input: { name: string; api_key_name?: string },
): Promise<{ project: ProjectView; apiKey: CreatedApiKey }> {
  return ctx.database.db.transaction(async (tx) => {
    const [row] = await tx
      .insert(projects)
      .values({
        id: newId("prj"),
        name: input.name,
        inboundToken: inboundToken(),
        createdAt: ctx.clock.now(),
      })
      .returning();
    if (!row) throw new AppError("internal", "project was not created");
    const apiKey = await createApiKey(ctx, row.id, input.api_key_name ?? "default", tx);
    return { project: view(ctx, row), apiKey };
  });
}

export async function listProjects(ctx: AppContext): Promise<ProjectView[]> {
  const rows = await ctx.database.db.select().from(projects).orderBy(desc(projects.createdAt));
  return rows.map((r) => view(ctx, r));
}

export async function getProject(ctx: AppContext, id: string): Promise<ProjectView> {
  const [row] = await ctx.database.db.select().from(projects).where(eq(projects.id, id));
  if (!row) throw new AppError("projects.not_found", "project not found");
  return view(ctx, row);
}

/** Finds the project owning an inbound address (`token@domain` or `token+tag@domain`), case-insensitive. */
export async function projectByInboundAddress(
  ctx: AppContext,
  address: string,
): Promise<{ id: string } | null> {
  const at = address.lastIndexOf("@");
  if (at < 0) return null;
  const domain = address.slice(at + 1).toLowerCase();
  if (domain !== ctx.config.inboundDomain) return null;
  const local = address.slice(0, at).toLowerCase().split("+")[0] ?? "";
  if (!/^[a-z2-7]{16}$/.test(local)) return null;
  const [row] = await ctx.database.db
    .select({ id: projects.id })
    .from(projects)
    .where(eq(projects.inboundToken, local));
  return row ?? null;
}
