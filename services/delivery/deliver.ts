/**
 * One delivery attempt of a claimed event (docs/delivery.md), from loading what it needs to recording the
 * result. Decisions:
 * - The route snapshot (taken at event creation, or by a replay) decides WHERE: its endpoint id and
 *   kid. The endpoint's URL, headers and timeout and the secret itself are read at attempt time, so a
 *   fixed URL or rotated header value helps pending retries. A deleted route, endpoint or secret ends
 *   the event `dead` with a clear `last_error`.
 * - The body is built once per event (build-body.ts) and stored; retries reuse it; a new `t` and
 *   signature per attempt.
 * - The result is recorded in ONE statement (a data-modifying CTE): the event update, guarded by
 *   `lease_owner = me`, feeds the attempt insert, so a worker whose lease was taken over writes
 *   nothing, and (event_id, number) stays unique.
 */
import { type AnyColumn, eq, type SQL, sql } from "drizzle-orm";
import pkg from "../../package.json" with { type: "json" };
import type { BlobRef } from "../attachments/blob-store.ts";
import { withFullBodies } from "../attachments/body-blobs.ts";
import { deleteUnreferencedBlobs } from "../attachments/retention.ts";
import type { AppContext } from "../context.ts";
import type { Db } from "../db/client.ts";
import { endpoints, messages, routes, signingSecrets } from "../db/schema/index.ts";
import {
  type DeadReason,
  endpointDeleted,
  formatDeadReason,
  messageErased,
  messageMissing,
  routeDeleted,
  signingSecretDeleted,
} from "../lib/dead-reasons.ts";
import { newId } from "../lib/ids.ts";
import { metrics } from "../lib/metrics.ts";
import { signatureHeaders } from "../lib/signing.ts";
import { endpointSecrets, RESERVED_HEADERS } from "../resources/endpoints.ts";
import {
  notificationJobsInsert,
  type PendingNotification,
  pendingNotification,
  wakeForNotifications,
} from "../resources/notifications.ts";
import { openSigningSecret } from "../resources/signing-secrets.ts";
import { orderedPipeline } from "../routing/pipeline.ts";
import { keepsBodyInBlob, readStoredBodyOrForget, storeBody } from "./body-store.ts";
import {
  type BodyEncoding,
  type BuildResult,
  buildEventBody,
  type StoredMessage,
  wireBody,
} from "./build-body.ts";
import { requestCapture, responseCapture } from "./capture.ts";
import { recordCircuitOutcome } from "./circuit.ts";
import type { ClaimedEvent } from "./claim.ts";
import { type DispatchResult, sendWebhook } from "./dispatch.ts";
import { decideOutcome } from "./outcome.ts";
import type { AttemptRecorder } from "./record.ts";
import { classifyOutcome } from "./retry-policy.ts";

/** Bodies from this length on are followed by a full GC (as the intake does after a large message). */
const COLLECT_FROM_CHARS = 8 * 1024 * 1024;

/** `User-Agent` of every delivery (docs/delivery.md). */
export const USER_AGENT = `mailhook/${pkg.version}`;

type RouteRow = typeof routes.$inferSelect;
type EndpointRow = typeof endpoints.$inferSelect;
type SecretRow = typeof signingSecrets.$inferSelect;

/** Rows a batch of claimed events refers to, loaded with one query per table. */
export interface AttemptInputs {
  routes: Map<string, RouteRow>;
  endpoints: Map<string, EndpointRow>;
  secrets: Map<string, SecretRow>;
  messages: Map<string, StoredMessage>;
  /** per message, how many events of the batch still build a body from it (then it is let go) */
  builds?: Map<string, number>;
  /**
   * Secrets opened for this batch (signing secret by kid, endpoint headers by endpoint id): its events
   * mostly share one endpoint and one kid, and each open is an AES-GCM decryption.
   */
  opened?: { signing: Map<string, string>; headers: Map<string, ReturnType<typeof endpointSecrets>> };
  /** the worker's sealed → opened values ({@link AttemptLoads}), kept across its batches */
  unsealed?: Map<string, string>;
}

/** `map.get(key)`, made by `make` the first time. */
function memo<V>(map: Map<string, V>, key: string, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

function opened(inputs: AttemptInputs): NonNullable<AttemptInputs["opened"]> {
  inputs.opened ??= { signing: new Map(), headers: new Map() };
  return inputs.opened;
}

/** Sealed values a worker keeps opened; beyond this many, the cache starts over. */
const UNSEALED_MAX = 1024;

/**
 * `ctx` whose secret box opens each sealed value once per worker (`inputs.unsealed`), not once per
 * batch. A sealed value is its own key: a rotated secret or a changed header is sealed anew (a fresh
 * IV), so it is opened anew, and a deleted one is no longer asked for. A value that fails to open is
 * not kept, so the failure is met again on every attempt (recorded as `secret_unreadable`).
 */
function unsealingCtx(ctx: AppContext, inputs: AttemptInputs): AppContext {
  const cache = inputs.unsealed;
  if (!cache) return ctx;
  const box = ctx.box;
  return {
    ...ctx,
    box: {
      seal: (plaintext) => box.seal(plaintext),
      open(sealed) {
        let value = cache.get(sealed);
        if (value === undefined) {
          value = box.open(sealed);
          if (cache.size >= UNSEALED_MAX) cache.clear();
          cache.set(sealed, value);
        }
        return value;
      },
    },
  };
}

/**
 * `column = any($ids::text[])`: one parameter whatever the list length, so the statement text (and its
 * prepared plan on Postgres) is the same for every batch, unlike `in ($1, $2, …)`.
 */
function anyOfIds(column: AnyColumn): SQL {
  return sql`${column} = any(${sql.placeholder("ids")}::text[])`;
}

/** A Postgres array literal of `values` (the `ids` parameter of {@link anyOfIds}). */
function textArray(values: string[]): string {
  return `{${values.map((v) => `"${v.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
}

/**
 * The four loads of a batch as drizzle prepared queries (no round trip), built once by each worker and
 * kept: building a select through the query builder on every batch cost ≈ 5% of the worker's CPU
 * (profile of the delivery bench).
 */
export function prepareAttemptLoads(db: Db) {
  return {
    /** sealed → opened secret values, shared by the worker's batches (see {@link unsealingCtx}) */
    unsealed: new Map<string, string>(),
    routes: db.select().from(routes).where(anyOfIds(routes.id)).prepare("delivery_routes"),
    endpoints: db.select().from(endpoints).where(anyOfIds(endpoints.id)).prepare("delivery_endpoints"),
    secrets: db.select().from(signingSecrets).where(anyOfIds(signingSecrets.kid)).prepare("delivery_secrets"),
    messages: db
      .select(MESSAGE_COLUMNS)
      .from(messages)
      .where(anyOfIds(messages.id))
      .prepare("delivery_messages"),
  };
}

/** The prepared loads of {@link loadAttemptInputs}. */
export type AttemptLoads = ReturnType<typeof prepareAttemptLoads>;

/** What building a body reads of a message, and where its large bodies are kept. */
const MESSAGE_COLUMNS = {
  id: messages.id,
  parsed: messages.parsed,
  rawSizeBytes: messages.rawSizeBytes,
  sourceType: messages.sourceType,
  envelope: messages.envelope,
  textBlobKey: messages.textBlobKey,
  htmlBlobKey: messages.htmlBlobKey,
};

type MessageRow = Awaited<ReturnType<AttemptLoads["messages"]["execute"]>>[number];

/** A message as a build takes it: a body kept in the blob store is read back whole (attachments/body-blobs.ts). */
async function storedMessage(
  ctx: Pick<AppContext, "blobs">,
  { textBlobKey, htmlBlobKey, ...m }: MessageRow,
): Promise<StoredMessage> {
  const parsed = await withFullBodies(ctx, m.parsed, { textBlobKey, htmlBlobKey });
  return { ...m, parsed, envelope: m.envelope ?? null };
}

/** Loads routes, endpoints, secrets and (for events without a built body) messages of a batch. */
export async function loadAttemptInputs(
  q: AttemptLoads,
  batch: ClaimedEvent[],
  ctx: Pick<AppContext, "blobs">,
): Promise<AttemptInputs> {
  const ids = (xs: string[]) => ({ ids: textArray([...new Set(xs)]) });
  const messagePks = batch.flatMap((e) =>
    e.body === null && e.bodyBlobKey === null && e.messagePk !== null ? [e.messagePk] : [],
  );
  const [r, ep, sk, msg] = await Promise.all([
    q.routes.execute(ids(batch.map((e) => e.routeId))),
    q.endpoints.execute(ids(batch.map((e) => e.routeSnapshot.endpoint_id))),
    q.secrets.execute(ids(batch.map((e) => e.routeSnapshot.kid))),
    messagePks.length === 0 ? Promise.resolve([]) : q.messages.execute(ids(messagePks)),
  ]);
  // Reading a body back from the blob store holds it twice for a moment (its bytes or text, and what
  // is built from it): collect first what earlier work left, such as the intake of this very message,
  // which the worker can claim while the intake is still letting go of its copies.
  if (msg.some((m) => m.textBlobKey || m.htmlBlobKey)) Bun.gc(true);
  const messages = new Map(
    await Promise.all(msg.map(async (m) => [m.id, await storedMessage(ctx, m)] as const)),
  );
  // A body read back from the blob store leaves its bytes as garbage: collected before the build.
  if (msg.some((m) => m.textBlobKey || m.htmlBlobKey)) Bun.gc(true);
  const builds = new Map<string, number>();
  for (const pk of messagePks) builds.set(pk, (builds.get(pk) ?? 0) + 1);
  return {
    builds,
    unsealed: q.unsealed,
    routes: new Map(r.map((x) => [x.id, x])),
    endpoints: new Map(ep.map((x) => [x.id, x])),
    secrets: new Map(sk.map((x) => [x.kid, x])),
    messages,
  };
}

/** How an attempt ended, for the worker's bookkeeping and tests. */
export type AttemptReport =
  | {
      kind: "attempted";
      status: "delivered" | "retry" | "dead";
      recorded: boolean;
      nextAttemptAt: Date | null;
    }
  | { kind: "dead_without_attempt"; lastError: string; recorded: boolean };

/**
 * Makes one attempt of `event` (claimed by `owner`) and records it. Never throws for delivery
 * problems; a database error propagates (the lease then expires and the event is retried).
 * `onSent` is called once the request is over and the circuit has counted it, just before the result
 * is handed to the recorder, with the length of the body sent (in characters for a text body, bytes
 * otherwise); it is not called for an event ended without a request.
 */
export async function attemptEvent(
  ctx: AppContext,
  event: ClaimedEvent,
  inputs: AttemptInputs,
  owner: string,
  recorder: AttemptRecorder,
  onSent?: (bodyLength: number) => void,
): Promise<AttemptReport> {
  const snap = event.routeSnapshot;
  const route = inputs.routes.get(event.routeId);
  const endpoint = inputs.endpoints.get(snap.endpoint_id);
  const secretRow = inputs.secrets.get(snap.kid);
  let blocker: DeadReason | null = null;
  if (!route || route.deletedAt) blocker = routeDeleted(event.routeId, "attempt");
  else if (!endpoint || endpoint.deletedAt) blocker = endpointDeleted(snap.endpoint_id);
  else if (!secretRow || secretRow.deletedAt) blocker = signingSecretDeleted(snap.kid);
  if (blocker || !endpoint || !secretRow)
    return killWithoutAttempt(ctx, event, owner, blocker ? formatDeadReason(blocker) : "");

  let body = event.body;
  // Bodies stored before the media type was kept are JSON.
  let contentType = event.bodyContentType ?? "application/json";
  let encoding: BodyEncoding = event.bodyEncoding ?? "utf8";
  // An erased message takes its events' bodies with it (resources/message-erasure.ts): nothing to send.
  if (event.messagePk === null)
    return killWithoutAttempt(ctx, event, owner, formatDeadReason(messageErased()));
  // What is signed and sent: the JSON text, or the bytes a base64 body stands for, or the bytes of a
  // body kept in the blob store (body-store.ts).
  let wire: string | Uint8Array;
  // A body this attempt built and put in the blob store: the record keeps its key instead of the text.
  let stored: BlobRef | null = null;
  // A stored body whose blob is gone is built again from the message (body-store.ts).
  const kept =
    body === null && event.bodyBlobKey !== null
      ? await readStoredBodyOrForget(ctx, { id: event.id, bodyBlobKey: event.bodyBlobKey }, owner)
      : null;
  if (body === null && event.bodyBlobKey !== null && kept === null) {
    ctx.logger.warn("the stored webhook body is missing from the blob store; building it again", {
      event_id: event.id,
      blob_key: event.bodyBlobKey,
    });
    // The batch loaded messages only for the events that build a body: this one is read now.
    await loadMessageInto(ctx, inputs, event.messagePk);
  }
  if (kept !== null) {
    wire = kept;
  } else {
    if (body === null) {
      const built = await buildFor(ctx, event, inputs);
      if (!built.ok) return killWithoutAttempt(ctx, event, owner, formatDeadReason(built.reason));
      ({ body, contentType, encoding } = built);
      wire = built.bytes ?? wireBody(body, encoding);
      // Loading and building a large body leaves several copies of it as garbage (the row as received,
      // its text, the pipeline's intermediate values): collect them before the request adds its own.
      if (typeof wire !== "string" && wire.byteLength >= COLLECT_FROM_CHARS) Bun.gc(true);
      if (keepsBodyInBlob(wire)) {
        // Only the bytes go on: the text is dropped before the request (body-store.ts).
        stored = await storeBody(ctx, wire);
        body = null;
      } else if (built.bytes) {
        body = Buffer.from(built.bytes).toString("utf8");
      }
    } else {
      wire = wireBody(body, encoding);
    }
  }
  const wireLength = typeof wire === "string" ? wire.length : wire.byteLength;
  const large = wireLength >= COLLECT_FROM_CHARS;

  const headers: Record<string, string> = {
    "Content-Type": contentType,
    "User-Agent": USER_AGENT,
    "X-Idempotency-Key": event.idempotencyKey,
  };
  // The secrets were sealed with SECRETS_KEY; opened with another key they fail. That is recorded as a
  // failed attempt naming the problem (retried on the schedule: restarting with the right key fixes it),
  // never left to a silent lease expiry.
  let custom: ReturnType<typeof endpointSecrets> = { headers: {}, secretNames: [] };
  let unreadable: string | null = null;
  try {
    custom = memo(opened(inputs).headers, endpoint.id, () =>
      endpointSecrets(unsealingCtx(ctx, inputs), endpoint),
    );
  } catch {
    unreadable = `secret_unreadable: the headers of endpoint ${endpoint.id} cannot be opened with this SECRETS_KEY`;
  }
  try {
    Object.assign(
      headers,
      signatureHeaders({
        secret: memo(opened(inputs).signing, secretRow.kid, () =>
          openSigningSecret(unsealingCtx(ctx, inputs), secretRow),
        ),
        kid: snap.kid,
        body: wire,
        timestampSec: Math.floor(ctx.clock.now().getTime() / 1000),
        idempotencyKey: event.idempotencyKey,
      }),
    );
  } catch {
    unreadable ??= `secret_unreadable: signing secret ${snap.kid} cannot be opened with this SECRETS_KEY`;
  }
  // Custom headers come last and may not override the service's own (docs/delivery.md).
  for (const [name, value] of Object.entries(custom.headers)) {
    if (!RESERVED_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }

  // What was sent, as captured: taken before the request, which may be sent from the blob store.
  const request = requestCapture(
    { url: endpoint.url, headers, body: wire },
    { secretHeaderNames: custom.secretNames },
  );
  const blobKey = stored?.key ?? (kept !== null ? event.bodyBlobKey : null);
  const sent = blobKey === null || unreadable ? wire : await sendable(ctx, blobKey, wire);
  // Sent from the store: this attempt has no more use for the bytes in hand.
  if (sent !== wire) wire = "";
  const result: DispatchResult = unreadable
    ? {
        status: 0,
        headers: {},
        bodyPreview: "",
        bodyTruncated: false,
        latencyMs: 0,
        networkError: unreadable,
      }
    : await sendWebhook({
        url: endpoint.url,
        headers,
        body: sent,
        timeoutMs: endpoint.timeoutS * 1000,
        allowPrivate: ctx.config.allowPrivateEndpoints,
      });
  const now = ctx.clock.now();
  const policy = route?.retryPolicy;
  const outcome = decideOutcome({
    result,
    attemptsBefore: event.attempts,
    budgetStart: event.budgetStart,
    schedule: policy ? policy.schedule_ms : ctx.config.retrySchedule,
    nowMs: now.getTime(),
    random: ctx.random,
  });
  metrics.attemptLatency.observe(result.latencyMs, { outcome: outcome.eventStatus });
  const response = responseCapture(result);
  // The circuit learns of the attempt BEFORE the event's lease is released: until then the event
  // counts as in flight, so no claim can see the event due again while its failure is not yet counted
  // (which would let one more attempt past the threshold). A secret that cannot be opened says
  // nothing about the endpoint: its circuit is left alone.
  if (!unreadable) {
    const kind = classifyOutcome({ status: result.status, networkError: result.networkError });
    await recordCircuitOutcome(
      ctx,
      endpoint,
      kind === "success" ? "success" : kind === "retry" ? "retryable" : "terminal",
    ).catch((err) =>
      ctx.logger.error("recording the endpoint circuit failed", {
        endpoint_id: endpoint.id,
        error: String(err),
      }),
    );
  }
  onSent?.(wireLength);
  const recorded = await recorder.record({
    event_id: event.id,
    attempt_id: newId("atm"),
    event_status: outcome.eventStatus,
    last_error: outcome.lastError,
    next_attempt_at: outcome.nextAttemptAt?.toISOString() ?? null,
    body,
    body_blob_key: stored?.key ?? null,
    body_blob_size: stored?.size ?? null,
    body_content_type: contentType,
    body_encoding: encoding,
    trigger: snap.replayed_at ? "replay" : "auto",
    attempt_status: outcome.attemptStatus,
    http_status: result.status,
    latency_ms: result.latencyMs,
    request_capture: request,
    response_capture: response,
    at: now.toISOString(),
    notification:
      outcome.eventStatus === "dead"
        ? eventDead(event, outcome.lastError ?? "", event.attempts + 1, now)
        : null,
  });
  if (!recorded) ctx.logger.warn("lease lost before the attempt was recorded", { event_id: event.id });
  // A body this attempt put in the blob store is referenced only if the record kept it: not when the
  // lease was lost, nor when the message was erased while the request was out. Deleted then, once
  // nothing references it (content-addressed: another event may hold the same bytes).
  if (stored) {
    await deleteUnreferencedBlobs(ctx, [stored.key]).catch((err: unknown) =>
      ctx.logger.warn("deleting an unreferenced webhook body failed", { error: String(err) }),
    );
  }
  // The request and the record statement made copies of their own; the next attempt should not pile on.
  if (large) Bun.gc(true);
  return { kind: "attempted", status: outcome.eventStatus, recorded, nextAttemptAt: outcome.nextAttemptAt };
}

/**
 * The body to send for one kept in the blob store under `key`: the store's file, which the request
 * streams, when the store gives one of the size of `wire` (the fs store); else `wire` itself. A request
 * made from bytes in hand copies them whole first, a second copy of a 49 MB body for as long as it is
 * sent. The signature was computed over `wire`, the bytes the blob holds (content-addressed).
 */
async function sendable(
  ctx: AppContext,
  key: string,
  wire: string | Uint8Array,
): Promise<string | Uint8Array | Blob> {
  if (typeof wire === "string") return wire;
  try {
    const blob = await ctx.blobs.read(key);
    return blob instanceof Blob && blob.size === wire.byteLength ? blob : wire;
  } catch {
    // The blob went away meanwhile (erasure of its message): the bytes in hand are sent.
    return wire;
  }
}

/** Reads one message as {@link loadAttemptInputs} does, into `inputs` (for one build). */
async function loadMessageInto(ctx: AppContext, inputs: AttemptInputs, pk: string): Promise<void> {
  if (inputs.messages.has(pk)) return;
  const [row] = await ctx.database.db.select(MESSAGE_COLUMNS).from(messages).where(eq(messages.id, pk));
  if (!row) return;
  inputs.messages.set(pk, await storedMessage(ctx, row));
  inputs.builds?.set(pk, (inputs.builds.get(pk) ?? 0) + 1);
}

/**
 * Builds the body of `event` from its message, and lets go of the message once the last event of the
 * batch that needs it has its body (a message with a 50 MB body is not kept through the requests).
 */
async function buildFor(ctx: AppContext, event: ClaimedEvent, inputs: AttemptInputs): Promise<BuildResult> {
  const pk = event.messagePk as string;
  const message = inputs.messages.get(pk);
  if (!message) return { ok: false, reason: messageMissing() };
  try {
    return await buildEventBody(ctx, event, orderedPipeline(event.routeSnapshot), message);
  } finally {
    const left = (inputs.builds?.get(pk) ?? 1) - 1;
    inputs.builds?.set(pk, left);
    if (left <= 0 && inputs.builds) inputs.messages.delete(pk);
  }
}

/**
 * Ends the event `dead` without an HTTP attempt (nothing to send, or nowhere to send it); its
 * `event.dead` notification is queued by the same statement.
 */
async function killWithoutAttempt(
  ctx: AppContext,
  event: ClaimedEvent,
  owner: string,
  lastError: string,
): Promise<AttemptReport> {
  const now = ctx.clock.now();
  const n = eventDead(event, lastError, event.attempts, now);
  const rows = await ctx.database.rows<{ id: string; notified: boolean }>(sql`
    with upd as (
      update events set status = 'dead', last_error = ${lastError}, next_attempt_at = null,
        lease_owner = null, lease_expires_at = null, updated_at = ${now.toISOString()}::timestamptz
      where id = ${event.id}::uuid and lease_owner = ${owner}
      returning id, project_id
    ), ntf as (
      ${notificationJobsInsert(sql`select ${n.job_id}::text, upd.project_id, ${JSON.stringify(n.body)}::jsonb from upd`)}
    )
    select id, exists (select 1 from ntf) as notified from upd`);
  if (rows[0]?.notified) await wakeForNotifications(ctx.database);
  return { kind: "dead_without_attempt", lastError, recorded: rows.length === 1 };
}

/** The `event.dead` notification (docs/delivery.md, "Notifications") of an event given up. */
function eventDead(event: ClaimedEvent, lastError: string, attempts: number, now: Date): PendingNotification {
  return pendingNotification({
    projectId: event.projectId,
    type: "event.dead",
    data: { event_id: event.id, route_id: event.routeId, last_error: lastError, attempts },
    now,
  });
}
