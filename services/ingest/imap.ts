/**
 * The IMAP intake source (docs/ingest.md, "IMAP mailboxes"): fetches mail from the mailboxes of every
 * project (resources/mailboxes.ts) and hands each message to its project's intake, envelope null,
 * source type `imap`.
 *
 * How it stays exactly-once:
 * - one poller per mailbox across all processes: a process holds a mailbox through a lease in its row
 *   (`lease_owner`, `lease_until`), renews it while it works, and releases it when it stops; a process
 *   that dies loses it when the lease runs out, and another process takes the mailbox over;
 * - each (mailbox, UIDVALIDITY, UID) taken in is recorded in `mailbox_uids` after its ingest, and a
 *   recorded UID is never fetched again. A crash between the ingest and the record makes the next
 *   poller ingest the same bytes again, which ingest deduplicates (no new message, no new event);
 * - `after_process` (seen, delete, move) runs only after the record, so a message leaves the folder only
 *   once it is safely stored. A message refused for good (too large, unparseable) is recorded with its
 *   refusal and left on the server untouched;
 * - `last_uid` (where the next sync starts) moves past a batch of UIDs only once every message of it is
 *   recorded and processed, and never past a batch cut short by a failure;
 * - a UIDVALIDITY change starts the folder afresh from `sync_from`; what was taken in before is
 *   deduplicated by its bytes.
 *
 * Speed: a sync is a pipeline (`MailboxPoller.#takeAll`): messages are streamed from the FETCH into
 * ingest, many at once, and the next batch is fetched while the previous one is stored, recorded and
 * processed, so ingest never waits for IMAP round trips or for the bookkeeping.
 *
 * Memory stays bounded whatever the size of a backfill: UIDs come from one SEARCH (numbers only),
 * their sizes and dates are looked up {@link LOOKAHEAD_BATCHES} batches ahead, messages are fetched
 * in batches of at most {@link BATCH_SIZE} messages and {@link BATCH_BYTES} bytes, and at most
 * {@link INGEST_CONCURRENCY} messages (and {@link BATCH_BYTES} bytes) are in hand at once.
 */
import { isIP } from "node:net";
import type { ConnectionOptions } from "node:tls";
import { and, between, eq, isNull, lt, or, sql } from "drizzle-orm";
import { ImapFlow, type SearchObject } from "imapflow";
import type { AppContext } from "../context.ts";
import { type MailboxState, mailboxes, mailboxUids } from "../db/schema/index.ts";
import { AppError } from "../lib/errors.ts";
import { randomToken } from "../lib/ids.ts";
import { resolveTarget } from "../lib/ssrf.ts";
import { openMailboxSecret } from "../resources/mailboxes.ts";
import { MAX_RAW_BYTES } from "./ingest.ts";
import type { Intake, IntakeSource, RunningSource } from "./intake.ts";

type Row = typeof mailboxes.$inferSelect;

/** Messages fetched per FETCH command. */
export const BATCH_SIZE = 500;
/** Batches whose UIDs are looked up (recorded ones, sizes, arrival times) at once, ahead of their fetch. */
export const LOOKAHEAD_BATCHES = 10;
/** Messages ingested at the same time, across batches (their commits share group commits). */
export const INGEST_CONCURRENCY = 64;
/**
 * Declared bytes fetched per FETCH command, and bytes of fetched messages being ingested at once (one
 * larger message is fetched and ingested alone).
 */
export const BATCH_BYTES = 16 * 1024 * 1024;
/**
 * A sync of at least this many UIDs (a backfill, a burst after downtime) is fetched into the database
 * first and processed from there ({@link MailboxPoller.#stageAll}); a smaller one is processed as it is
 * fetched.
 */
export const STAGE_FROM_UIDS = 500;
/** Messages larger than this are not staged: they are fetched when they are processed. */
export const STAGE_MAX_BYTES = 1024 * 1024;
/** Staged messages written per statement, at most (and at most {@link STAGE_STATEMENT_BYTES} bytes). */
const STAGE_STATEMENT_ROWS = 250;
const STAGE_STATEMENT_BYTES = 4 * 1024 * 1024;
/** Staging statements in flight at once while the FETCH goes on. */
const STAGE_STATEMENTS_IN_FLIGHT = 4;

/** Tunables of the IMAP source; the defaults are the production ones. */
export interface ImapSourceOptions {
  /** how often the database is read: mailboxes to take, leases to renew, "sync now" requests (2 s) */
  scanMs?: number;
  /** how long a lease lasts without renewal; another process takes the mailbox over after it (30 s) */
  leaseMs?: number;
  /** how often a server without IDLE is asked for new mail (5 s) */
  pollMs?: number;
  /** how often a server with IDLE is synced anyway, in case a notification is lost (60 s) */
  idleSyncMs?: number;
  /** reconnect delays: doubled from `min` after each failure up to `max` (1 s to 60 s) */
  backoffMs?: { min: number; max: number };
  /** TLS options added to every connection (a private CA, for example) */
  tls?: ConnectionOptions;
  /** this process's lease owner name (random by default) */
  owner?: string;
  /** UIDs per batch: looked up, fetched, recorded and moved past together ({@link BATCH_SIZE}) */
  batchSize?: number;
  /** {@link BATCH_BYTES} */
  batchBytes?: number;
  /** messages ingested at once ({@link INGEST_CONCURRENCY}) */
  concurrency?: number;
  /** {@link STAGE_FROM_UIDS} */
  stageFrom?: number;
}

/** What one taken UID is recorded with. */
interface Taken {
  uid: number;
  messagePk: string | null;
  refusal: string | null;
  duplicate: boolean;
}

/** One batch of a sync's UIDs on its way through the pipeline (`MailboxPoller.#takeAll`). */
interface Batch {
  /**
   * its UIDs to take in (not recorded yet, within the sync's start), with their declared sizes, and
   * those staged already (their bytes are read from `mailbox_uids`, not fetched)
   */
  todo: { uid: number; size: number; staged: boolean }[];
  /** its highest UID: where `last_uid` moves once the batch is recorded and processed */
  last: number;
  /** UIDs of the sync after this batch (`backfill_remaining` once it is passed) */
  remaining: number;
  /** the outcome of each UID taken in (stored, or refused for good), recorded together */
  taken: Taken[];
  /** its ingests, started as its messages arrive */
  ingests: Promise<void>[];
  /** UIDs stored (now or by an earlier poller): what `after_process` applies to */
  processed: number[];
  /** messages stored new, counted in `messages_ingested` */
  stored: number;
  /** every message of the batch was taken in (false when a failure or a stop cut it short) */
  whole: boolean;
  recorded: boolean;
}

/** The IMAP source as `serve` runs it. */
export const imapSource = createImapSource();

/** An IMAP source with its own options (tests shorten the intervals). */
export function createImapSource(options: ImapSourceOptions = {}): IntakeSource & { readonly name: "imap" } {
  return {
    name: "imap",
    async start(ctx, intake): Promise<RunningSource> {
      const supervisor = new Supervisor(ctx, intake, options);
      supervisor.start();
      return { stop: () => supervisor.stop() };
    },
  };
}

/** Thrown inside a poller when its lease was lost (another process holds it, or the mailbox is gone). */
class LeaseLost extends Error {}

/** Takes mailboxes through their lease, runs one poller for each, and stops those it no longer holds. */
class Supervisor {
  readonly owner: string;
  readonly #pollers = new Map<string, MailboxPoller>();
  readonly #scanMs: number;
  readonly #leaseMs: number;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #tick: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(
    readonly ctx: AppContext,
    readonly intake: Intake,
    readonly options: ImapSourceOptions,
  ) {
    this.owner = options.owner ?? `imap-${process.pid}-${randomToken(6)}`;
    this.#scanMs = options.scanMs ?? 2000;
    this.#leaseMs = options.leaseMs ?? 30_000;
  }

  start(): void {
    this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#tick = this.#scan()
        .catch((err) => this.ctx.logger.warn("imap: mailbox scan failed", { error: String(err) }))
        .finally(() => this.#schedule(this.#scanMs));
    }, ms);
  }

  /** Renews (or takes) the lease of every enabled mailbox free or ours, and reconciles the pollers. */
  async #scan(): Promise<void> {
    const now = this.ctx.clock.now();
    const rows = await this.ctx.database.db
      .update(mailboxes)
      .set({ leaseOwner: this.owner, leaseUntil: new Date(now.getTime() + this.#leaseMs) })
      .where(
        and(
          eq(mailboxes.enabled, true),
          or(
            isNull(mailboxes.leaseOwner),
            eq(mailboxes.leaseOwner, this.owner),
            lt(mailboxes.leaseUntil, now),
          ),
        ),
      )
      .returning();
    if (this.#stopped) return;
    const held = new Map(rows.map((r) => [r.id, r]));
    for (const [id, poller] of this.#pollers) {
      const row = held.get(id);
      if (!row || row.updatedAt.getTime() !== poller.row.updatedAt.getTime()) {
        this.#pollers.delete(id);
        await poller.stop();
      }
    }
    for (const row of held.values()) {
      const running = this.#pollers.get(row.id);
      if (running && !running.finished) {
        running.noticeSyncRequest(row.syncRequestedAt);
        continue;
      }
      const poller = new MailboxPoller(this, row);
      this.#pollers.set(row.id, poller);
      poller.start();
    }
  }

  /** Extends the lease of one mailbox; false when it is no longer ours (taken over, disabled, deleted). */
  async renew(id: string): Promise<boolean> {
    const now = this.ctx.clock.now();
    const rows = await this.ctx.database.db
      .update(mailboxes)
      .set({ leaseUntil: new Date(now.getTime() + this.#leaseMs) })
      .where(and(eq(mailboxes.id, id), eq(mailboxes.leaseOwner, this.owner), eq(mailboxes.enabled, true)))
      .returning({ id: mailboxes.id });
    return rows.length > 0;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#tick;
    const pollers = [...this.#pollers.values()];
    this.#pollers.clear();
    await Promise.all(pollers.map((p) => p.stop()));
    // Hand the mailboxes over at once instead of when the leases run out.
    await this.ctx.database.db
      .update(mailboxes)
      .set({ leaseOwner: null, leaseUntil: null })
      .where(eq(mailboxes.leaseOwner, this.owner))
      .catch(() => {});
  }
}

/** One mailbox's connection: connect, sync, wait for news, sync again; reconnect with backoff. */
class MailboxPoller {
  #stopped = false;
  #client: ImapFlow | null = null;
  #wake: (() => void) | null = null;
  #pendingWake = false;
  #run: Promise<void> = Promise.resolve();
  #state: MailboxState | null = null;
  #lastError: string | null = null;
  #syncStartedAt = 0;
  #uidvalidity: number | null;
  #lastUid: number | null;
  #backfilling: boolean;
  /** set when the loop has ended on its own (its lease was lost) */
  finished = false;

  constructor(
    readonly sup: Supervisor,
    readonly row: Row,
  ) {
    this.#uidvalidity = row.uidvalidity;
    this.#lastUid = row.lastUid;
    this.#backfilling = row.backfillRemaining !== null;
  }

  get #ctx(): AppContext {
    return this.sup.ctx;
  }

  start(): void {
    this.#run = this.#loop().finally(() => {
      this.finished = true;
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wakeUp();
    // A connection still being opened (a slow server, a login refused after a delay) is cut at once;
    // an open one is closed by the loop after the messages in hand are stored.
    const client = this.#client;
    if (client && !client.authenticated) client.close();
    await this.#run;
  }

  /** A "sync now" later than the start of the last sync wakes the poller. */
  noticeSyncRequest(at: Date | null): void {
    if (at && at.getTime() > this.#syncStartedAt) this.#wakeUp();
  }

  #wakeUp(): void {
    this.#pendingWake = true;
    this.#wake?.();
  }

  async #loop(): Promise<void> {
    const { min, max } = this.sup.options.backoffMs ?? { min: 1000, max: 60_000 };
    let delay = min;
    while (!this.#stopped) {
      try {
        // While reconnecting after a failure the mailbox stays in "error" (with its last error).
        if (this.#state !== "error") await this.#setState("connecting");
        await this.#connected(() => {
          delay = min;
        });
      } catch (err) {
        if (err instanceof LeaseLost) return;
        if (this.#stopped) break;
        await this.#setState("error", describe(err)).catch(() => {});
        this.#ctx.logger.warn("imap: mailbox failed", { mailbox: this.row.id, error: describe(err) });
      } finally {
        const client = this.#client;
        this.#client = null;
        if (client) await closeClient(client);
      }
      if (this.#stopped) break;
      await this.#sleep(delay);
      delay = Math.min(delay * 2, max);
    }
  }

  /** Waits `ms` or until woken (new mail, a sync request, stop). */
  async #sleep(ms: number): Promise<void> {
    if (this.#pendingWake) {
      this.#pendingWake = false;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
    this.#wake = null;
    this.#pendingWake = false;
  }

  async #connect(): Promise<ImapFlow> {
    const row = this.row;
    const target = await resolveTarget(row.host, { allowPrivate: this.#ctx.config.allowPrivateEndpoints });
    if (!target.ok) throw new Error(`cannot connect to ${row.host}: ${target.networkError}`);
    const secret = openMailboxSecret(this.#ctx, row);
    const servername = isIP(row.host) === 0 ? row.host : undefined;
    const client = new ImapFlow({
      // The address judged by the guard is the one dialled, so a DNS change cannot redirect us.
      host: target.address.address,
      port: row.port,
      secure: row.tls === "implicit",
      doSTARTTLS: row.tls === "starttls" ? true : row.tls === "none" ? false : undefined,
      ...(servername ? { servername } : {}),
      tls: { ...(servername ? { servername } : {}), ...this.sup.options.tls },
      auth:
        secret.access_token !== undefined
          ? { user: row.authUser, accessToken: secret.access_token }
          : { user: row.authUser, pass: secret.password ?? "" },
      logger: false,
      autoIdleDelay: 500,
      maxIdleTime: 4 * 60 * 1000,
      connectionTimeout: 30_000,
      maxLiteralSize: MAX_RAW_BYTES + 1024 * 1024,
      maxResponseSize: MAX_RAW_BYTES + 2 * 1024 * 1024,
    });
    client.on("error", (err: unknown) =>
      this.#ctx.logger.debug?.("imap: connection error", { mailbox: row.id, error: describe(err) }),
    );
    client.on("exists", () => this.#wakeUp());
    client.on("close", () => this.#wakeUp());
    this.#client = client;
    await client.connect();
    return client;
  }

  /** One connection's life: open the folder, sync, then wait for news and sync again until it closes. */
  async #connected(onHealthy: () => void): Promise<void> {
    const client = await this.#connect();
    const readOnly = this.row.afterProcess === "none";
    await client.mailboxOpen(this.row.folder, { readOnly });
    const idle = client.capabilities.has("IDLE");
    const waitMs = idle ? (this.sup.options.idleSyncMs ?? 60_000) : (this.sup.options.pollMs ?? 5000);
    while (!this.#stopped) {
      if (!client.usable) throw new Error("the server closed the connection");
      await this.#sync(client);
      onHealthy();
      await this.#setState("idle");
      await this.#sleep(waitMs);
    }
  }

  async #sync(client: ImapFlow): Promise<void> {
    if (!(await this.sup.renew(this.row.id))) throw new LeaseLost();
    this.#syncStartedAt = this.#ctx.clock.now().getTime();
    const box = client.mailbox;
    if (!box) throw new Error("the folder is not open");
    const uidvalidity = Number(box.uidValidity);
    if (this.#uidvalidity !== uidvalidity) {
      // First sync of the folder, or its UIDs were renumbered: start afresh from sync_from.
      this.#uidvalidity = uidvalidity;
      this.#lastUid = 0;
      await this.#save({ uidvalidity, lastUid: 0, backfillRemaining: null });
    }
    const lastUid = this.#lastUid ?? 0;
    // Staged messages no sync will reach are processed while the server searches (a failure of either
    // ends the sync).
    const leftovers = this.#processLeftovers(uidvalidity, lastUid).then(
      () => null,
      (err: unknown) => ({ err }),
    );
    // A fresh folder is backfilled: messages are taken from sync_from on, by their arrival time
    // (INTERNALDATE). A backfill cut short (a crash, a stop) goes on with the same rule.
    const fresh = lastUid === 0;
    const backfilling = fresh || this.#backfilling;
    const threshold = this.row.syncFrom;
    const found = await (fresh
      ? searchUids(client, { since: new Date(threshold.getTime() - 24 * 3600 * 1000) })
      : searchUids(client, { uid: `${lastUid + 1}:*` })
    ).then(
      (uids) => ({ uids }),
      (err: unknown) => ({ err }),
    );
    const failed = (await leftovers) ?? ("err" in found ? found : null);
    if (failed) throw failed.err;
    const uids = ("uids" in found ? found.uids : []).filter((u) => u > lastUid).sort((a, b) => a - b);
    if (uids.length === 0) {
      await this.#save({ lastSyncAt: this.#ctx.clock.now(), backfillRemaining: null });
      return;
    }
    await this.#setState("syncing");
    this.#backfilling = backfilling;
    const staged = uids.length >= (this.sup.options.stageFrom ?? STAGE_FROM_UIDS);
    if (staged) await this.#stageAll(client, uidvalidity, uids, backfilling ? threshold : null);
    await this.#takeAll(client, uidvalidity, uids, backfilling ? threshold : null, staged);
    if (!this.#stopped) this.#backfilling = false;
  }

  /**
   * The first pass of a large sync: every message of it not recorded yet (and not over
   * {@link STAGE_MAX_BYTES}) is fetched, one FETCH per window of UIDs, and written, bytes and all, into
   * `mailbox_uids` (staged: `raw` set), many rows per statement, while the FETCH goes on.
   * The folder is thereby taken in as fast as the server sends it; {@link #takeAll} then processes the
   * staged messages from the database (and fetches the few it could not stage: those over
   * {@link STAGE_MAX_BYTES}, and any that arrive meanwhile).
   *
   * Nothing here is visible to a user but the counts: `messages_pending` rises with each statement (in
   * it, so the count and the rows cannot disagree) and `backfill_remaining` falls with each window.
   * A staged message is already exactly-once: its UID is recorded, so no later sync fetches it again, and
   * whichever poller holds the mailbox next processes it. `after_process` and `last_uid` wait for the
   * processing, as for any message. Memory stays bounded: imapflow hands the FETCH over one message
   * at a time (of at most {@link STAGE_MAX_BYTES}), and at most {@link STAGE_STATEMENTS_IN_FLIGHT}
   * statements of at most {@link STAGE_STATEMENT_BYTES} are on their way.
   */
  async #stageAll(
    client: ImapFlow,
    uidvalidity: number,
    uids: number[],
    threshold: Date | null,
  ): Promise<void> {
    const window = (this.sup.options.batchSize ?? BATCH_SIZE) * LOOKAHEAD_BATCHES;
    const writes = new Set<Promise<void>>();
    let failed: unknown = null;
    let rows: { uid: number; raw: Uint8Array }[] = [];
    let rowBytes = 0;
    const flush = async (): Promise<void> => {
      if (rows.length === 0) return;
      const batch = rows;
      rows = [];
      rowBytes = 0;
      while (writes.size >= STAGE_STATEMENTS_IN_FLIGHT) await Promise.race(writes);
      const write: Promise<void> = this.#stage(uidvalidity, batch)
        .catch((err: unknown) => {
          failed ??= err;
        })
        .finally(() => writes.delete(write));
      writes.add(write);
    };
    // What the server can tell without sending a message: which are too large to stage (LARGER), and
    // in a backfill, on a server with WITHIN (RFC 5032, Dovecot), which arrived well after the start
    // (YOUNGER, in seconds; a minute's margin). Only the others' arrival times are fetched to be
    // compared with the start, so the FETCH of the bytes is the plain one a bare client would send.
    // (where the RSS stands before this sync's garbage: what later checks compare with)
    collectGarbage();
    const large = new Set(await searchUids(client, { larger: STAGE_MAX_BYTES }));
    const certain =
      threshold &&
      client.capabilities.has("WITHIN") &&
      this.#ctx.clock.now().getTime() - threshold.getTime() > 120_000
        ? new Set(await searchUids(client, { since: new Date(threshold.getTime() + 60_000) }))
        : null;
    try {
      for (let w = 0; w < uids.length && failed === null && !this.#stopped; w += window) {
        if (w > 0) {
          if (!(await this.sup.renew(this.row.id))) throw new LeaseLost();
          collectGarbage();
        }
        const slice = uids.slice(w, w + window);
        const known = new Set((await this.#recordedIn(uidvalidity, slice)).map((r) => r.uid));
        const pending = slice.filter((u) => !known.has(u) && !large.has(u));
        let wanted = pending;
        if (threshold) {
          const unsure = certain ? pending.filter((u) => !certain.has(u)) : pending;
          const before = new Set<number>();
          if (unsure.length > 0) {
            for await (const msg of client.fetch(
              uidSet(unsure),
              { uid: true, internalDate: true },
              { uid: true },
            )) {
              const date = msg.internalDate ? new Date(msg.internalDate) : null;
              if (date && date.getTime() < threshold.getTime()) before.add(msg.uid);
            }
          }
          if (before.size > 0) wanted = pending.filter((u) => !before.has(u));
        }
        // One FETCH of the bytes for the window. imapflow hands the messages over one at a time and
        // reads the next only once this one is taken.
        if (wanted.length > 0) {
          for await (const msg of client.fetch(uidSet(wanted), { uid: true, source: true }, { uid: true })) {
            // The rest of the FETCH is read to its end (a command cannot be left half-read).
            if (failed !== null || this.#stopped || !msg.source) continue;
            rows.push({ uid: msg.uid, raw: msg.source });
            rowBytes += msg.source.byteLength;
            if (rows.length >= STAGE_STATEMENT_ROWS || rowBytes >= STAGE_STATEMENT_BYTES) {
              await flush();
              // Garbage piles up fastest here, and each full collection costs 40 to 80 ms of the
              // thread the FETCH needs: a larger step than between batches, and only from the second
              // window on (the runtime's own collector copes with one window's worth).
              if (w > 0) collectGarbage(STAGE_GC_RSS_STEP);
            }
          }
        }
        await flush();
        // 0 at the end, not null: the sync is not over until its messages are processed
        await this.#save({ backfillRemaining: uids.length - w - slice.length });
      }
    } finally {
      await Promise.all(writes);
    }
    if (failed !== null) throw failed;
  }

  /**
   * The rows of `uids` (ascending) recorded already, staged (`staged`: the bytes' length) or done: read
   * by their range, which the primary key serves directly, rather than by a list of thousands of
   * parameters (a UID in the range but not in `uids` may come back, and is not one of the caller's).
   */
  async #recordedIn(
    uidvalidity: number,
    uids: number[],
  ): Promise<{ uid: number; messagePk: string | null; staged: number | null }[]> {
    return await this.#ctx.database.db
      .select({
        uid: mailboxUids.uid,
        messagePk: mailboxUids.messagePk,
        staged: sql<number | null>`octet_length(${mailboxUids.raw})`,
      })
      .from(mailboxUids)
      .where(
        and(
          eq(mailboxUids.mailboxId, this.row.id),
          eq(mailboxUids.uidvalidity, uidvalidity),
          between(mailboxUids.uid, uids[0] ?? 0, uids[uids.length - 1] ?? 0),
        ),
      );
  }

  /**
   * Writes fetched messages as staged rows, and counts them in `messages_pending`, in one statement.
   * The rows travel as two array parameters (UIDs, and the bytes in base64), not as parameters per row:
   * a statement of 250 rows built from per-row fragments cost more of the intake's one thread than the
   * FETCH it keeps up with.
   */
  async #stage(uidvalidity: number, items: { uid: number; raw: Uint8Array }[]): Promise<void> {
    const uids = `{${items.map((t) => t.uid).join(",")}}`;
    // base64 needs no quoting in an array literal, and is two thirds of the size of hex
    const raws = `{${items
      .map((t) => Buffer.from(t.raw.buffer, t.raw.byteOffset, t.raw.byteLength).toString("base64"))
      .join(",")}}`;
    await this.#ctx.database.rows(sql`
      with staged as (
        insert into mailbox_uids (mailbox_id, uidvalidity, uid, raw, created_at)
        select ${this.row.id}::text, ${uidvalidity}::int8, u, decode(r, 'base64'),
          ${this.#ctx.clock.now().toISOString()}::timestamptz
        from unnest(${uids}::int8[], ${raws}::text[]) as t(u, r)
        on conflict do nothing
        returning 1
      )
      update mailboxes set messages_pending = messages_pending + (select count(*) from staged)::int
      where id = ${this.row.id}`);
  }

  /**
   * Staged messages that no sync of the current folder will reach: those of an earlier UIDVALIDITY, and
   * those at or below `last_uid` (their UIDs left the folder before they were processed). They were
   * taken in all the same, so they are processed here; `after_process` has nothing to apply to.
   */
  async #processLeftovers(uidvalidity: number, lastUid: number): Promise<void> {
    // at most 16 at a time (16 MiB: a staged message has at most 1 MiB); they are rare
    const concurrency = Math.min(16, this.sup.options.concurrency ?? INGEST_CONCURRENCY);
    for (;;) {
      if (this.#stopped) return;
      const rows = await this.#ctx.database.rows<{ uidvalidity: number; uid: number; raw: Uint8Array }>(sql`
        select uidvalidity::int8 as uidvalidity, uid::int8 as uid, raw from mailbox_uids
        where mailbox_id = ${this.row.id} and raw is not null
          and (uidvalidity <> ${uidvalidity} or uid <= ${lastUid})
        order by uidvalidity, uid limit ${concurrency}`);
      if (rows.length === 0) return;
      const taken: (Taken & { uidvalidity: number })[] = [];
      let failure: unknown = null;
      await Promise.all(
        rows.map(async (r) => {
          const outcome = await this.sup.intake.acceptForProject(this.row.projectId, r.raw, null);
          const t = this.#outcome(Number(r.uid), outcome);
          if ("failure" in t) failure ??= t.failure;
          else taken.push({ ...t, uidvalidity: Number(r.uidvalidity) });
        }),
      );
      let stored = 0;
      for (const v of new Set(taken.map((t) => t.uidvalidity))) {
        const items = taken.filter((t) => t.uidvalidity === v);
        const fresh = await this.#record(v, items);
        stored += items.filter((t) => fresh.has(t.uid) && t.messagePk !== null && !t.duplicate).length;
      }
      if (stored > 0) await this.#save({}, stored);
      if (failure !== null) throw failure;
    }
  }

  /** What an ingest's outcome records for its UID, or the failure that leaves it for a later sync. */
  #outcome(
    uid: number,
    outcome: Awaited<ReturnType<Intake["acceptForProject"]>>,
  ): Taken | { failure: unknown } {
    const refused = outcome.failure;
    if (refused) {
      const code = refused.error instanceof AppError ? refused.error.code : null;
      // The message waits (on the server, or staged): a full quota or an outage is retried, not given up on.
      if (refused.transient || code === "ingest.quota_exceeded") return { failure: refused.error };
      return { uid, messagePk: null, refusal: code ?? "refused", duplicate: false };
    }
    const result = outcome.accepted[0];
    return {
      uid,
      messagePk: result?.messagePk ?? null,
      refusal: result ? null : "refused",
      duplicate: result?.duplicate ?? false,
    };
  }

  /**
   * Takes in the UIDs of one sync (ascending) as a pipeline, so that ingest never waits for IMAP or
   * for the bookkeeping:
   * - UIDs are looked up {@link LOOKAHEAD_BATCHES} batches at a time: which are recorded already (one
   *   query), and the others' sizes and arrival times (one FETCH; in a fresh folder those that arrived
   *   before `threshold` are skipped, and those over 50 MiB are refused without being fetched);
   * - each batch's bytes are then streamed into ingest, up to {@link INGEST_CONCURRENCY} messages (and
   *   {@link BATCH_BYTES} bytes) at a time across batch boundaries: the next batch is fetched while the
   *   previous one is still being stored, and the concurrent ingests share group commits
   *   (ingest/group-commit.ts);
   * - a batch whose ingests are all done is recorded in one statement; `after_process` then runs on
   *   what it stored (between two FETCH commands, as IMAP commands cannot interleave), and only after
   *   that is `last_uid` moved past it, batch after batch in order.
   *
   * So a crash at any point leaves `last_uid` at the end of a batch whose messages are all recorded and
   * processed; what follows it is fetched again, recorded UIDs are skipped, and re-ingested bytes are
   * deduplicated. A transient failure (the database down, a full quota) or a stop ends the intake of new
   * messages: those in hand are stored and recorded, and `last_uid` stays before the first batch that
   * was not taken in whole.
   */
  async #takeAll(
    client: ImapFlow,
    uidvalidity: number,
    uids: number[],
    threshold: Date | null,
    staged: boolean,
  ): Promise<void> {
    const opts = this.sup.options;
    const batchSize = opts.batchSize ?? BATCH_SIZE;
    const maxBytes = opts.batchBytes ?? BATCH_BYTES;
    const concurrency = opts.concurrency ?? INGEST_CONCURRENCY;
    const inflight = new Set<Promise<void>>();
    let inflightBytes = 0;
    /** the first transient ingest failure: no new message is taken in after it */
    let failure: unknown = null;
    /** the first failure to record or save progress: the sync ends with it */
    let bookkeeping: unknown = null;
    /** batches handed to ingest, oldest first, until `last_uid` has moved past them */
    const open: Batch[] = [];
    /** each batch is recorded after the one before it, so progress is saved in order */
    let recorder: Promise<void> = Promise.resolve();
    /** progress writes, in order */
    let saver: Promise<void> = Promise.resolve();
    /** whether `last_uid` still follows the batches: false from the first batch not taken in whole */
    let advancing = true;
    /** the lease renewal of the previous batch (the lease is checked one batch late, never waited on) */
    let renewal: Promise<unknown> = Promise.resolve(null);

    const takeOne = async (batch: Batch, uid: number, source: Uint8Array): Promise<void> => {
      const outcome = await this.sup.intake.acceptForProject(this.row.projectId, source, null);
      const taken = this.#outcome(uid, outcome);
      if ("failure" in taken) {
        batch.whole = false;
        failure ??= taken.failure;
        return;
      }
      batch.taken.push(taken);
    };

    // What a batch took in is recorded once its ingests are done (a crash before that only makes the
    // next poller ingest the same bytes again, which is deduplicated).
    const record = async (batch: Batch): Promise<void> => {
      await Promise.all(batch.ingests);
      if (bookkeeping !== null) return;
      try {
        const fresh = await this.#record(uidvalidity, batch.taken);
        for (const t of batch.taken) {
          if (t.messagePk === null) continue;
          batch.processed.push(t.uid);
          if (fresh.has(t.uid) && !t.duplicate) batch.stored++;
        }
        batch.recorded = true;
      } catch (err) {
        bookkeeping ??= err;
      }
    };

    // The batches recorded so far (in order): after_process on what they stored, then last_uid, the
    // progress and the count, written in the background.
    const settle = async (): Promise<void> => {
      const ready: Batch[] = [];
      while (open[0]?.recorded) ready.push(open.shift() as Batch);
      if (ready.length === 0) return;
      await this.#afterProcess(
        client,
        ready.flatMap((b) => b.processed).sort((a, b) => a - b),
      );
      let stored = 0;
      let through: Batch | null = null;
      for (const b of ready) {
        stored += b.stored;
        if (advancing && b.whole) through = b;
        else advancing = false;
      }
      const fields: Partial<Row> = through
        ? {
            lastUid: through.last,
            // after a first pass nothing is left to fetch: 0 until the sync ends (and `messages_pending`
            // counts down), so the count never rises and a restart still knows a backfill is running
            backfillRemaining: through.remaining > 0 ? (staged ? 0 : through.remaining) : null,
            ...(through.remaining === 0 ? { lastSyncAt: this.#ctx.clock.now() } : {}),
          }
        : {};
      if (through) this.#lastUid = through.last;
      if (!through && stored === 0) return;
      saver = saver.then(() =>
        this.#save(fields, stored).catch((err: unknown) => {
          bookkeeping ??= err;
        }),
      );
    };

    // Which UIDs of a window are to be fetched, batch by batch.
    const prepare = async (window: number[], offset: number): Promise<Batch[]> => {
      const recorded = await this.#recordedIn(uidvalidity, window);
      // Staged UIDs are taken in from their rows; the others recorded are done.
      const staged = new Map<number, number>();
      const done = new Map<number, string | null>();
      for (const r of recorded) {
        if (r.staged === null) done.set(r.uid, r.messagePk);
        else staged.set(r.uid, Number(r.staged));
      }
      const pending = window.filter((u) => !done.has(u) && !staged.has(u));
      const wanted = new Map<number, number>();
      const tooLarge = new Set<number>();
      if (pending.length > 0) {
        for await (const msg of client.fetch(
          uidSet(pending),
          { uid: true, size: true, internalDate: true },
          { uid: true },
        )) {
          const date =
            msg.internalDate instanceof Date
              ? msg.internalDate
              : msg.internalDate
                ? new Date(msg.internalDate)
                : null;
          if (threshold && date && date.getTime() < threshold.getTime()) continue;
          if ((msg.size ?? 0) > MAX_RAW_BYTES) tooLarge.add(msg.uid);
          else wanted.set(msg.uid, msg.size ?? 0);
        }
      }
      const batches: Batch[] = [];
      for (let i = 0; i < window.length; i += batchSize) {
        const slice = window.slice(i, i + batchSize);
        batches.push({
          last: slice[slice.length - 1] as number,
          remaining: uids.length - offset - i - slice.length,
          todo: slice
            .filter((u) => wanted.has(u) || staged.has(u))
            .map((uid) =>
              staged.has(uid)
                ? { uid, size: staged.get(uid) ?? 0, staged: true }
                : { uid, size: wanted.get(uid) ?? 0, staged: false },
            ),
          // what after_process applies to: every UID stored (now or by an earlier poller)
          processed: slice.filter((u) => done.get(u) != null),
          taken: slice
            .filter((u) => tooLarge.has(u))
            .map((uid) => ({ uid, messagePk: null, refusal: "ingest.too_large", duplicate: false })),
          ingests: [],
          stored: 0,
          whole: true,
          recorded: false,
        });
      }
      return batches;
    };

    // One message into ingest, once there is room for it: by count, and by bytes in hand (a larger
    // message goes alone). Its source (the FETCH, the staged rows) waits meanwhile.
    const start = async (batch: Batch, uid: number, source: Uint8Array, size: number): Promise<void> => {
      while (inflight.size >= concurrency || (inflight.size > 0 && inflightBytes + size > maxBytes)) {
        await Promise.race(inflight);
      }
      const task: Promise<void> = takeOne(batch, uid, source)
        .catch((err: unknown) => {
          batch.whole = false;
          failure ??= err;
        })
        .finally(() => {
          inflight.delete(task);
          inflightBytes -= size;
        });
      inflight.add(task);
      inflightBytes += size;
      batch.ingests.push(task);
    };

    // A batch's bytes: the staged ones read from their rows, the others fetched; in reads and FETCH
    // commands of at most maxBytes (declared) bytes each, one larger message alone.
    const feed = async (batch: Batch): Promise<void> => {
      for (const fromRows of [true, false]) {
        const todo = batch.todo.filter((t) => t.staged === fromRows);
        for (let i = 0; i < todo.length; ) {
          const group: number[] = [];
          const sizes = new Map<number, number>();
          let bytes = 0;
          while (i < todo.length && (group.length === 0 || bytes + (todo[i]?.size ?? 0) <= maxBytes)) {
            const item = todo[i++] as { uid: number; size: number };
            group.push(item.uid);
            sizes.set(item.uid, item.size);
            bytes += item.size;
          }
          if (failure !== null || this.#stopped) {
            batch.whole = false;
            return;
          }
          if (fromRows) {
            const rows = await this.#ctx.database.rows<{ uid: number; raw: Uint8Array | null }>(sql`
              select uid::int8 as uid, raw from mailbox_uids
              where mailbox_id = ${this.row.id} and uidvalidity = ${uidvalidity}
                and uid = any(${`{${group.join(",")}}`}::int8[])`);
            for (const raw of rows) {
              const row = { uid: Number(raw.uid), raw: raw.raw };
              if (failure !== null || this.#stopped) {
                batch.whole = false;
                break;
              }
              // null: processed meanwhile (by a poller that lost its lease to us); recorded as such
              if (row.raw) await start(batch, row.uid, row.raw, sizes.get(row.uid) ?? row.raw.byteLength);
            }
            continue;
          }
          for await (const msg of client.fetch(uidSet(group), { uid: true, source: true }, { uid: true })) {
            // The rest of the FETCH is read to its end (a command cannot be left half-read).
            if (failure !== null || this.#stopped) {
              batch.whole = false;
              continue;
            }
            if (!msg.source) continue;
            await start(batch, msg.uid, msg.source, sizes.get(msg.uid) ?? msg.source.byteLength);
          }
        }
      }
    };

    const window = batchSize * LOOKAHEAD_BATCHES;
    let thrown = false;
    try {
      outer: for (let w = 0; w < uids.length; w += window) {
        const batches = await prepare(uids.slice(w, w + window), w);
        for (const batch of batches) {
          if (failure !== null || bookkeeping !== null || this.#stopped) break outer;
          collectGarbage();
          if (w > 0 || batch !== batches[0]) {
            const lost = await renewal;
            if (lost) throw lost;
            renewal = this.sup.renew(this.row.id).then(
              (held) => (held ? null : new LeaseLost()),
              (err: unknown) => err,
            );
          }
          await settle();
          open.push(batch);
          try {
            await feed(batch);
          } finally {
            recorder = recorder.then(() => record(batch));
          }
        }
      }
    } catch (err) {
      thrown = true;
      throw err;
    } finally {
      // Whatever ends the sync, the messages in hand are stored and recorded before it returns.
      await recorder;
      await renewal;
      if (thrown) {
        // The connection may be gone: only the counts are kept; after_process and last_uid wait for
        // the next sync, which finds these UIDs recorded.
        const stored = open.filter((b) => b.recorded).reduce((n, b) => n + b.stored, 0);
        if (stored > 0) saver = saver.then(() => this.#save({}, stored).catch(() => {}));
      }
      await saver;
    }
    if (bookkeeping === null) await settle();
    await saver;
    if (bookkeeping !== null) throw bookkeeping;
    if (failure !== null) throw failure;
    if (this.#stopped) throw new LeaseLost();
  }

  /**
   * Records UIDs as taken in (a staged one: its bytes are dropped and `messages_pending` counts it no
   * more, in the same statement); returns those not recorded as done before (another poller may have
   * been first).
   */
  async #record(
    uidvalidity: number,
    items: { uid: number; messagePk: string | null; refusal: string | null }[],
  ): Promise<Set<number>> {
    if (items.length === 0) return new Set();
    // The rows travel as array parameters (see #stage). `xmax` is set on a row this statement updated
    // (a staged one) and 0 on one it inserted.
    const uids = `{${items.map((t) => t.uid).join(",")}}`;
    const rows = await this.#ctx.database.rows<{ uid: number }>(sql`
      with recorded as (
        insert into mailbox_uids (mailbox_id, uidvalidity, uid, message_pk, refusal, created_at)
        select ${this.row.id}::text, ${uidvalidity}::int8, u, m, r, ${this.#ctx.clock.now().toISOString()}::timestamptz
        from unnest(${uids}::int8[], ${textArray(items.map((t) => t.messagePk))}::text[],
                    ${textArray(items.map((t) => t.refusal))}::text[]) as t(u, m, r)
        on conflict (mailbox_id, uidvalidity, uid) do update
          set message_pk = excluded.message_pk, refusal = excluded.refusal, raw = null
          where mailbox_uids.raw is not null
        returning uid, not (xmax = 0) as was_staged
      ), unstaged as (
        update mailboxes
        set messages_pending = greatest(0, messages_pending - (select count(*) from recorded where was_staged)::int)
        where id = ${this.row.id} and exists (select 1 from recorded where was_staged)
      )
      select uid::int8 as uid from recorded`);
    return new Set(rows.map((r) => Number(r.uid)));
  }

  async #afterProcess(client: ImapFlow, uids: number[]): Promise<void> {
    const action = this.row.afterProcess;
    if (uids.length === 0 || action === "none") return;
    const range = uids.join(",");
    if (action === "seen") await client.messageFlagsAdd(range, ["\\Seen"], { uid: true });
    else if (action === "delete") await client.messageDelete(range, { uid: true });
    else if (action.startsWith("move:")) {
      const target = action.slice(5);
      try {
        await client.mailboxCreate(target);
      } catch {
        // it exists (or cannot be created, and the move below reports why)
      }
      const moved = await client.messageMove(range, target, { uid: true });
      if (!moved) throw new Error(`could not move messages to ${target}`);
    }
  }

  async #setState(state: MailboxState, lastError: string | null = null): Promise<void> {
    if (state === this.#state && lastError === this.#lastError) return;
    await this.#save({ state, lastError });
    this.#state = state;
    this.#lastError = lastError;
  }

  /** Writes the poller's part of the row (only while it still holds the lease). */
  async #save(fields: Partial<Row>, ingested = 0): Promise<void> {
    await this.#ctx.database.db
      .update(mailboxes)
      .set({
        ...fields,
        ...(ingested > 0 ? { messagesIngested: sql`${mailboxes.messagesIngested} + ${ingested}` } : {}),
      })
      .where(and(eq(mailboxes.id, this.row.id), eq(mailboxes.leaseOwner, this.sup.owner)));
  }
}

/** How far the process's RSS may grow over a backfill before a full collection is run. */
export const GC_RSS_STEP = 32 * 1024 * 1024;
/** The same while a sync is fetched first ({@link MailboxPoller.#stageAll}). */
export const STAGE_GC_RSS_STEP = 48 * 1024 * 1024;
let collectedAtRss = 0;

/**
 * A long backfill makes garbage at a steady pace (about 10 MB per 1,000 small messages parsed and
 * stored), which the collector lets pile up to several times the live heap (measured: a heap of 160 MB
 * that a full collection brings back to 60). Called before each batch: once the process's RSS has grown
 * {@link GC_RSS_STEP} past where the last collection left it, a full collection (40 to 70 ms) is run.
 * This follows the garbage actually made rather than a count of messages, so a backfill of large
 * messages is collected as often as it needs; reading RSS is cheap.
 */
function collectGarbage(step = GC_RSS_STEP): void {
  const rss = process.memoryUsage.rss();
  if (collectedAtRss === 0 || rss < collectedAtRss) collectedAtRss = rss;
  else if (rss - collectedAtRss > step) {
    Bun.gc(true);
    collectedAtRss = process.memoryUsage.rss();
  }
}

/**
 * The UIDs a UID SEARCH finds. With ESEARCH (RFC 4731; Dovecot, Gmail and Microsoft 365 have it) the
 * answer is a sequence set (`1:5000`) rather than every number spelled out, which on a large folder
 * spares parsing thousands of numbers.
 */
async function searchUids(client: ImapFlow, query: SearchObject): Promise<number[]> {
  if (client.capabilities.has("ESEARCH")) {
    const found = await client.search(query, { uid: true, returnOptions: ["ALL"] });
    // (an array when the server turned out not to answer with ESEARCH)
    if (!found) return [];
    return Array.isArray(found) ? found : expandUidSet(found.all ?? "");
  }
  return ((await client.search(query, { uid: true })) || []) as number[];
}

/** A Postgres text array literal: `{"a","b",NULL}`. */
function textArray(values: readonly (string | null)[]): string {
  return `{${values.map((v) => (v === null ? "NULL" : `"${v.replace(/[\\"]/g, "\\$&")}"`)).join(",")}}`;
}

/** The numbers of a sequence set of UIDs (`1:3,7` → 1, 2, 3, 7); `*` is not expected in an answer. */
export function expandUidSet(set: string): number[] {
  const out: number[] = [];
  for (const part of set.split(",")) {
    if (part === "") continue;
    const colon = part.indexOf(":");
    if (colon < 0) {
      out.push(Number(part));
      continue;
    }
    const a = Number(part.slice(0, colon));
    const b = Number(part.slice(colon + 1));
    for (let u = Math.min(a, b); u <= Math.max(a, b); u++) out.push(u);
  }
  return out;
}

/** An IMAP sequence set for ascending UIDs, runs written as ranges: `1:500,502,504:510`. */
export function uidSet(uids: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < uids.length; ) {
    const first = uids[i] as number;
    let last = first;
    while (i + 1 < uids.length && uids[i + 1] === last + 1) last = uids[++i] as number;
    i++;
    parts.push(first === last ? String(first) : `${first}:${last}`);
  }
  return parts.join(",");
}

async function closeClient(client: ImapFlow): Promise<void> {
  try {
    if (client.usable) await Promise.race([client.logout(), Bun.sleep(2000)]);
  } catch {
    // already gone
  }
  client.close();
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const e = err as Error & { responseText?: string; authenticationFailed?: boolean; code?: string };
    if (e.authenticationFailed) return `authentication failed${e.responseText ? `: ${e.responseText}` : ""}`;
    return e.responseText
      ? `${e.message}: ${e.responseText}`
      : e.code
        ? `${e.message} (${e.code})`
        : e.message;
  }
  return String(err);
}
