/**
 * The intake pipeline behind SMTP and `POST /v1/messages` (contract §3): size check → parse →
 * candidate limit → one read (dedupe fast path, quota pre-check, routes) → blobs (the raw message
 * only when too large to keep in its row, raw.ts) → MIME policy →
 * route matching → ONE write statement in a transaction (`store.ts`: message, quota, attachments,
 * events) → wake the workers.
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

import { blobLockIds } from "../attachments/blob-locks.ts";
import { type BlobRef, refOfBytes, refOfHash } from "../attachments/blob-store.ts";
import { FsBlobStore } from "../attachments/fs-store.ts";
import type { AppContext } from "../context.ts";
import type { Db } from "../db/client.ts";
import type { EventStatus } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { newId, newUuid } from "../lib/ids.ts";
import type { Envelope, SourceType } from "../lib/message.ts";
import { metrics } from "../lib/metrics.ts";
import { idempotencyKey } from "../lib/signing.ts";
import { type ExtractedAttachment, exceedsCandidateLimit } from "../mail/extract.ts";
import { MessageParseError, type ParsedMessage, parseMessage } from "../mail/parse.ts";
import { checkMimePolicy, mimeDiscardError } from "../mail/policy.ts";
import {
  eventsOfMessage,
  type IntakeState,
  intakeStateCache,
  loadIntakeState,
  matchRoutes,
} from "./lookup.ts";
import { keepsRawInline } from "./raw.ts";
import { Semaphore } from "./semaphore.ts";
import { type EventRow, releaseStorage, storeMessage } from "./store.ts";

/** Largest raw message accepted: 50 MB in binary units, as the spec's per-message limit. */
export const MAX_RAW_BYTES = 50 * 1024 * 1024;

/**
 * A spooled raw message. With `sha256` (hashed while spooling) the file may be moved into the blob
 * store instead of copied (it is then gone: callers remove it afterwards ignoring ENOENT); `bytes`
 * are its contents when the spool kept them, sparing a read.
 */
export interface SpooledRaw {
  path: string;
  size: number;
  sha256?: string;
  bytes?: Uint8Array;
}

/** One raw message to ingest into a project. A `{path, size}` raw is a spool file the caller owns. */
export interface IngestInput {
  projectId: string;
  raw: Uint8Array | SpooledRaw;
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

/** Messages at least this large share the large-message budget; smaller ones have their own slots. */
export const LARGE_MESSAGE_BYTES = 1024 * 1024;

/** Raw bytes of large messages parsed at once, per unit of `INGEST_CONCURRENCY` (4 → 64 MiB). */
export const LARGE_BUDGET_PER_SLOT = 16 * 1024 * 1024;

/** Small messages in the pipeline at once; their memory is negligible, their cost is latency. */
export const SMALL_MESSAGE_SLOTS = 64;

/** Messages from this size on are followed by a full GC, so their garbage does not pile up in RSS. */
const COLLECT_AFTER_BYTES = 8 * 1024 * 1024;

const limits = new WeakMap<AppContext, { large: Semaphore; small: Semaphore }>();

/**
 * Takes a slot in the pipeline for a message of `size` bytes. Parsing holds many times a message's
 * size at its peak (raw bytes, our exact decoded attachments, postal-mime's strings; see
 * `withoutLargeAttachmentBodies` in parse.ts), so large messages (≥ 1 MiB) share a
 * budget of `INGEST_CONCURRENCY` × 16 MiB raw bytes, weighted by size: with the default 4, two 30 MB
 * messages, or four 16 MB ones, or 64 of 1 MiB parse at once, and one 50 MiB message alone. This is
 * what bounds memory under a burst of large mail. Small messages have their own, wider limit so they
 * are not serialised behind fsync and commit latency.
 */
export function acquireIngestSlot(ctx: AppContext, size: number): Promise<() => void> {
  let l = limits.get(ctx);
  if (!l) {
    l = {
      large: new Semaphore(ctx.config.ingestConcurrency * LARGE_BUDGET_PER_SLOT),
      small: new Semaphore(SMALL_MESSAGE_SLOTS),
    };
    limits.set(ctx, l);
  }
  return size >= LARGE_MESSAGE_BYTES ? l.large.acquire(size) : l.small.acquire();
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
  const release = await acquireIngestSlot(ctx, declared);
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
    // Parsing a large message leaves hundreds of MB of garbage; collect it now rather than letting
    // the next large messages stack their peaks on top of it.
    if (declared >= COLLECT_AFTER_BYTES) Bun.gc(true);
  }
  (result.duplicate ? metrics.ingestDuplicates : metrics.ingestAccepted).inc({ source });
  if (!result.duplicate && result.events.some((e) => e.status === "pending")) wakeWorkers(ctx);
  return result;
}

/**
 * Least time between two NOTIFYs of one process during a burst. Each NOTIFY is a round trip and a
 * transaction of its own; unthrottled, a steady stream of mail sent about one per message (measured:
 * 2.9 transactions per message on Postgres, lookup + store + ~0.9 NOTIFY). The first commit after a
 * quiet spell still notifies at once; during a burst the workers hear of new events at most this late.
 */
export const WAKE_INTERVAL_MS = 10;

const wakes = new WeakMap<AppContext, { running: boolean; again: boolean; last: number }>();

/**
 * Wakes the delivery workers after a commit, coalescing bursts: while one NOTIFY is in flight (or
 * waiting out {@link WAKE_INTERVAL_MS}), further requests collapse into one more NOTIFY sent after
 * it, so every commit is followed by a notification but a burst of messages does not cost a round
 * trip each. A lost wake-up only delays delivery until the workers' next poll.
 */
function wakeWorkers(ctx: AppContext): void {
  let w = wakes.get(ctx);
  if (!w) {
    w = { running: false, again: false, last: 0 };
    wakes.set(ctx, w);
  }
  if (w.running) {
    w.again = true;
    return;
  }
  const state = w;
  state.running = true;
  void (async () => {
    try {
      do {
        state.again = false;
        const wait = state.last + WAKE_INTERVAL_MS - performance.now();
        if (wait > 0) await Bun.sleep(wait);
        state.last = performance.now();
        await ctx.wakeWorkers();
      } while (state.again);
    } catch (err) {
      ctx.logger.warn("could not wake workers", { err });
    } finally {
      state.running = false;
    }
  })();
}

/** The blob ref of an extracted attachment, from the hash extraction computed over its bytes. */
function refOfAttachment(a: ExtractedAttachment): BlobRef | undefined {
  const sha256 = a.descriptor.sha256;
  return sha256 ? refOfHash(sha256, a.bytes.byteLength) : undefined;
}

function tooLarge(): AppError {
  return new AppError("ingest.too_large", `the message is over the ${MAX_RAW_BYTES}-byte limit`);
}

async function readRaw(raw: IngestInput["raw"]): Promise<Uint8Array> {
  if (raw instanceof Uint8Array) return raw;
  if (raw.bytes !== undefined) return raw.bytes;
  return new Uint8Array(await Bun.file(raw.path).arrayBuffer());
}

/**
 * Stores the raw message. A spool file hashed on the way in is renamed into the fs blob store
 * (`adoptFile`: one write, one fsync) when its hash is the bytes being ingested; else the bytes are put.
 */
function putRaw(ctx: AppContext, input: IngestInput["raw"], raw: Uint8Array, ref: BlobRef): Promise<BlobRef> {
  if (
    !(input instanceof Uint8Array) &&
    input.sha256 === ref.sha256 &&
    input.size === ref.size &&
    ctx.blobs instanceof FsBlobStore
  ) {
    return ctx.blobs.adoptFile(input.path, ref);
  }
  return ctx.blobs.put(raw);
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
  const rawRef =
    !(input.raw instanceof Uint8Array) && input.raw.sha256 !== undefined && input.raw.size === raw.byteLength
      ? refOfHash(input.raw.sha256, raw.byteLength)
      : refOfBytes(raw);
  const receivedAt = ctx.clock.now();
  const parsed = await parse(ctx, input.projectId, raw, rawRef.sha256, receivedAt);
  parsed.message = storable(parsed.message);
  // The attachment rows are written from the descriptors, whose names and Content-IDs can carry a NUL too.
  for (const a of parsed.attachments) a.descriptor = storable(a.descriptor);
  if (exceedsCandidateLimit(parsed.candidateBytes)) {
    throw new AppError("ingest.too_large", "the message's attachments total over the 50 MiB limit");
  }
  const messageId = parsed.message.message_id;
  const db = ctx.database.db;

  // The project's routes, usage and (on a fresh read) a stored duplicate. A cached state spares the
  // read; everything decided from it is re-checked by the store statement (lookup.ts, IntakeStateCache).
  const cache = intakeStateCache(ctx);
  const fresh = async (): Promise<IntakeState> => {
    const s = await loadIntakeState(ctx, input.projectId, messageId, rawRef.sha256);
    cache.set(input.projectId, s, Date.now());
    return s;
  };
  let state = cache.get(input.projectId, Date.now());
  let isFresh = state === null;
  if (state === null) state = await fresh();
  // Fast path for a resend: no blob writes, no quota check. The write below re-checks (races).
  if (state.duplicatePk) return duplicateOf(db, state.duplicatePk, messageId);
  const newBytes = storedBytesOf(raw.byteLength, parsed.attachments);
  if (state.usedBytes + newBytes > ctx.config.projectQuotaBytes) {
    if (!isFresh) {
      state = await fresh();
      isFresh = true;
      if (state.duplicatePk) return duplicateOf(db, state.duplicatePk, messageId);
    }
    if (state.usedBytes + newBytes > ctx.config.projectQuotaBytes) throw quotaExceeded();
  }

  // A small raw message goes into its row (raw.ts); a larger one into the blob store first.
  const inline = keepsRawInline(raw.byteLength);
  const [, ...attachmentRefs] = await Promise.all([
    inline ? null : putRaw(ctx, input.raw, raw, rawRef),
    // Extraction hashed each attachment already (its descriptor's sha256): no second pass.
    ...parsed.attachments.map((a) => ctx.blobs.put(a.bytes, refOfAttachment(a))),
  ]);
  const violation = await checkMimePolicy(parsed.attachments);
  const row = {
    id: newId("msg"),
    projectId: input.projectId,
    messageId,
    rawSha256: rawRef.sha256,
    rawBlobKey: inline ? null : rawRef.key,
    rawBytes: inline ? raw : null,
    rawSizeBytes: raw.byteLength,
    storedBytes: newBytes,
    sourceType: input.sourceType,
    envelope: input.envelope,
    parsed: parsed.message,
    receivedAt,
  };
  const attachmentRows = parsed.attachments.map((a, i) => ({
    descriptor: a.descriptor,
    blobKey: (attachmentRefs[i] as { key: string }).key,
  }));
  const blobLocks = blobLockIds([...(inline ? [] : [rawRef.key]), ...attachmentRows.map((a) => a.blobKey)]);
  // Routes that changed since the state was read make the statement write nothing: re-read, re-match.
  for (let attempt = 1; ; attempt++) {
    const matched = matchRoutes(ctx, state.routes, parsed.message, input.envelope);
    const now = ctx.clock.now();
    const eventRows: EventRow[] = matched.map((route) => ({
      id: newUuid(),
      route_id: route.route_id,
      status: violation ? "discarded" : "pending",
      last_error: violation ? mimeDiscardError(violation) : null,
      next_attempt_at: violation ? null : now.toISOString(),
      idempotency_key: idempotencyKey(messageId, route.route_id),
      route_snapshot: route,
    }));
    const outcome = await storeMessage(
      ctx.database,
      row,
      attachmentRows,
      eventRows,
      ctx.config.projectQuotaBytes,
      now,
      state.routesJson,
      blobLocks,
    );
    if (outcome.inserted) {
      if (outcome.usedBytes !== null) cache.updateUsage(input.projectId, outcome.usedBytes);
      await restoreSweptBlobs(ctx, [
        ...(inline ? [] : [[rawRef, raw] as const]),
        ...parsed.attachments.map((a, i) => [attachmentRefs[i] as BlobRef, a.bytes] as const),
      ]);
      return {
        messagePk: row.id,
        messageId,
        duplicate: false,
        events: eventRows.map((e) => ({ id: e.id, route_id: e.route_id, status: e.status })),
      };
    }
    if (outcome.duplicatePk) return duplicateOf(db, outcome.duplicatePk, messageId);
    if (!outcome.routesCurrent && attempt < 3) {
      state = await fresh();
      if (state.duplicatePk) return duplicateOf(db, state.duplicatePk, messageId);
      continue;
    }
    cache.delete(input.projectId);
    if (outcome.bumped) await releaseStorage(db, input.projectId, newBytes);
    // A concurrent ingest of the same bytes won the race: answer with its message. Otherwise the
    // project had no room left (concurrent messages took it since the pre-check), or is gone
    // (`projects.not_found` from the read).
    const again = await loadIntakeState(ctx, input.projectId, messageId, rawRef.sha256);
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
async function restoreSweptBlobs(ctx: AppContext, blobs: ReadonlyArray<readonly [BlobRef, Uint8Array]>) {
  await Promise.all(
    blobs.map(async ([ref, bytes]) => {
      const stored = await ctx.blobs.stat(ref.key);
      if (stored === null || stored.size !== ref.size) await ctx.blobs.put(bytes);
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

// NUL and unpaired UTF-16 surrogates: Postgres text and jsonb cannot hold them.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching NUL is the point
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** The same pattern without the `g` flag, for a stateless test. */
const HAS_UNSTORABLE = new RegExp(UNSTORABLE.source);

/**
 * The value with every string (keys included) made storable in Postgres text/jsonb: NUL and lone
 * surrogates become U+FFFD. Mail with a NUL in a header or a body is rare but real (broken charsets).
 * Copy on write: what needs no change is returned as is (the common case allocates nothing).
 */
export function storable<T>(value: T): T {
  if (typeof value === "string") {
    return (HAS_UNSTORABLE.test(value) ? value.replace(UNSTORABLE, "\ufffd") : value) as T;
  }
  if (Array.isArray(value)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      const s = storable(v);
      if (s !== v) {
        out ??= value.slice();
        out[i] = s;
      }
    }
    return (out ?? value) as T;
  }
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    let changed = false;
    for (const e of entries) {
      const k = storable(e[0]);
      const v = storable(e[1]);
      if (k !== e[0] || v !== e[1]) {
        changed = true;
        e[0] = k;
        e[1] = v;
      }
    }
    // fromEntries defines own properties, so a "__proto__" key stays a plain key.
    return (changed ? Object.fromEntries(entries) : value) as T;
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
