/**
 * The intake pipeline behind SMTP and `POST /v1/messages` (contract §3): size check → parse →
 * candidate limit → dedupe fast path → quota pre-check → blobs → MIME policy → route matching →
 * ONE transaction (message, attachments, events, quota) → wake the workers.
 *
 * Invariants:
 * - nothing is written (blob or row) for a message rejected as too large or unparseable;
 * - the message, its attachment rows and one event per matched route commit together, so a caller
 *   that has seen this function resolve may answer "250" / "202" (issue 3: durable before the reply);
 * - blobs are content-addressed, so storing them before the transaction is harmless when it then
 *   fails or turns out to be a duplicate: no blob is ever deleted here (another message may share it);
 * - the quota is enforced by a guarded `update … where storage_bytes + n <= quota` inside the
 *   transaction, so concurrent messages cannot overshoot it.
 */
import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { refOfBytes } from "../attachments/blob-store.ts";
import type { AppContext } from "../context.ts";
import type { Db } from "../db/client.ts";
import {
  attachments,
  type EventStatus,
  endpoints,
  events,
  messages,
  projects,
  type RouteSnapshot,
  routes,
} from "../db/schema/index.ts";
import { idempotencyKey } from "../delivery/sign.ts";
import { AppError } from "../lib/errors.ts";
import { newId, newUuid } from "../lib/ids.ts";
import type { Envelope, NormalizedMessage, SourceType } from "../lib/message.ts";
import { metrics } from "../lib/metrics.ts";
import { compileRule } from "../routing/rules.ts";
import { type ExtractedAttachment, exceedsCandidateLimit } from "./extract.ts";
import { MessageParseError, type ParsedMessage, parseMessage } from "./parse.ts";
import { checkMimePolicy, mimeDiscardError } from "./policy.ts";
import { Semaphore } from "./semaphore.ts";

/** Largest raw message accepted: 50 MB in binary units, as the spec's per-message limit. */
export const MAX_RAW_BYTES = 50 * 1024 * 1024;

/** One raw message to ingest into a project. A `{path, size}` raw is a spool file the caller owns. */
export interface IngestInput {
  projectId: string;
  raw: Uint8Array | { path: string; size: number };
  sourceType: SourceType;
  /** the SMTP envelope; null for the HTTP intake */
  envelope: Envelope | null;
}

/** An event as the intake reports it (`POST /v1/messages` response items). */
export interface IngestedEvent {
  id: string;
  route_id: string;
  status: EventStatus;
}

/** Outcome of {@link ingestMessage}. `duplicate` → the existing message and its events (contract §3). */
export interface IngestResult {
  messagePk: string;
  messageId: string;
  duplicate: boolean;
  events: IngestedEvent[];
}

const semaphores = new WeakMap<AppContext, Semaphore>();

/** The per-process limit on messages parsed at once (`INGEST_CONCURRENCY`), one per context. */
export function ingestSemaphore(ctx: AppContext): Semaphore {
  let s = semaphores.get(ctx);
  if (!s) {
    s = new Semaphore(ctx.config.ingestConcurrency);
    semaphores.set(ctx, s);
  }
  return s;
}

/**
 * Ingests one raw RFC 5322 message. Throws `AppError` with `ingest.too_large` (over 50 MiB raw or
 * attachment candidates over 50 MiB), `ingest.unparseable`, `ingest.quota_exceeded`, or
 * `ingest.unavailable` for a transient failure (database or blob store down; safe to retry, since a
 * retry of the same bytes is deduplicated).
 */
export async function ingestMessage(ctx: AppContext, input: IngestInput): Promise<IngestResult> {
  const declared = input.raw instanceof Uint8Array ? input.raw.byteLength : input.raw.size;
  const source = input.sourceType;
  if (declared > MAX_RAW_BYTES) {
    metrics.ingestRejected.inc({ source, code: "ingest.too_large" });
    throw tooLarge();
  }
  const release = await ingestSemaphore(ctx).acquire();
  let result: IngestResult;
  try {
    result = await ingestHeld(ctx, input);
  } catch (err) {
    if (err instanceof AppError) {
      metrics.ingestRejected.inc({ source, code: err.code });
      throw err;
    }
    metrics.ingestRejected.inc({ source, code: "ingest.unavailable" });
    ctx.logger.error("ingest failed", { err, project_id: input.projectId, source_type: input.sourceType });
    throw new AppError("ingest.unavailable", "the message could not be stored right now; try again later");
  } finally {
    release();
  }
  (result.duplicate ? metrics.ingestDuplicates : metrics.ingestAccepted).inc({ source });
  if (!result.duplicate && result.events.some((e) => e.status === "pending")) {
    // The events are committed; a lost wake-up only delays delivery until the workers' next poll.
    await ctx.wakeWorkers().catch((err) => ctx.logger.warn("could not wake workers", { err }));
  }
  return result;
}

function tooLarge(): AppError {
  return new AppError("ingest.too_large", `the message is over the ${MAX_RAW_BYTES}-byte limit`);
}

async function readRaw(raw: IngestInput["raw"]): Promise<Uint8Array> {
  if (raw instanceof Uint8Array) return raw;
  return new Uint8Array(await Bun.file(raw.path).arrayBuffer());
}

/**
 * A deterministic UUID (version 8, RFC 9562 §5.8) for a message without Message-ID, derived from the
 * project and the raw bytes: the same raw message ingested twice gets the same synthetic id and is
 * therefore deduplicated like any other.
 */
export function syntheticMessageUuid(projectId: string, rawSha256: string): string {
  const h = new Bun.CryptoHasher("sha256").update(`${projectId}|${rawSha256}`).digest("hex");
  const variant = ((Number.parseInt(h.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

async function ingestHeld(ctx: AppContext, input: IngestInput): Promise<IngestResult> {
  const raw = await readRaw(input.raw);
  if (raw.byteLength > MAX_RAW_BYTES) throw tooLarge();
  const rawRef = refOfBytes(raw);
  const receivedAt = ctx.clock.now();
  const parsed = await parse(ctx, input.projectId, raw, rawRef.sha256, receivedAt);
  parsed.message = storable(parsed.message);
  if (exceedsCandidateLimit(parsed.candidateBytes)) {
    throw new AppError("ingest.too_large", "the message's attachments total over the 50 MiB limit");
  }
  const messageId = parsed.message.message_id;
  const db = ctx.database.db;

  // Fast path for a resend: no blob writes, no quota check. The transaction below re-checks (races).
  const existing = await findDuplicate(db, input.projectId, messageId, rawRef.sha256);
  if (existing) return existing;

  const newBytes = storedBytesOf(raw.byteLength, parsed.attachments);
  await checkQuota(ctx, input.projectId, newBytes);

  await ctx.blobs.put(raw);
  const blobKeys: string[] = [];
  for (const a of parsed.attachments) blobKeys.push((await ctx.blobs.put(a.bytes)).key);

  const violation = await checkMimePolicy(parsed.attachments);
  const matched = await matchRoutes(ctx, input.projectId, parsed.message, input.envelope);
  const now = ctx.clock.now();
  const messagePk = newId("msg");
  const eventRows = matched.map((route) => ({
    id: newUuid(),
    projectId: input.projectId,
    messagePk,
    routeId: route.route_id,
    status: (violation ? "discarded" : "pending") as EventStatus,
    lastError: violation ? mimeDiscardError(violation) : null,
    nextAttemptAt: violation ? null : now,
    idempotencyKey: idempotencyKey(messageId, route.route_id),
    routeSnapshot: route,
    createdAt: now,
    updatedAt: now,
  }));

  return db.transaction(async (tx) => {
    // Race-safe dedupe (contract §3): the unique index messages_dedupe_idx decides who inserted first.
    const [inserted] = await tx
      .insert(messages)
      .values({
        id: messagePk,
        projectId: input.projectId,
        messageId,
        messageIdIsSynthetic: parsed.message.message_id_is_synthetic,
        rawSha256: rawRef.sha256,
        rawBlobKey: rawRef.key,
        rawSizeBytes: raw.byteLength,
        storedBytes: newBytes,
        sourceType: input.sourceType,
        envelope: input.envelope,
        parsed: parsed.message,
        receivedAt,
      })
      .onConflictDoNothing({ target: [messages.projectId, messages.messageId, messages.rawSha256] })
      .returning({ id: messages.id });
    if (!inserted) {
      const dup = await findDuplicate(tx, input.projectId, messageId, rawRef.sha256);
      if (!dup) throw new Error("dedupe conflict without a visible message");
      return dup;
    }
    const bumped = await tx
      .update(projects)
      .set({ storageBytes: sql`${projects.storageBytes} + ${newBytes}` })
      .where(
        and(
          eq(projects.id, input.projectId),
          sql`${projects.storageBytes} + ${newBytes} <= ${ctx.config.projectQuotaBytes}`,
        ),
      )
      .returning({ id: projects.id });
    if (bumped.length === 0) throw quotaExceeded();
    if (parsed.attachments.length > 0) {
      await tx.insert(attachments).values(
        parsed.attachments.map((a, i) => ({
          messagePk,
          attachmentId: a.descriptor.id,
          position: i,
          blobKey: blobKeys[i] as string,
          filename: a.descriptor.filename,
          contentType: a.descriptor.content_type,
          size: a.descriptor.size,
          sha256: a.descriptor.sha256 ?? "",
          isInline: a.descriptor.is_inline,
          contentId: a.descriptor.content_id ?? null,
        })),
      );
    }
    if (eventRows.length > 0) await tx.insert(events).values(eventRows);
    return {
      messagePk,
      messageId,
      duplicate: false,
      events: eventRows.map((e) => ({ id: e.id, route_id: e.routeId, status: e.status })),
    };
  });
}

async function parse(
  ctx: AppContext,
  projectId: string,
  raw: Uint8Array,
  rawSha256: string,
  receivedAt: Date,
): Promise<ParsedMessage> {
  try {
    return await parseMessage(raw, {
      receivedAt,
      inboundDomain: ctx.config.inboundDomain,
      newUuid: () => syntheticMessageUuid(projectId, rawSha256),
    });
  } catch (err) {
    if (err instanceof MessageParseError) throw new AppError("ingest.unparseable", err.message);
    throw err;
  }
}

// NUL and unpaired UTF-16 surrogates: Postgres text and jsonb cannot hold them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * The value with every string (keys included) made storable in Postgres text/jsonb: NUL and lone
 * surrogates become U+FFFD. Mail with a NUL in a header or a body is rare but real (broken charsets).
 */
export function storable<T>(value: T): T {
  if (typeof value === "string") return value.replace(UNSTORABLE, "\ufffd") as T;
  if (Array.isArray(value)) return value.map((v) => storable(v)) as T;
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [storable(k), storable(v)])) as T;
  }
  return value;
}

/**
 * Bytes accounted to the project's quota for one message: the raw message plus each distinct
 * attachment of it. Accounting is per message, not per physical blob (blobs are shared by content
 * across messages and projects), so a project's usage does not depend on what others store.
 */
export function storedBytesOf(rawSize: number, extracted: readonly ExtractedAttachment[]): number {
  const seen = new Map<string, number>();
  for (const a of extracted) seen.set(a.descriptor.sha256 ?? a.descriptor.id, a.descriptor.size);
  let total = rawSize;
  for (const size of seen.values()) total += size;
  return total;
}

function quotaExceeded(): AppError {
  return new AppError("ingest.quota_exceeded", "the project's storage quota is reached");
}

/** Early refusal before any blob is written; the guarded update in the transaction is the real check. */
async function checkQuota(ctx: AppContext, projectId: string, newBytes: number): Promise<void> {
  const [row] = await ctx.database.db
    .select({ storageBytes: projects.storageBytes })
    .from(projects)
    .where(eq(projects.id, projectId));
  if (!row) throw new AppError("projects.not_found", "project not found");
  if (row.storageBytes + newBytes > ctx.config.projectQuotaBytes) throw quotaExceeded();
}

async function findDuplicate(
  db: Pick<Db, "select">,
  projectId: string,
  messageId: string,
  rawSha256: string,
): Promise<IngestResult | null> {
  const [row] = await db
    .select({ id: messages.id })
    .from(messages)
    .where(
      and(
        eq(messages.projectId, projectId),
        eq(messages.messageId, messageId),
        eq(messages.rawSha256, rawSha256),
      ),
    );
  if (!row) return null;
  const rows = await db
    .select({ id: events.id, route_id: events.routeId, status: events.status })
    .from(events)
    .where(eq(events.messagePk, row.id))
    .orderBy(asc(events.createdAt), asc(events.id));
  return { messagePk: row.id, messageId, duplicate: true, events: rows };
}

/**
 * Every enabled, non-deleted route of the project whose rule matches, as route snapshots, oldest route
 * first. A stored rule that no longer compiles (the rule language changed since it was saved) skips
 * that route with a warning; it never fails the message.
 */
async function matchRoutes(
  ctx: AppContext,
  projectId: string,
  message: NormalizedMessage,
  envelope: Envelope | null,
): Promise<RouteSnapshot[]> {
  const rows = await ctx.database.db
    .select({
      id: routes.id,
      name: routes.name,
      rule: routes.rule,
      pipeline: routes.pipeline,
      kid: routes.signingSecretKid,
      endpointId: routes.endpointId,
      endpointUrl: endpoints.url,
    })
    .from(routes)
    .innerJoin(endpoints, eq(endpoints.id, routes.endpointId))
    .where(and(eq(routes.projectId, projectId), eq(routes.enabled, true), isNull(routes.deletedAt)))
    .orderBy(asc(routes.createdAt), asc(routes.id));
  const matched: RouteSnapshot[] = [];
  for (const r of rows) {
    let matches: boolean;
    try {
      matches = compileRule(r.rule)(message, envelope ?? undefined);
    } catch (err) {
      ctx.logger.warn("route skipped: its stored rule does not compile", {
        route_id: r.id,
        project_id: projectId,
        err,
      });
      continue;
    }
    if (!matches) continue;
    matched.push({
      route_id: r.id,
      name: r.name,
      endpoint_id: r.endpointId,
      endpoint_url: r.endpointUrl,
      kid: r.kid,
      pipeline: r.pipeline,
    });
  }
  return matched;
}
