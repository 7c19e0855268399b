/**
 * The full-text search index of stored messages, kept off the intake's path (docs/api.md, "Messages").
 *
 * Storing a message only lists it in `message_search_queue` (one small insert in the intake's own
 * statement, ingest/store.ts). Computing its search document (`mh_message_search(parsed)`: to_tsvector
 * over the subject, the addresses and the text body) and adding it to the GIN index cost more than the
 * rest of storing a small message, so the indexer here does it in batches, in the background:
 *
 * - {@link indexQueuedMessages} moves up to a batch of queued messages into `message_search` in one
 *   statement (delete from the queue, insert the documents): a crash leaves the queue as it was, and
 *   several processes share the work (`for update skip locked`).
 * - {@link startSearchIndexer} runs it in every process that takes mail in. While this process's intake
 *   is committing messages it waits, so a burst of mail is not slowed by its own indexing; it never
 *   waits longer than {@link MAX_DEFERRAL_MS}, so under sustained intake the index trails by at most
 *   that. When the intake is quiet it drains the queue at once.
 *
 * A search never misses a queued message: it also evaluates the document of every message of the
 * project still queued (message-archive.ts), which is cheap because the queue is short (what arrived
 * in the last seconds).
 */
import { sql } from "drizzle-orm";
import type { AppContext } from "../context.ts";
import type { Database } from "../db/client.ts";

/** Queued messages indexed per statement. */
export const INDEX_BATCH = 500;
/** How often the background indexer looks at the queue. */
export const INDEX_TICK_MS = 500;
/** The longest the indexer defers to a busy intake before it indexes anyway. */
export const MAX_DEFERRAL_MS = 5_000;

/**
 * Indexes up to `limit` queued messages (oldest ids first is not needed: any order is correct) and
 * returns how many queue rows were taken, so a caller drains the queue by calling until it gets less
 * than `limit`. A queued message that is gone (erased, its project deleted) is just dropped.
 */
export async function indexQueuedMessages(database: Database, limit = INDEX_BATCH): Promise<number> {
  const rows = await database.rows<{ taken: number }>(sql`
    with taken as (
      delete from message_search_queue
      where message_pk in (select message_pk from message_search_queue limit ${limit} for update skip locked)
      returning message_pk
    ), indexed as (
      insert into message_search (message_pk, project_id, received_at, document)
      select m.id, m.project_id, m.received_at, mh_message_search(m.parsed)
      from messages m join taken t on t.message_pk = m.id
      on conflict (message_pk) do update set document = excluded.document
    )
    select count(*)::int as taken from taken`);
  return Number(rows[0]?.taken ?? 0);
}

/**
 * Indexes every queued message now (tests, and the background indexer), batch after batch until a
 * batch comes back short or `stopped()` says to end early; returns how many were indexed.
 */
export async function drainSearchQueue(
  database: Database,
  stopped: () => boolean = () => false,
): Promise<number> {
  let total = 0;
  while (!stopped()) {
    const n = await indexQueuedMessages(database);
    total += n;
    if (n < INDEX_BATCH) break;
  }
  return total;
}

/** A running indexer. */
export interface SearchIndexer {
  /** Stops the loop after the batch in progress. */
  stop(): Promise<void>;
}

/** Starts the background indexer (see the file's header); `tickMs` and `maxDeferralMs` for tests. */
export function startSearchIndexer(
  ctx: AppContext,
  opts: { tickMs?: number; maxDeferralMs?: number } = {},
): SearchIndexer {
  const tickMs = opts.tickMs ?? INDEX_TICK_MS;
  const maxDeferralMs = opts.maxDeferralMs ?? MAX_DEFERRAL_MS;
  let stopped = false;
  let running: Promise<void> | null = null;
  let lastStatements = ctx.ingest.commits.stats.statements;
  let deferredSince: number | null = null;

  const tick = async () => {
    const statements = ctx.ingest.commits.stats.statements;
    const busy = statements !== lastStatements;
    lastStatements = statements;
    const now = Date.now();
    if (busy) {
      deferredSince ??= now;
      if (now - deferredSince < maxDeferralMs) return;
    }
    deferredSince = null;
    try {
      await drainSearchQueue(ctx.database, () => stopped);
    } catch (err) {
      // The queue stays as it was; the next tick tries again.
      ctx.logger.warn("search indexing failed", { error: String(err) });
    }
  };

  const timer = setInterval(() => {
    if (running || stopped) return;
    running = tick().finally(() => {
      running = null;
    });
  }, tickMs);
  timer.unref?.();

  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
