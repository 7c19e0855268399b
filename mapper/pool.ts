/**
 * Runs mappers off the main thread on a piscina pool with a hard deadline per task. The in-evaluation
 * guards (nodes, regex/call timing) bound well-behaved work; the deadline is the backstop for anything
 * that is not interruptible (a helper stuck in a library): piscina terminates the worker running an
 * aborted task and starts a replacement, and the caller gets `mapper.call_timeout`.
 */
import { availableParallelism } from "node:os";
import { Piscina } from "piscina";
import { checkCodeCopies, DEFAULT_CODE_COPIES } from "./copies.ts";
import { type MapperErrorCode, MapperRuntimeError } from "./errors.ts";
import { configHash } from "./hash.ts";
import type { PoolReply, PoolTask } from "./pool-worker.ts";
import type { MapperInput } from "./types.ts";

export interface MapperPoolOptions {
  /** worker threads (default: available cores − 1, at least 1) */
  size?: number;
  /**
   * hard deadline per task in ms (default 1000), counted from when a thread takes the task: a task waits
   * for a free thread first, so a burst queued behind other work is not cut for waiting
   */
  taskTimeoutMs?: number;
  /** module URLs/paths each worker imports at start, to register extra `call.*` helpers there too */
  plugins?: string[];
  /** copies of the evaluator's code each worker spreads a mapper's vars over (`setCodeCopies`; default 8) */
  codeCopies?: number;
}

export interface MapperPool {
  /** Evaluates `config` on `input` in a worker. Rejects with MapperRuntimeError. */
  run(config: unknown, input: MapperInput): Promise<unknown>;
  /** Counters for monitoring: tasks answered and how many of them had to compile their config in a worker. */
  readonly stats: { tasks: number; compilations: number };
  /** Stops the workers; pending tasks are rejected. */
  close(): Promise<void>;
}

const KNOWN_CODES = new Set<string>([
  "mapper.depth_exceeded",
  "mapper.nodes_exceeded",
  "mapper.output_too_large",
  "mapper.regex_timeout",
  "mapper.call_timeout",
  "mapper.invalid_config",
]);

/** Creates a worker pool. Cheap per call: one structured clone each way, compilation cached per worker. */
export function createMapperPool(options: MapperPoolOptions = {}): MapperPool {
  const codeCopies = checkCodeCopies(options.codeCopies ?? DEFAULT_CODE_COPIES);
  const size = options.size ?? Math.max(1, availableParallelism() - 1);
  const timeoutMs = options.taskTimeoutMs ?? 1000;
  const pool = new Piscina<PoolTask, PoolReply>({
    filename: new URL("./pool-worker.ts", import.meta.url).href,
    minThreads: size,
    maxThreads: size,
    idleTimeout: Number.POSITIVE_INFINITY,
    workerData: { plugins: options.plugins ?? [], codeCopies },
  });
  const stats = { tasks: 0, compilations: 0 };
  // One task per thread at a time, the rest wait here in order. The deadline starts when a task is handed
  // to piscina, so it measures the task's own run: with piscina's queue behind it, 60 concurrent
  // newsletters on one thread went dead with mapper.call_timeout for time spent waiting, not running.
  let free = size;
  const waiting: (() => void)[] = [];
  const acquire = (): Promise<void> | undefined => {
    if (free > 0) {
      free--;
      return undefined;
    }
    return new Promise<void>((resolve) => waiting.push(resolve));
  };
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free++;
  };
  return {
    stats,
    async run(config, input) {
      const task: PoolTask = { hash: configHash(config), config, input };
      await acquire();
      const signal = AbortSignal.timeout(timeoutMs);
      let reply: PoolReply;
      try {
        reply = await pool.run(task, { signal });
      } catch (err) {
        if (signal.aborted) {
          throw new MapperRuntimeError(
            "mapper.call_timeout",
            `mapper task exceeded ${timeoutMs} ms; worker replaced`,
          );
        }
        throw err;
      } finally {
        release();
      }
      stats.tasks++;
      if (reply.ok) {
        if (reply.compiled) stats.compilations++;
        return reply.output;
      }
      if (KNOWN_CODES.has(reply.code)) {
        const err = new MapperRuntimeError(
          reply.code as MapperErrorCode,
          reply.message,
          reply.details as MapperRuntimeError["details"],
        );
        if (reply.path !== undefined) {
          err.path = reply.path;
          err.nodes = reply.nodes;
        }
        throw err;
      }
      throw new Error(reply.message);
    },
    async close() {
      await pool.destroy();
    },
  };
}
