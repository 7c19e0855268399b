/**
 * Resource guards (spec "Limits"). Evaluation is a tree walk with no recursion in the language itself, so
 * expression depth is a static property checked at validation/compile time; node count, value size and
 * elapsed time of regex/call operations are checked while evaluating.
 */
import { MapperRuntimeError } from "./errors.ts";

export const MAX_DEPTH = 50;
export const MAX_NODES = 10_000;
export const MAX_OUTPUT_BYTES = 1024 * 1024;
/**
 * Deepest nesting of arrays and objects in an output. Deeper is `mapper.output_too_large`: no webhook
 * receiver's JSON parser takes it (Python's default recursion limit is 1,000, serde_json's is 128), and
 * only hostile data gets there (fuzz-mapper seed 97385977: a subject 10,438 levels deep, output whole,
 * overflowed the size walk's stack; JSON.stringify took 3 s to give up on 50,000 levels).
 */
export const MAX_OUTPUT_DEPTH = 1000;
export const REGEX_TIMEOUT_MS = 50;
export const CALL_TIMEOUT_MS = 100;
/** Largest intermediate string or array; stops exponential growth (e.g. `cat` of a var with itself). */
export const MAX_VALUE_LENGTH = 1024 * 1024;

/** Per-evaluation mutable state, allocated once per run and shared by vars, output and loops. */
export interface EvalState {
  /** evaluated nodes so far */
  nodes: number;
  /** loop-alias slots (`as`, `current`, `accumulator`), indexed by compile-time slot number */
  locals: unknown[];
  /** the evaluation root: where `call.*` defaults such as `message.html` are read */
  root: unknown;
}

export function nodesExceeded(): never {
  throw new MapperRuntimeError("mapper.nodes_exceeded", `more than ${MAX_NODES} expression nodes evaluated`);
}

/** Charges `n` evaluated nodes (one add per block or loop iteration, compile.ts header). */
export function charge(s: EvalState, n: number): void {
  s.nodes += n;
  if (s.nodes > MAX_NODES) nodesExceeded();
}

/** Throws `mapper.output_too_large` when an intermediate string/array grows past MAX_VALUE_LENGTH. */
export function checkLength<T extends { length: number }>(value: T): T {
  if (value.length > MAX_VALUE_LENGTH) {
    throw new MapperRuntimeError(
      "mapper.output_too_large",
      `an intermediate value is longer than ${MAX_VALUE_LENGTH} elements`,
    );
  }
  return value;
}

/**
 * Throws `mapper.output_too_large` when the JSON encoding of `value` exceeds `limit` bytes. Walks the value
 * with a running budget instead of calling JSON.stringify, because vars can share sub-values and a DAG
 * with 2^n leaves must be refused without being serialised.
 */
export function checkOutputSize(value: unknown, limit = MAX_OUTPUT_BYTES): void {
  confirmSize(value, remaining(value, limit, limit, 1), limit);
}

/**
 * After a lower bound that fits (`budget` left of `limit`): UTF-8 and escapes can still push the real
 * encoding over the limit.
 */
function confirmSize(value: unknown, budget: number, limit: number): void {
  if (limit - budget > limit / 6) {
    // The walk has already refused anything nested deeper than MAX_OUTPUT_DEPTH, which JSON.stringify
    // encodes without trouble.
    const encoded = JSON.stringify(value) ?? "null";
    if (Buffer.byteLength(encoded, "utf8") > limit) outputTooLarge(limit);
  }
}

/**
 * The output of a mapper whose output template lists whole-var slots (`[{"var": "vars.a"}, …]`, unset
 * slots read null): builds the array and checks it in the same pass, exactly as `checkOutputSize` checks
 * the built array (same lower bound item by item, same throw points, same JSON confirmation). One pass
 * over the items instead of a build loop and a walk (≈ 10% of the 20-var bench mapper's run).
 */
export function slotArrayChecked(
  locals: readonly unknown[],
  slots: readonly number[],
  limit = MAX_OUTPUT_BYTES,
): unknown[] {
  const n = slots.length;
  const out = new Array<unknown>(n);
  let budget = limit - 2;
  for (let i = 0; i < n; i++) {
    if (budget < 0) outputTooLarge(limit);
    const v = locals[slots[i]!];
    const x = v === undefined ? null : v;
    out[i] = x;
    if (typeof x === "string") budget -= x.length + 3;
    else if (typeof x !== "object" || x === null) budget -= typeof x === "number" ? 2 : 5;
    else budget = remaining(x, budget, limit, 2) - 1;
  }
  if (budget < 0) outputTooLarge(limit);
  confirmSize(out, budget, limit);
  return out;
}

/** An object template whose values are whole-slot reads: its keys in order, their slots, and a keyed shape. */
export interface SlotObject {
  names: readonly string[];
  slots: readonly number[];
  shape: Readonly<Record<string, unknown>>;
}

/**
 * The output of a mapper whose output template is an object of whole-var slots: builds it from the keyed
 * shape and checks it in the same pass, as `checkOutputSize` walks the built object (same key order, same
 * lower bound key by key, same throw points, same JSON confirmation), without a `for…in` and a second read
 * of every value.
 */
export function slotObjectChecked(
  locals: readonly unknown[],
  t: SlotObject,
  limit = MAX_OUTPUT_BYTES,
): Record<string, unknown> {
  const { names, slots } = t;
  const out: Record<string, unknown> = { ...t.shape };
  let budget = limit - 2;
  for (let i = 0; i < names.length; i++) {
    if (budget < 0) outputTooLarge(limit);
    const key = names[i]!;
    const v = locals[slots[i]!];
    const x = v === undefined ? null : v;
    out[key] = x;
    budget -= key.length + 4;
    if (typeof x === "string") budget -= x.length + 2;
    else if (typeof x !== "object" || x === null) budget -= typeof x === "number" ? 1 : 4;
    else budget = remaining(x, budget, limit, 2);
  }
  if (budget < 0) outputTooLarge(limit);
  confirmSize(out, budget, limit);
  return out;
}

function nestedTooDeep(): never {
  throw new MapperRuntimeError(
    "mapper.output_too_large",
    `mapper output is nested deeper than ${MAX_OUTPUT_DEPTH} levels`,
  );
}

function outputTooLarge(limit: number): never {
  throw new MapperRuntimeError("mapper.output_too_large", `mapper output is larger than ${limit} bytes`);
}

/**
 * The budget left after a lower bound of `v`'s encoded size; throws as soon as it goes negative. Every
 * decrement is a lower bound of the encoded size, so overrunning the budget proves the overrun. A plain
 * recursive function (no closures per call): it runs on every mapper output. Scalars inside a structure
 * are charged inline (no call per string); only nested structures recurse.
 */
function remaining(v: unknown, budget: number, limit: number, depth: number): number {
  if (typeof v === "string") budget -= v.length + 2;
  else if (typeof v !== "object" || v === null) budget -= typeof v === "number" ? 1 : 4;
  else if (depth > MAX_OUTPUT_DEPTH) nestedTooDeep();
  else if (Array.isArray(v)) {
    budget -= 2;
    for (let i = 0; i < v.length; i++) {
      if (budget < 0) outputTooLarge(limit);
      const x: unknown = v[i];
      // `x` plus its comma (the first item's comma pays for nothing, as before: a lower bound).
      if (typeof x === "string") budget -= x.length + 3;
      else if (typeof x !== "object" || x === null) budget -= typeof x === "number" ? 2 : 5;
      else budget = remaining(x, budget, limit, depth + 1) - 1;
    }
  } else {
    budget -= 2;
    for (const key in v) {
      if (budget < 0) outputTooLarge(limit);
      const x: unknown = (v as Record<string, unknown>)[key];
      budget -= key.length + 4;
      if (typeof x === "string") budget -= x.length + 2;
      else if (typeof x !== "object" || x === null) budget -= typeof x === "number" ? 1 : 4;
      else budget = remaining(x, budget, limit, depth + 1);
    }
  }
  if (budget < 0) outputTooLarge(limit);
  return budget;
}

/** Raised by a `Deadline` check: the operation has been charged more than its limit. */
function overTime(code: TimedCode, charged: number, limitMs: number, what: string): never {
  throw new MapperRuntimeError(code, `${what} took ${charged.toFixed(1)} ms (limit ${limitMs} ms)`);
}

type TimedCode = "mapper.regex_timeout" | "mapper.call_timeout";

type CpuUsage = { user: number; system: number };
type ThreadCpu = { threadCpuUsage?: (previous?: CpuUsage) => CpuUsage };

/**
 * CPU time of the calling thread (`process.threadCpuUsage`, Bun and Node ≥ 23.9), else of the process.
 * Process time counted every thread: in a burst, the other mapper workers' and the main thread's work was
 * charged to each operation, and 12 of 60 concurrent 334 KB newsletters went dead with
 * `mapper.call_timeout` although each call took 5–15 ms.
 */
function cpuUsage(previous?: CpuUsage): CpuUsage {
  const thread = (process as unknown as ThreadCpu).threadCpuUsage;
  return typeof thread === "function" ? thread.call(process, previous) : process.cpuUsage(previous);
}

/**
 * The time charged to an operation is the smaller of wall-clock time and this thread's CPU time over
 * it: an operation that is really slow burns CPU for as long as it runs, while one that merely waited
 * for a core on a loaded machine (or across a GC pause, or while other threads ran) did not — so a busy
 * host never turns a fast regex into `mapper.regex_timeout`.
 */
function charged(started: number, cpuStarted: CpuUsage): number {
  const wall = performance.now() - started;
  const cpu = cpuUsage(cpuStarted);
  return Math.min(wall, (cpu.user + cpu.system) / 1000);
}

/**
 * A time budget checked from inside a long operation (the match loop of `regex.replace`), so that the
 * operation stops at its limit instead of being measured after it has run to the end. `check()` reads
 * the wall clock; only past the limit does it read CPU time (a system call), and then at most once per
 * 64 checks while the machine, not the operation, is slow.
 */
export class Deadline {
  private readonly started = performance.now();
  private readonly cpuStarted = cpuUsage();
  private skip = 0;

  constructor(
    private readonly code: TimedCode,
    private readonly limitMs: number,
    /** Named in the error: `regex.replace`, `call.extract.urls`, … */
    private readonly what = "operation",
  ) {}

  /** Throws once the operation is over its limit; `final` checks CPU time even within a skipped run. */
  check(final = false): void {
    if (performance.now() - this.started <= this.limitMs) return;
    if (this.skip > 0 && !final) {
      this.skip--;
      return;
    }
    const time = charged(this.started, this.cpuStarted);
    if (time > this.limitMs) overTime(this.code, time, this.limitMs, this.what);
    this.skip = 63;
  }
}

/**
 * Runs `fn` and raises `code` when it was charged (see `charged`) more than `limitMs`: the helpers and a
 * single RE2 call are not interruptible, so they are measured after they return. `fn` may also take the
 * running `Deadline` and stop itself early.
 */
export function timed<T>(code: TimedCode, limitMs: number, fn: (deadline: Deadline) => T, what?: string): T {
  const deadline = new Deadline(code, limitMs, what);
  const result = fn(deadline);
  deadline.check(true);
  return result;
}
