/**
 * Attachment download URLs (spec "Attachment download URL response", docs/attachments.md).
 *
 * A URL is either an app-proxy URL `{PUBLIC_BASE_URL}/v1/attachments/<token>` or, with `BLOB_STORE=s3`
 * and `multi_use=true`, a presigned storage URL. Tokens carry 256 random bits (base64url) and are stored
 * only as their SHA-256, like API keys: a database leak yields no working download URL, and 256 bits
 * make a plain hash as good as a slow one (nothing to brute-force).
 */
import { and, asc, eq, inArray } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import { attachments, downloadTokens, messages } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { randomToken, sha256Hex } from "../lib/ids.ts";

/** Spec Limits: "default URL lifetime, single-use: about 15 minutes". */
export const DEFAULT_SINGLE_USE_TTL_S = 900;
/** Spec Limits: "default URL lifetime, multi-use when `ttl_seconds` omitted: about 5 minutes". */
export const DEFAULT_MULTI_USE_TTL_S = 300;
/** Spec Limits: `ttl_seconds` 60 to 86400. */
export const MIN_TTL_S = 60;
export const MAX_TTL_S = 86_400;
/** 32 bytes = 256 bits of entropy. */
const TOKEN_BYTES = 32;
/** base64url of 32 bytes, unpadded: 43 characters. */
const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** What the URL endpoint was asked for. */
export interface IssueDownloadUrlInput {
  projectId: string;
  /** the Message-ID header value, URL-decoded, with or without its angle brackets; or a `msg_…` id */
  messageId: string;
  /** the descriptor `id` */
  attachmentId: string;
  multiUse: boolean;
  ttlSeconds?: number | undefined;
}

/** `type/subtype[; params]` of visible ASCII: what may go into a presigned `response-content-type`. */
const SAFE_MEDIA_TYPE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\s*;[\u0020-\u007e]*)?$/;

/** The spec's download URL response. */
export interface DownloadUrl {
  url: string;
  /** RFC 3339 UTC */
  expires_at: string;
  method: "GET";
  headers: Record<string, string>;
}

/** An attachment row found through a project-scoped lookup. */
export type AttachmentRow = typeof attachments.$inferSelect;

/** The SHA-256 under which a token is stored (and looked up). */
export function hashDownloadToken(token: string): string {
  return sha256Hex(token);
}

/** Whether `token` has the shape of a token we issue (so junk never reaches the database). */
export function isWellFormedToken(token: string): boolean {
  return TOKEN_PATTERN.test(token);
}

/**
 * The stored forms a Message-ID given by a caller may have. Stored ids keep their angle brackets
 * (`<abc@example.com>`); callers may send them with or without.
 */
export function messageIdCandidates(messageId: string): string[] {
  const id = messageId.trim();
  if (id.startsWith("<") && id.endsWith(">")) return [id];
  return [id, `<${id}>`];
}

/**
 * The lifetime in seconds of a new URL: `ttlSeconds` when given (60..86400, else 422 `request.invalid`
 * at `/ttl_seconds`), otherwise 900 s single-use or 300 s multi-use (docs/attachments.md).
 */
export function downloadTtlSeconds(multiUse: boolean, ttlSeconds?: number): number {
  if (ttlSeconds === undefined) return multiUse ? DEFAULT_MULTI_USE_TTL_S : DEFAULT_SINGLE_USE_TTL_S;
  if (!Number.isInteger(ttlSeconds) || ttlSeconds < MIN_TTL_S || ttlSeconds > MAX_TTL_S) {
    throw new AppError("request.invalid", "ttl_seconds is out of range", [
      { path: "/ttl_seconds", message: `expected an integer from ${MIN_TTL_S} to ${MAX_TTL_S}` },
    ]);
  }
  return ttlSeconds;
}

/** The service's own id of a stored message (`newId("msg")`), which a lookup takes as well as a Message-ID. */
const MESSAGE_PK = /^msg_[0-9a-z]+$/i;

/** Whether `key` has the form of a stored message's own id (`msg_…`) rather than of a Message-ID. */
export function isMessagePk(key: string): boolean {
  return MESSAGE_PK.test(key.trim());
}

/** Most `msg_…` ids a `messages.ambiguous` error lists. */
export const MAX_AMBIGUOUS_LISTED = 20;

/**
 * The refusal of a Message-ID that names several stored messages of the project (the same id with
 * different bytes: identical bytes are stored once). `details` list their `msg_…` ids, oldest first,
 * one per entry at `/message_id`; any of them may be asked for instead of the Message-ID.
 */
export function ambiguousMessageId(messageId: string, messagePks: readonly string[]): AppError {
  const listed = messagePks.slice(0, MAX_AMBIGUOUS_LISTED);
  const count = messagePks.length > listed.length ? `more than ${listed.length}` : String(listed.length);
  return new AppError(
    "messages.ambiguous",
    `the Message-ID ${messageId.trim()} names ${count} stored messages with different bytes; ` +
      "ask for one of them by its msg_… id",
    listed.map((pk) => ({ path: "/message_id", message: pk })),
  );
}

/**
 * Finds an attachment of a message of the project. `messageId` is a Message-ID (brackets optional) or
 * a stored message's own `msg_…` id; a message of another project is `messages.not_found`, exactly as a
 * missing one. A Message-ID may be shared by several stored messages (the same id re-sent with other
 * bytes, or reused by anyone who saw it): their attachment ids are distinct (the store suffixes the
 * later ones' ids, mail/extract.ts `attachmentIdSuffix`), so the pair resolves to the one message
 * that has `attachmentId`. Two that both have it (first copies stored concurrently) are
 * `messages.ambiguous`: never a guess, since a guess can serve one sender's file for another's.
 */
export async function findProjectAttachment(
  ctx: AppContext,
  projectId: string,
  messageId: string,
  attachmentId: string,
): Promise<AttachmentRow> {
  const db = ctx.database.db;
  if (isMessagePk(messageId)) {
    const [own] = await db
      .select({ id: messages.id })
      .from(messages)
      .where(and(eq(messages.projectId, projectId), eq(messages.id, messageId.trim())));
    if (own) return attachmentOf(ctx, own.id, attachmentId);
  }
  const sameId = and(
    eq(messages.projectId, projectId),
    inArray(messages.messageId, messageIdCandidates(messageId)),
  );
  const rows = await db
    .select({ pk: messages.id, attachment: attachments })
    .from(attachments)
    .innerJoin(messages, eq(messages.id, attachments.messagePk))
    .where(and(sameId, eq(attachments.attachmentId, attachmentId)))
    .orderBy(asc(messages.receivedAt), asc(messages.id))
    .limit(MAX_AMBIGUOUS_LISTED + 1);
  const [only, second] = rows;
  if (only && !second) return only.attachment;
  if (only)
    throw ambiguousMessageId(
      messageId,
      rows.map((r) => r.pk),
    );
  const [message] = await db.select({ id: messages.id }).from(messages).where(sameId).limit(1);
  if (!message) throw new AppError("messages.not_found", "no message with this Message-ID in the project");
  throw new AppError("attachments.not_found", "the message has no attachment with this id");
}

/** The attachment `attachmentId` of the stored message `messagePk`, or `attachments.not_found`. */
async function attachmentOf(
  ctx: AppContext,
  messagePk: string,
  attachmentId: string,
): Promise<AttachmentRow> {
  const [attachment] = await ctx.database.db
    .select()
    .from(attachments)
    .where(and(eq(attachments.messagePk, messagePk), eq(attachments.attachmentId, attachmentId)))
    .limit(1);
  if (!attachment) throw new AppError("attachments.not_found", "the message has no attachment with this id");
  return attachment;
}

/**
 * Issues a download URL for one attachment (the URL endpoint of the spec). Default: single-use app-proxy
 * URL valid 900 s. `multiUse` on the S3 store: a presigned storage URL with our Content-Disposition and
 * Content-Type baked in; its signature time comes from the system clock (the S3 client's), while
 * `expires_at` is computed from `ctx.clock` like every other URL.
 */
export async function issueDownloadUrl(ctx: AppContext, input: IssueDownloadUrlInput): Promise<DownloadUrl> {
  const ttl = downloadTtlSeconds(input.multiUse, input.ttlSeconds);
  const attachment = await findProjectAttachment(ctx, input.projectId, input.messageId, input.attachmentId);
  const now = ctx.clock.now();
  const expiresAt = new Date(now.getTime() + ttl * 1000);

  if (input.multiUse && ctx.blobs.kind === "s3" && ctx.blobs.presign) {
    const url = ctx.blobs.presign(attachment.blobKey, {
      expiresInSec: ttl,
      filename: attachment.filename,
      contentType: SAFE_MEDIA_TYPE.test(attachment.contentType)
        ? attachment.contentType
        : "application/octet-stream",
    });
    return { url, expires_at: expiresAt.toISOString(), method: "GET", headers: {} };
  }

  const token = randomToken(TOKEN_BYTES);
  await ctx.database.db.insert(downloadTokens).values({
    tokenHash: hashDownloadToken(token),
    projectId: input.projectId,
    messagePk: attachment.messagePk,
    attachmentId: attachment.attachmentId,
    multiUse: input.multiUse,
    expiresAt,
    createdAt: now,
  });
  return {
    url: `${ctx.config.publicBaseUrl}/v1/attachments/${token}`,
    expires_at: expiresAt.toISOString(),
    method: "GET",
    headers: {},
  };
}
