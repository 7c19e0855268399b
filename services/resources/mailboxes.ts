/**
 * IMAP mailboxes a project's mail is fetched from (docs/ingest.md, "IMAP mailboxes"): where to connect,
 * how to log in (a password, or an OAuth access token for SASL XOAUTH2; sealed at rest, never shown),
 * which folder, from when, and what to do with a message once it is taken in. The poller
 * (services/ingest/imap.ts) reports its state in the same row; this module only reads it.
 */
import { type Static, Type } from "@sinclair/typebox";
import { and, asc, eq } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { type MailboxState, type MailboxTls, mailboxes } from "../db/schema/index.ts";
import { AppError, type ErrorDetail } from "../lib/errors.ts";
import { newId } from "../lib/ids.ts";
import { Integer, Nullable, Timestamp } from "../lib/schema.ts";
import { resolveTarget } from "../lib/ssrf.ts";

export const MailboxTlsSchema = Type.Union([
  Type.Literal("implicit"),
  Type.Literal("starttls"),
  Type.Literal("none"),
]);
export const MailboxStateSchema = Type.Union([
  Type.Literal("connecting"),
  Type.Literal("idle"),
  Type.Literal("syncing"),
  Type.Literal("error"),
  Type.Literal("disabled"),
]);

/** `none`, `seen`, `delete` or `move:<folder>`. */
export const AFTER_PROCESS_PATTERN = "^(none|seen|delete|move:.+)$";

export const MailboxAuthInputSchema = Type.Union([
  Type.Object(
    {
      user: Type.String({ minLength: 1, maxLength: 320 }),
      password: Type.String({ minLength: 1, maxLength: 1024 }),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      user: Type.String({ minLength: 1, maxLength: 320 }),
      access_token: Type.String({ minLength: 1, maxLength: 8192 }),
    },
    { additionalProperties: false },
  ),
]);

/** `POST /v1/mailboxes`; `PATCH` takes any subset. */
export const MailboxInputSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 200 }),
    host: Type.String({ minLength: 1, maxLength: 253 }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    tls: MailboxTlsSchema,
    auth: MailboxAuthInputSchema,
    folder: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
    since: Type.Optional(Nullable(Timestamp)),
    after_process: Type.Optional(Type.String({ pattern: AFTER_PROCESS_PATTERN, maxLength: 500 })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type MailboxInput = Static<typeof MailboxInputSchema>;

export const MailboxStatusSchema = Type.Object({
  state: MailboxStateSchema,
  last_error: Nullable(Type.String()),
  last_sync_at: Nullable(Timestamp),
  uidvalidity: Nullable(Integer()),
  last_uid: Nullable(Integer()),
  messages_ingested: Integer(),
  /** messages left in a running backfill, null when none runs */
  backfill_remaining: Nullable(Integer()),
  /**
   * messages fetched from the folder and safely stored, waiting to be processed (a large sync is
   * fetched first, then processed); they count in `messages_ingested` once processed
   */
  messages_pending: Integer(),
});

/** A mailbox as the API shows it: the login user, never the password or token. */
export const MailboxViewSchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  host: Type.String(),
  port: Integer(),
  tls: MailboxTlsSchema,
  auth: Type.Object({
    user: Type.String(),
    method: Type.Union([Type.Literal("password"), Type.Literal("access_token")]),
  }),
  folder: Type.String(),
  since: Nullable(Timestamp),
  after_process: Type.String(),
  enabled: Type.Boolean(),
  status: MailboxStatusSchema,
  created_at: Timestamp,
  updated_at: Timestamp,
});
export type MailboxView = Static<typeof MailboxViewSchema>;

type Row = typeof mailboxes.$inferSelect;

/** The credential as sealed: exactly one of the two. */
export interface MailboxSecret {
  password?: string;
  access_token?: string;
}

export function mailboxView(row: Row): MailboxView {
  return {
    id: row.id,
    name: row.name,
    host: row.host,
    port: row.port,
    tls: row.tls,
    auth: { user: row.authUser, method: row.authKind },
    folder: row.folder,
    since: row.since?.toISOString() ?? null,
    after_process: row.afterProcess,
    enabled: row.enabled,
    status: {
      state: row.enabled ? row.state : "disabled",
      last_error: row.lastError,
      last_sync_at: row.lastSyncAt?.toISOString() ?? null,
      uidvalidity: row.uidvalidity,
      last_uid: row.lastUid,
      messages_ingested: row.messagesIngested,
      backfill_remaining: row.backfillRemaining,
      messages_pending: row.messagesPending,
    },
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

/** The plain credential of a mailbox, for the poller. */
export function openMailboxSecret(ctx: AppContext, row: Row): MailboxSecret {
  return JSON.parse(ctx.box.open(row.authSealed)) as MailboxSecret;
}

function sealAuth(ctx: AppContext, auth: MailboxInput["auth"]) {
  const secret: MailboxSecret =
    "password" in auth ? { password: auth.password } : { access_token: auth.access_token };
  return {
    authUser: auth.user,
    authKind: ("password" in auth ? "password" : "access_token") as "password" | "access_token",
    authSealed: ctx.box.seal(JSON.stringify(secret)),
  };
}

/**
 * Refuses a host that resolves to a private, loopback, link-local or metadata address unless
 * `ALLOW_PRIVATE_ENDPOINTS` is on (the same guard webhook delivery uses), and one that does not resolve.
 * The poller checks the address again each time it connects, so a later DNS change cannot slip past.
 */
export async function checkMailboxHost(ctx: AppContext, host: string): Promise<void> {
  const resolved = await resolveTarget(host, { allowPrivate: ctx.config.allowPrivateEndpoints });
  if (resolved.ok) return;
  const details: ErrorDetail[] = [{ path: "/host", message: resolved.networkError }];
  if (resolved.blockedAddress !== undefined)
    throw new AppError(
      "mailboxes.private_host",
      `${host} resolves to ${resolved.blockedAddress}, a private or local address; set ALLOW_PRIVATE_ENDPOINTS=true to allow it`,
      details,
    );
  throw new AppError("mailboxes.invalid_host", `${host} does not resolve`, details);
}

function validateAfterProcess(value: string | undefined): ErrorDetail[] {
  if (value === undefined) return [];
  if (value.startsWith("move:") && value.slice(5).trim() === "")
    return [{ path: "/after_process", message: "move: needs a folder name" }];
  return [];
}

export async function findMailboxRow(ctx: AppContext, projectId: string, id: string): Promise<Row> {
  const [row] = await ctx.database.db
    .select()
    .from(mailboxes)
    .where(and(eq(mailboxes.projectId, projectId), eq(mailboxes.id, id)));
  if (!row) throw new AppError("mailboxes.not_found", "mailbox not found");
  return row;
}

export async function createMailbox(
  ctx: AppContext,
  projectId: string,
  input: MailboxInput,
): Promise<MailboxView> {
  const problems = validateAfterProcess(input.after_process);
  if (problems.length) throw new AppError("request.invalid", "the mailbox is invalid", problems);
  await checkMailboxHost(ctx, input.host);
  const now = ctx.clock.now();
  const since = input.since ? new Date(input.since) : null;
  const enabled = input.enabled ?? true;
  const [row] = await ctx.database.db
    .insert(mailboxes)
    .values({
      id: newId("mbx"),
      projectId,
      name: input.name,
      host: input.host,
      port: input.port,
      tls: input.tls as MailboxTls,
      ...sealAuth(ctx, input.auth),
      folder: input.folder ?? "INBOX",
      since,
      syncFrom: since ?? now,
      afterProcess: input.after_process ?? "none",
      enabled,
      state: (enabled ? "connecting" : "disabled") as MailboxState,
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  if (!row) throw new AppError("internal", "mailbox was not created");
  return mailboxView(row);
}

export async function listMailboxes(ctx: AppContext, projectId: string): Promise<MailboxView[]> {
  const rows = await ctx.database.db
    .select()
    .from(mailboxes)
    .where(eq(mailboxes.projectId, projectId))
    .orderBy(asc(mailboxes.createdAt));
  return rows.map(mailboxView);
}

export async function getMailbox(ctx: AppContext, projectId: string, id: string): Promise<MailboxView> {
  return mailboxView(await findMailboxRow(ctx, projectId, id));
}

/**
 * Changes a mailbox. A new folder or `since` starts that folder afresh (its position is forgotten; the
 * messages already taken in are deduplicated by their bytes); any change makes the poller reconnect.
 */
export async function updateMailbox(
  ctx: AppContext,
  projectId: string,
  id: string,
  input: Partial<MailboxInput>,
): Promise<MailboxView> {
  const current = await findMailboxRow(ctx, projectId, id);
  const problems = validateAfterProcess(input.after_process);
  if (problems.length) throw new AppError("request.invalid", "the mailbox is invalid", problems);
  if (input.host !== undefined) await checkMailboxHost(ctx, input.host);
  const now = ctx.clock.now();
  const restart =
    (input.folder !== undefined && input.folder !== current.folder) || input.since !== undefined;
  const since = input.since === undefined ? current.since : input.since ? new Date(input.since) : null;
  const enabled = input.enabled ?? current.enabled;
  const [row] = await ctx.database.db
    .update(mailboxes)
    .set({
      ...(input.name !== undefined ? { name: input.name } : {}),
      ...(input.host !== undefined ? { host: input.host } : {}),
      ...(input.port !== undefined ? { port: input.port } : {}),
      ...(input.tls !== undefined ? { tls: input.tls as MailboxTls } : {}),
      ...(input.auth !== undefined ? sealAuth(ctx, input.auth) : {}),
      ...(input.folder !== undefined ? { folder: input.folder } : {}),
      ...(input.after_process !== undefined ? { afterProcess: input.after_process } : {}),
      ...(restart ? { since, syncFrom: since ?? now, uidvalidity: null, lastUid: null } : {}),
      enabled,
      ...(enabled !== current.enabled
        ? { state: (enabled ? "connecting" : "disabled") as MailboxState, lastError: null }
        : {}),
      updatedAt: now,
    })
    .where(eq(mailboxes.id, current.id))
    .returning();
  return mailboxView(row ?? current);
}

/** Deletes a mailbox; its poller stops at its next lease renewal. Messages taken in stay. */
export async function deleteMailbox(ctx: AppContext, projectId: string, id: string): Promise<void> {
  const current = await findMailboxRow(ctx, projectId, id);
  await ctx.database.db.delete(mailboxes).where(eq(mailboxes.id, current.id));
}

/** Asks the poller holding the mailbox to sync now (it notices within its scan interval). */
export async function requestMailboxSync(
  ctx: AppContext,
  projectId: string,
  id: string,
): Promise<MailboxView> {
  const current = await findMailboxRow(ctx, projectId, id);
  const [row] = await ctx.database.db
    .update(mailboxes)
    .set({ syncRequestedAt: ctx.clock.now() })
    .where(eq(mailboxes.id, current.id))
    .returning();
  return mailboxView(row ?? current);
}
