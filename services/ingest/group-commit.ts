/**
 * Group commit for the intake's store statement (store.ts), on Postgres and on PGlite.
 *
 * Each message's write is one statement that also updates its project's row (the quota counter), so
 * before this every message of a project held that row lock through its own commit and WAL flush:
 * messages of one project were committed strictly one after another, each paying a commit, an fsync
 * and a round trip of its own.
 *
 * Statements that arrive while earlier batches are in flight are queued and sent together as ONE
 * transaction: on Postgres pipelined in one write (`BEGIN`, the blob locks of the whole batch, every
 * statement, `COMMIT`; two batches in flight); on PGlite (one connection, in process) one batch at a
 * time, where a commit (WAL written through its file system layer) is the dearest part of a message.
 * A lone message is sent at once (a batch of one), so an idle intake adds no latency; under load
 * batches form by themselves from what arrived while the previous ones were committing.
 *
 * Nothing is answered before its batch has committed, so the caller's promise means exactly what it
 * meant for a single statement: the rows are durable. Correctness of one statement does not depend on
 * the others: a later statement sees the earlier ones' rows (READ COMMITTED takes a new snapshot per
 * statement), so a duplicate or a quota overrun inside a batch is decided as it would be one by one.
 *
 * Deadlocks: statements are ordered by project (the project rows are locked in one order by every
 * batch), and the batch takes the shared blob locks of all its statements first, in ascending order
 * (the order retention's exclusive locks use, attachments/blob-locks.ts `blobLockIds`). A batch that fails anyway
 * is retried one statement per transaction, so one bad statement never fails the others.
 *
 * Metrics: `mailhook_ingest_commits_total` and `mailhook_ingest_commit_statements_total` (their ratio
 * is the average batch size).
 */
import { BLOB_LOCK_NAMESPACE } from "../attachments/blob-locks.ts";
import type { BatchedStatement, GroupCommits } from "../context.ts";
import type { Database } from "../db/client.ts";
import { metrics } from "../lib/metrics.ts";

/** A connection of the postgres.js client, reserved for one batch. */
interface Reserved {
  unsafe(query: string, params?: unknown[], options?: { prepare: boolean }): PromiseLike<unknown>;
  release(): void;
}

/** The part of the postgres.js client used here. */
export interface PostgresJsClient {
  unsafe(query: string, params: unknown[], options: { prepare: boolean }): PromiseLike<unknown>;
  reserve(): PromiseLike<Reserved>;
}

interface Pending extends BatchedStatement {
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
}

/** Largest batch; what is left waits for the next one. */
export const MAX_BATCH = 64;

/** How one database runs a lone statement, and a batch in one transaction (see below). */
export interface BatchRunner {
  /** batches in flight at once */
  readonly maxInFlight: number;
  /**
   * Wait one event-loop turn before sending, so statements made ready in the same turn share a batch.
   * For PGlite: it runs on this thread, so without a pause every message would reach it alone.
   */
  readonly gather?: boolean;
  /** One statement on its own (atomic by itself): its rows. */
  one(statement: BatchedStatement): Promise<unknown>;
  /**
   * Several statements in ONE transaction, in the order given, after taking `locks` (shared blob locks,
   * ascending): their rows in that order. Throws (and stores nothing) when any statement fails.
   */
  many(statements: readonly BatchedStatement[], locks: readonly number[]): Promise<unknown[]>;
}

/** Runs store statements in group commits (see the module comment). */
export class GroupCommitter implements GroupCommits {
  private queue: Pending[] = [];
  private inFlight = 0;
  /** a gathering turn is scheduled (runners with `gather`) */
  private gathering = false;
  /** batches sent, and statements in them (diagnostics: the average batch size) */
  readonly stats = { batches: 0, statements: 0, retried: 0 };

  constructor(private readonly runner: BatchRunner) {}

  /** The statement's rows, once the batch it went out in has committed. */
  run<T>(statement: BatchedStatement): Promise<T[]> {
    return new Promise<T[]>((resolve, reject) => {
      this.queue.push({ ...statement, resolve: resolve as (rows: unknown[]) => void, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.queue.length === 0 || this.inFlight >= this.runner.maxInFlight || this.gathering) return;
    if (!this.runner.gather) {
      this.flush();
      return;
    }
    this.gathering = true;
    setImmediate(() => {
      this.gathering = false;
      this.flush();
    });
  }

  /** Sends what is queued, as far as the runner takes batches in flight. */
  private flush(): void {
    while (this.inFlight < this.runner.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async send(batch: Pending[]): Promise<void> {
    this.stats.batches++;
    this.stats.statements += batch.length;
    metrics.ingestCommits.inc({});
    metrics.ingestCommittedStatements.inc({ retried: "false" }, batch.length);
    try {
      const results = await this.transaction(batch);
      for (let i = 0; i < batch.length; i++) batch[i]?.resolve(results[i] as unknown[]);
    } catch (err) {
      if (batch.length === 1) {
        batch[0]?.reject(err);
        return;
      }
      // One statement may be at fault (or a deadlock chose this batch): each on its own, so the
      // others still commit and only the culprit fails.
      this.stats.retried += batch.length;
      metrics.ingestCommits.inc({}, batch.length);
      metrics.ingestCommittedStatements.inc({ retried: "true" }, batch.length);
      await Promise.all(
        batch.map(async (p) => {
          try {
            p.resolve((await this.runner.one(p)) as unknown[]);
          } catch (e) {
            p.reject(e);
          }
        }),
      );
    }
  }

  /** A lone statement as is; a batch ordered by project, with its blob locks in ascending order. */
  private async transaction(batch: readonly Pending[]): Promise<unknown[]> {
    if (batch.length === 1) return [await this.runner.one(batch[0]!)];
    const order = batch.map((_, i) => i).sort((a, b) => compare(batch[a]!.projectId, batch[b]!.projectId));
    const locks = [...new Set(batch.flatMap((p) => p.blobLocks))].sort((a, b) => a - b);
    const rows = await this.runner.many(
      order.map((i) => batch[i]!),
      locks,
    );
    const out = new Array<unknown>(batch.length);
    order.forEach((i, k) => {
      out[i] = rows[k];
    });
    return out;
  }
}

const LOCK_SQL =
  "select count(pg_advisory_xact_lock_shared($1::int4, x::int4)) from jsonb_array_elements_text($2::jsonb) as x";

/**
 * Postgres (postgres.js): a batch is pipelined on a reserved connection, one write and one round trip:
 * BEGIN, the locks, the statements, COMMIT. When a statement fails Postgres aborts the transaction (the
 * later ones fail too and COMMIT rolls back). Two batches in flight: one committing while the next is
 * sent and waits for the project row.
 */
export function postgresRunner(client: PostgresJsClient, lockNamespace: number): BatchRunner {
  return {
    maxInFlight: 2,
    one: (p) => Promise.resolve(client.unsafe(p.text, p.params, { prepare: true })),
    async many(statements, locks) {
      const conn = await client.reserve();
      try {
        const queries: PromiseLike<unknown>[] = [conn.unsafe("begin")];
        if (locks.length > 0) {
          queries.push(conn.unsafe(LOCK_SQL, [lockNamespace, JSON.stringify(locks)], { prepare: true }));
        }
        const first = queries.length;
        for (const p of statements) queries.push(conn.unsafe(p.text, p.params, { prepare: true }));
        queries.push(conn.unsafe("commit"));
        const settled = await Promise.allSettled(queries);
        const failed = settled.find((r) => r.status === "rejected");
        if (failed) {
          // Leave no transaction open on the connection (an error before COMMIT ran would).
          await conn.unsafe("rollback").then(undefined, () => undefined);
          throw (failed as PromiseRejectedResult).reason;
        }
        return statements.map((_, k) => (settled[first + k] as PromiseFulfilledResult<unknown>).value);
      } finally {
        conn.release();
      }
    },
  };
}

/** The part of the PGlite client used here. */
export interface PgliteClient {
  query<T>(text: string, params?: unknown[]): Promise<{ rows: T[] }>;
  transaction<T>(fn: (tx: { query: PgliteClient["query"] }) => Promise<T>): Promise<T>;
}

/**
 * PGlite: one connection, so one batch at a time, in `transaction` (rolled back when one fails). A commit
 * is about 0.6 ms of a 1.4 ms insert there (measured), so batches are gathered for one event-loop turn.
 */
export function pgliteRunner(client: PgliteClient, lockNamespace: number): BatchRunner {
  return {
    maxInFlight: 1,
    gather: true,
    one: async (p) => (await client.query(p.text, p.params)).rows,
    many: (statements, locks) =>
      client.transaction(async (tx) => {
        if (locks.length > 0) await tx.query(LOCK_SQL, [lockNamespace, JSON.stringify(locks)]);
        const out: unknown[] = [];
        for (const p of statements) out.push((await tx.query(p.text, p.params)).rows);
        return out;
      }),
  };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The postgres.js client under drizzle, or null on PGlite. */
function postgresClient(database: Database): PostgresJsClient | null {
  if (database.kind !== "postgres") return null;
  const client = (database.db as unknown as { $client?: Partial<PostgresJsClient> }).$client;
  return client && typeof client.unsafe === "function" ? (client as PostgresJsClient) : null;
}

/**
 * The group committer of a database. Built once per process by bootstrap (`ctx.ingest.commits`) and
 * shared by every intake, so concurrent messages of the SMTP and HTTP intakes share transactions.
 */
export function createGroupCommitter(database: Database): GroupCommitter {
  const client = postgresClient(database);
  return new GroupCommitter(
    client
      ? postgresRunner(client, BLOB_LOCK_NAMESPACE)
      : pgliteRunner((database.db as unknown as { $client: PgliteClient }).$client, BLOB_LOCK_NAMESPACE),
  );
}
