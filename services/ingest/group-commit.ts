/**
 * Group commit for the intake's store statement on Postgres (store.ts). Each message's write is one
 * statement that also updates its project's row (the quota counter), so before this every message
 * of a project held that row lock through its own commit and WAL flush: messages of one project were
 * committed strictly one after another, each paying a commit, an fsync and a round trip of its own.
 *
 * Statements that arrive while earlier batches are in flight are queued and sent together as ONE
 * transaction, pipelined in one write: `BEGIN`, the blob locks of the whole batch, every statement,
 * `COMMIT`. A lone message is sent at once (a batch of one), so an idle intake adds no latency; under
 * load batches form by themselves from what arrived while the previous ones were committing.
 *
 * Nothing is answered before its batch has committed, so the caller's promise means exactly what it
 * meant for a single statement: the rows are durable. Correctness of one statement does not depend on
 * the others: a later statement sees the earlier ones' rows (READ COMMITTED takes a new snapshot per
 * statement), so a duplicate or a quota overrun inside a batch is decided as it would be one by one.
 *
 * Deadlocks: statements are ordered by project (the project rows are locked in one order by every
 * batch), and the batch takes the shared blob locks of all its statements first, in ascending order
 * (the order retention's exclusive locks use, retention.ts `blobLockIds`). A batch that fails anyway
 * is retried one statement per transaction, so one bad statement never fails the others.
 */

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

/** One statement of a batch: its text and parameters, the project it writes, its blob lock ids. */
export interface BatchedStatement {
  text: string;
  params: unknown[];
  projectId: string;
  blobLocks: readonly number[];
}

interface Pending extends BatchedStatement {
  resolve(rows: unknown[]): void;
  reject(err: unknown): void;
}

/** Batches in flight at once: one committing while the next one is sent and waits for the row lock. */
export const MAX_BATCHES_IN_FLIGHT = 2;
/** Largest batch; what is left waits for the next one. */
export const MAX_BATCH = 64;

/** Runs the store statements of one Postgres client in group commits (see the module comment). */
export class GroupCommitter {
  private queue: Pending[] = [];
  private inFlight = 0;
  /** batches sent, and statements in them (diagnostics: the average batch size) */
  readonly stats = { batches: 0, statements: 0, retried: 0 };

  constructor(
    private readonly client: PostgresJsClient,
    private readonly lockNamespace: number,
  ) {}

  /** The statement's rows, once the batch it went out in has committed. */
  run<T>(statement: BatchedStatement): Promise<T[]> {
    return new Promise<T[]>((resolve, reject) => {
      this.queue.push({ ...statement, resolve: resolve as (rows: unknown[]) => void, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < MAX_BATCHES_IN_FLIGHT && this.queue.length > 0) {
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
      await Promise.all(
        batch.map(async (p) => {
          try {
            const [rows] = await this.transaction([p]);
            p.resolve(rows as unknown[]);
          } catch (e) {
            p.reject(e);
          }
        }),
      );
    }
  }

  /**
   * One transaction, pipelined on a reserved connection (one write, one round trip): BEGIN, the batch's
   * blob locks in ascending order, its statements by project, COMMIT. A lone statement is sent as is
   * (atomic on its own). When any statement fails, Postgres aborts the transaction (the later ones
   * fail too and COMMIT rolls back): this throws the first error and nothing of the batch is stored.
   */
  private async transaction(batch: readonly Pending[]): Promise<unknown[]> {
    if (batch.length === 1) {
      const p = batch[0]!;
      return [await this.client.unsafe(p.text, p.params, { prepare: true })];
    }
    const order = batch.map((_, i) => i).sort((a, b) => compare(batch[a]!.projectId, batch[b]!.projectId));
    const locks = [...new Set(batch.flatMap((p) => p.blobLocks))].sort((a, b) => a - b);
    const conn = await this.client.reserve();
    try {
      const queries: PromiseLike<unknown>[] = [conn.unsafe("begin")];
      if (locks.length > 0) {
        queries.push(
          conn.unsafe(
            "select count(pg_advisory_xact_lock_shared($1::int4, x::int4)) from jsonb_array_elements_text($2::jsonb) as x",
            [this.lockNamespace, JSON.stringify(locks)],
            { prepare: true },
          ),
        );
      }
      const first = queries.length;
      for (const i of order) {
        const p = batch[i]!;
        queries.push(conn.unsafe(p.text, p.params, { prepare: true }));
      }
      queries.push(conn.unsafe("commit"));
      const settled = await Promise.allSettled(queries);
      const failed = settled.find((r) => r.status === "rejected");
      if (failed) {
        // Leave no transaction open on the connection (an error before COMMIT ran would).
        await conn.unsafe("rollback").then(undefined, () => undefined);
        throw (failed as PromiseRejectedResult).reason;
      }
      const out = new Array<unknown>(batch.length);
      order.forEach((i, k) => {
        out[i] = (settled[first + k] as PromiseFulfilledResult<unknown>).value;
      });
      return out;
    } finally {
      conn.release();
    }
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
