/**
 * The intake pipeline behind SMTP and `POST /v1/messages` (docs/ingest.md, "The pipeline"): size check
 * → admission slot (admission.ts) → parse and make storable (normalize.ts) → candidate limit → one read
 * (lookup.ts: dedupe fast path, quota pre-check, routes; cached per project) → blobs (the raw message
 * only when too large to keep in its row, raw.ts) → MIME policy → route matching → ONE write statement
 * (store.ts: message, quota, attachments, events; in a group commit, group-commit.ts) → wake the
 * workers (wake.ts). The per-process state these use is `ctx.ingest` (context.ts).
 *
 * Invariants:
 * - nothing is written (blob or row) for a message rejected as too large or unparseable;
 * - the message, its attachment rows and one event per matched route commit together, so a caller
 *   that has seen this function resolve may answer "250" / "202" (durable before the reply);
 * - blobs are content-addressed, so storing them before the transaction is harmless when it then
 *   fails or turns out to be a duplicate: no blob is ever deleted here (another message may share it);
 * - the quota is enforced by a guarded `update … where storage_bytes + n <= quota` inside the
 *   transaction, so concurrent messages cannot overshoot it (quota.ts).
 */

import { blobLockIds } from "../attachments/blob-locks.ts";
import { type BlobRef, refOfHash } from "../attachments/blob-store.ts";
import { bodyBytes, largeBodies, putBody, storedModel } from "../attachments/body-blobs.ts";
import type { AppContext, ProjectLookup } from "../context.ts";
import type { Db } from "../db/client.ts";
import type { EventStatus } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { newId, newUuid } from "../lib/ids.ts";
import type { Envelope, SourceType } from "../lib/message.ts";
import { metrics } from "../lib/metrics.ts";
import { idempotencyKey } from "../lib/signing.ts";
import { type ExtractedAttachment, exceedsCandidateLimit } from "../mail/extract.ts";
import { MessageParseError, type ParsedMessage, parseMessage } from "../mail/parse.ts";
import { attachmentFindings, judgeAttachments, mimeDiscardError } from "../mail/policy.ts";
import { understandRawMessage } from "../mail/understand/index.ts";
import { wakeForNotifications } from "../resources/notifications.ts";
import { decideIntake, intakeNotification, notifyRejected } from "./intake-policy.ts";
import { eventsOfMessage, loadProjectLookup, matchRoutes } from "./lookup.ts";
import { storable, syntheticMessageUuid } from "./normalize.ts";
import { quotaExceeded, releaseStorage, storedBytesOf } from "./quota.ts";
import {
  declaredSize,
  keepsRawInline,
  type RawSource,
  rawRefOf,
  readRawSource,
  type StoredRaw,
  storeRawBlob,
} from "./raw.ts";
import { type EventRow, storeMessage } from "./store.ts";
import type { SenderVerdict } from "./trust/index.ts";

export { LARGE_MESSAGE_BYTES } from "./admission.ts";

/** Largest raw message accepted: 50 MB in binary units, as the spec's per-message limit. */
export const MAX_RAW_BYTES = 50 * 1024 * 1024;

/** One raw message to ingest into a project. A `{path, size}` raw is a spool file the caller owns. */
export interface IngestInput {
  projectId: string;
  raw: RawSource;
  sourceType: SourceType;
  /** the SMTP envelope; null for the HTTP intake */
  envelope: Envelope | null;
  /** the sender's authentication and spam verdict, computed once per message by the intake (trust/) */
  verdict?: SenderVerdict;
}

/** An event as the intake reports it (`POST /v1/messages` response items). */
export interface IngestedEvent {
  id: string;
  route_id: string;
  status: EventStatus;
}

/** Outcome of {@link ingestMessage}. `duplicate` → the existing message and its events (docs/ingest.md). */
export interface IngestResult {
  messagePk: string;
  messageId: string;
  duplicate: boolean;
  events: IngestedEvent[];
}

/** Messages from this size on are followed by a full GC, so their garbage does not pile up in RSS. */
const COLLECT_AFTER_BYTES = 8 * 1024 * 1024;

/** The refusal of a message over {@link MAX_RAW_BYTES}, for every intake that checks the size itself. */
export function messageTooLarge(): AppError {
  return new AppError("ingest.too_large", `the message is over the ${MAX_RAW_BYTES}-byte limit`);
}

/**
 * Ingests one raw RFC 5322 message. Throws `AppError` with `ingest.too_large` (over 50 MiB raw or
 * attachment candidates over 50 MiB), `ingest.unparseable`, `ingest.quota_exceeded`, or
 * `ingest.unavailable` for a transient failure (database or blob store down; safe to retry, since a
 * retry of the same bytes is deduplicated).
 */
export async function ingestMessage(ctx: AppContext, input: IngestInput): Promise<IngestResult> {
  const declared = declaredSize(input.raw);
  const source = input.sourceType;
  if (declared > MAX_RAW_BYTES) {
    metrics.ingestRejected.inc({ source, code: "ingest.too_large" });
    throw messageTooLarge();
  }
  const release = await ctx.ingest.admission.acquire(declared);
  let result: IngestResult;
  try {
    result = await ingestAdmitted(ctx, input);
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
    // Parsing a large message leaves hundreds of MB of garbage; collect it now rather than letting
    // the next large messages stack their peaks on top of it.
    if (declared >= COLLECT_AFTER_BYTES) Bun.gc(true);
  }
  (result.duplicate ? metrics.ingestDuplicates : metrics.ingestAccepted).inc({ source });
  if (!result.duplicate && result.events.some((e) => e.status === "pending")) ctx.ingest.wake.request();
  return result;
}

/**
 * Raw bytes in a box that the intake empties once they are stored. Never kept in a local variable of
 * the (async) pipeline: such a local can outlive its last use (the runtime may keep a stale copy of it
 * across later awaits), and then so do the 50 MB it refers to.
 */
interface HeldRaw {
  bytes: Uint8Array | null;
}

async function holdRaw(source: RawSource): Promise<HeldRaw> {
  return { bytes: await readRawSource(source) };
}

function bytesOf(held: HeldRaw): Uint8Array {
  if (held.bytes === null) throw new Error("the raw bytes were let go of");
  return held.bytes;
}

/** The blob ref of an extracted attachment, from the hash extraction computed over its bytes. */
function refOfAttachment(a: ExtractedAttachment): BlobRef | undefined {
  const sha256 = a.descriptor.sha256;
  return sha256 ? refOfHash(sha256, a.bytes.byteLength) : undefined;
}

/**
 * {@link storeAdmitted}, then letting go of what it kept to store the raw message again (also when it
 * failed, once the raw message's put has settled).
 */
async function ingestAdmitted(ctx: AppContext, input: IngestInput): Promise<IngestResult> {
  const kept: Promise<StoredRaw | null>[] = [];
  try {
    return await storeAdmitted(ctx, input, kept);
  } finally {
    for (const stored of kept) await (await stored)?.release();
  }
}

/**
 * The pipeline of one message that holds an admission slot: parse, look up, store blobs, write rows.
 * The raw message's put in the blob store is pushed to `kept`, for the caller to release.
 */
async function storeAdmitted(
  ctx: AppContext,
  input: IngestInput,
  kept: Promise<StoredRaw | null>[],
): Promise<IngestResult> {
  // The chunks a large message arrived in (SMTP stream, request body) were spooled and are garbage now:
  // collect them before the message is read back and parsed on top of them.
  if (declaredSize(input.raw) >= COLLECT_AFTER_BYTES) Bun.gc(true);
  // Let go of once it is stored, below: only the rows are written after that.
  const held = await holdRaw(input.raw);
  const rawSize = bytesOf(held).byteLength;
  if (rawSize > MAX_RAW_BYTES) throw messageTooLarge();
  const rawRef = rawRefOf(input.raw, bytesOf(held));
  const receivedAt = ctx.clock.now();
  const parsed = await parse(ctx, input.projectId, bytesOf(held), rawRef.sha256, receivedAt);
  // What the service understands (thread, reply, forward, automated mail) is stored with the parse.
  Object.assign(
    parsed.message,
    await understandRawMessage(parsed.message, bytesOf(held), {
      onError: (analysis, err) =>
        ctx.logger.warn("message analysis failed", { analysis, err, project_id: input.projectId }),
    }),
  );
  if (input.verdict) Object.assign(parsed.message, input.verdict);
  parsed.message = storable(parsed.message);
  // The attachment rows are written from the descriptors, whose names and Content-IDs can carry a NUL too.
  for (const a of parsed.attachments) a.descriptor = storable(a.descriptor);
  if (exceedsCandidateLimit(parsed.candidateBytes)) {
    throw new AppError("ingest.too_large", "the message's attachments total over the 50 MiB limit");
  }
  const messageId = parsed.message.message_id;
  const db = ctx.database.db;

  // The project's routes, usage and (on a fresh read) a stored duplicate. A cached lookup spares the
  // read; everything decided from it is re-checked by the store statement (lookup.ts, RecentProjectLookups).
  const lookups = ctx.ingest.lookups;
  const fresh = async (): Promise<ProjectLookup> => {
    const read = await loadProjectLookup(ctx, input.projectId, messageId, rawRef.sha256);
    lookups.set(input.projectId, read, Date.now());
    return read;
  };
  let lookup = lookups.get(input.projectId, Date.now());
  let isFresh = lookup === null;
  if (lookup === null) lookup = await fresh();
  // Fast path for a resend: no blob writes, no quota check. The write below re-checks (races).
  if (lookup.duplicatePk) return duplicateOf(db, lookup.duplicatePk, messageId);
  const intake = decideIntake(lookup.intakePolicy, parsed.message, input.envelope);
  if (intake === "reject") {
    const policy = lookup.intakePolicy;
    await notifyRejected(ctx, { projectId: input.projectId, policy, message: parsed.message });
    throw new AppError("ingest.rejected", "message refused by the project's intake policy");
  }
  // Counted at its stored length; the store statement sets it when the Message-ID is already taken.
  parsed.message.message_id_conflict ??= false;
  // The parse of a large message leaves its temporaries (decoded bodies before line-end folding,
  // charset buffers) as garbage: collect them before the JSON text and the statement's buffers are
  // built on top of them.
  if (rawSize >= COLLECT_AFTER_BYTES) Bun.gc(true);
  // A very large body goes to the blob store, `parsed` keeps its beginning (attachments/body-blobs.ts);
  // the whole text stays in hand for route matching.
  const bodyKinds = largeBodies(parsed.message);
  const parsedJson = JSON.stringify(storedModel(parsed.message, bodyKinds));
  const newBytes =
    storedBytesOf(rawSize, parsed.attachments, Buffer.byteLength(parsedJson)) +
    bodyBytes(parsed.message, bodyKinds);
  if (lookup.usedBytes + newBytes > ctx.config.projectQuotaBytes) {
    if (!isFresh) {
      lookup = await fresh();
      isFresh = true;
      if (lookup.duplicatePk) return duplicateOf(db, lookup.duplicatePk, messageId);
    }
    if (lookup.usedBytes + newBytes > ctx.config.projectQuotaBytes) throw quotaExceeded();
  }

  // A small raw message goes into its row (raw.ts); a larger one into the blob store first.
  const inline = keepsRawInline(rawSize);
  const rawStored = inline ? null : storeRawBlob(ctx, input.raw, bytesOf(held), rawRef);
  if (rawStored) kept.push(rawStored.catch(() => null));
  const [storedRaw, ...attachmentRefs] = await Promise.all([
    rawStored,
    // Extraction hashed each attachment already (its descriptor's sha256): no second pass.
    ...parsed.attachments.map((a) => ctx.blobs.put(a.bytes, refOfAttachment(a))),
  ]);
  // One body at a time: each is encoded, written and dropped before the next.
  const bodyRefs = new Map<"text" | "html", BlobRef>();
  for (const kind of bodyKinds) bodyRefs.set(kind, await putBody(ctx, parsed.message[kind]));
  // Stored: the raw bytes are not needed any more (storedRaw can store them again), and are collected
  // before the statement, whose buffers (and on PGlite the database's own memory) come on top.
  const rawBytes = inline ? bytesOf(held) : null;
  held.bytes = null;
  if (rawSize >= COLLECT_AFTER_BYTES) Bun.gc(true);
  // Sniffed once; each matched route judges them by its own attachment policy (mail/policy.ts).
  const findings = await attachmentFindings(parsed.attachments);
  const message = {
    id: newId("msg"),
    projectId: input.projectId,
    messageId,
    rawSha256: rawRef.sha256,
    rawBlobKey: inline ? null : rawRef.key,
    rawBytes,
    rawSizeBytes: rawSize,
    storedBytes: newBytes,
    sourceType: input.sourceType,
    envelope: input.envelope,
    parsed: parsed.message,
    parsedJson,
    textBlobKey: bodyRefs.get("text")?.key ?? null,
    htmlBlobKey: bodyRefs.get("html")?.key ?? null,
    receivedAt,
  };
  const attachments = parsed.attachments.map((a, i) => ({
    descriptor: a.descriptor,
    blobKey: (attachmentRefs[i] as { key: string }).key,
  }));
  const blobLocks = blobLockIds([
    ...(inline ? [] : [rawRef.key]),
    ...attachments.map((a) => a.blobKey),
    ...[...bodyRefs.values()].map((r) => r.key),
  ]);
  // Routes that changed since the lookup make the statement write nothing: look up again, re-match.
  for (let attempt = 1; ; attempt++) {
    const matched = matchRoutes(ctx, lookup.routes, parsed.message, input.envelope);
    const now = ctx.clock.now();
    const policies = new Map(lookup.routes.map((r) => [r.id, r.attachment_policy ?? undefined]));
    const events: EventRow[] = matched.map((route) => {
      const verdict = judgeAttachments(findings, policies.get(route.route_id));
      const discard = verdict.discard;
      const held = !discard && intake === "hold";
      return {
        id: newUuid(),
        routeId: route.route_id,
        status: discard ? "discarded" : held ? "held" : "pending",
        lastError: discard ? mimeDiscardError({ reason: discard }) : null,
        nextAttemptAt: discard || held ? null : now,
        idempotencyKey: idempotencyKey(messageId, route.route_id),
        routeSnapshot: route,
        policyNotes: verdict.notes.length > 0 ? verdict.notes : null,
      };
    });
    const outcome = await storeMessage(ctx.ingest.commits, {
      message,
      attachments,
      events,
      quotaBytes: ctx.config.projectQuotaBytes,
      now,
      routesJson: lookup.routesJson,
      blobLocks,
      notification:
        intake === "hold"
          ? intakeNotification({
              decision: "hold",
              projectId: input.projectId,
              policy: lookup.intakePolicy,
              message: parsed.message,
              storedId: message.id,
              now,
            })
          : null,
    });
    if (outcome.inserted) {
      if (outcome.usedBytes !== null) lookups.updateUsage(input.projectId, outcome.usedBytes);
      // The `message.held` notification went in with the message: the workers are told after the commit.
      if (outcome.notified) await wakeForNotifications(ctx.database);
      if (outcome.idsSuffixed) {
        // A resend that changed, or someone reusing a known Message-ID (docs/attachments.md).
        ctx.logger.info("Message-ID already stored with other bytes: attachment ids made distinct", {
          project_id: input.projectId,
          message_pk: message.id,
        });
      }
      await restoreSweptBlobs(ctx, [
        ...(storedRaw ? [[rawRef, storedRaw.again] as const] : []),
        ...parsed.attachments.map((a, i) => [attachmentRefs[i] as BlobRef, a.bytes] as const),
        ...[...bodyRefs].map(([kind, ref]) => [ref, () => putBody(ctx, parsed.message[kind])] as const),
      ]);
      return {
        messagePk: message.id,
        messageId,
        duplicate: false,
        events: events.map((e) => ({ id: e.id, route_id: e.routeId, status: e.status })),
      };
    }
    if (outcome.duplicatePk) return duplicateOf(db, outcome.duplicatePk, messageId);
    if (!outcome.routesCurrent && attempt < 3) {
      lookup = await fresh();
      if (lookup.duplicatePk) return duplicateOf(db, lookup.duplicatePk, messageId);
      continue;
    }
    lookups.delete(input.projectId);
    if (outcome.bumped) await releaseStorage(db, input.projectId, newBytes);
    // A concurrent ingest of the same bytes won the race: answer with its message. Otherwise the
    // project had no room left (concurrent messages took it since the pre-check), or is gone
    // (`projects.not_found` from the read).
    const again = await loadProjectLookup(ctx, input.projectId, messageId, rawRef.sha256);
    if (again.duplicatePk) return duplicateOf(db, again.duplicatePk, messageId);
    if (!outcome.routesCurrent) throw new Error("routes kept changing while storing the message");
    if (!outcome.bumped) throw quotaExceeded();
    throw new Error("dedupe conflict without a visible message");
  }
}

/**
 * After the rows commit: a blob the retention sweeper deleted between our (no-op) put and our commit is
 * stored again from the bytes still in hand, before the caller answers 250/202. The store statement's
 * shared blob locks make this check sufficient (retention.ts has the other half of the protocol).
 */
async function restoreSweptBlobs(
  ctx: AppContext,
  blobs: ReadonlyArray<readonly [BlobRef, Uint8Array | (() => Promise<BlobRef>)]>,
) {
  await Promise.all(
    blobs.map(async ([ref, bytes]) => {
      const stored = await ctx.blobs.stat(ref.key);
      if (stored === null || stored.size !== ref.size)
        await (typeof bytes === "function" ? bytes() : ctx.blobs.put(bytes));
    }),
  );
}

async function duplicateOf(db: Db, messagePk: string, messageId: string): Promise<IngestResult> {
  return { messagePk, messageId, duplicate: true, events: await eventsOfMessage(db, messagePk) };
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
