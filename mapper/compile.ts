/**
 * Mapper configs and plain expressions → runnable functions, built once and cached by the config's stable
 * hash. `compiler.ts` turns each expression into a tree of closures; this module runs a mapper's vars in
 * order, then its output, with the node budget and the output-size guard. Each var position gets its own
 * copy of the evaluator's code (`copies.ts`).
 */
import { createCompiler } from "./compiler.ts";
import { codeCopies, codeFor } from "./copies.ts";
import { MapperRuntimeError } from "./errors.ts";
import {
  checkOutputSize,
  type EvalState,
  MAX_NODES,
  nodesExceeded,
  slotArrayChecked,
  slotObjectChecked,
} from "./guards.ts";
import { configHash } from "./hash.ts";
import { iterOperators } from "./operators/iter.ts";
import { isOperator } from "./operators/table.ts";
import type { Scope } from "./operators/types.ts";
import { constantOf, defineKey } from "./operators/types.ts";
import { isStandalone } from "./operators/var.ts";
import type { MapperConfig, MapperInput } from "./types.ts";
import { validateExpression, validateMapperConfig } from "./validate.ts";

/** Operator nodes in `expr` (what the budget counts), and whether it loops or calls out. */
function scan(expr: unknown, acc = { nodes: 0, loops: false, calls: false }) {
  if (Array.isArray(expr)) for (const e of expr) scan(e, acc);
  else if (typeof expr === "object" && expr !== null) {
    const keys = Object.keys(expr);
    if (keys.length === 1) {
      const k = keys[0]!;
      if (isOperator(k) || k === "call" || k.startsWith("call.")) acc.nodes++;
      if (Object.hasOwn(iterOperators, k)) acc.loops = true;
      if (k === "call" || k.startsWith("call.")) acc.calls = true;
    }
    for (const k of keys) scan((expr as Record<string, unknown>)[k], acc);
  }
  return acc;
}

/** Fields of the mapper's evaluation root read through slots (`Scope.fields`). */
const ROOT_FIELDS = ["message", "ctx", "meta"] as const;

/** A root field as a `var` read sees it: a function is missing (never the case for JSON input). */
const field = (v: unknown): unknown => (typeof v === "function" ? undefined : v);

/** The root's `vars` when nothing can read it (`Scope.observed`): a fixed, empty object. */
const UNOBSERVED: Readonly<Record<string, unknown>> = Object.freeze({});

/** Loop slots of a config without object-form loops: never written. */
const NO_LOCALS: unknown[] = Object.freeze([]) as unknown as unknown[];

function newScope(): Scope {
  return { aliases: new Map(), slots: { count: 0 } };
}

function invalid(errors: { path: string; message: string }[]): never {
  const first = errors[0];
  throw new MapperRuntimeError(
    "mapper.invalid_config",
    first ? `invalid mapper config at ${first.path || "/"}: ${first.message}` : "invalid mapper config",
    errors,
  );
}

const CACHE_LIMIT = 500;
function remember<T>(cache: Map<string, T>, key: string, make: () => T): T {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const made = make();
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, made);
  return made;
}

/**
 * A compiled mapper: input → output JSON value. Throws MapperRuntimeError on a guard overrun. When
 * `stats` is given, it receives the number of nodes evaluated (for the REPL and diagnostics).
 */
export type CompiledMapper = (input: MapperInput, stats?: { nodes: number }) => unknown;

/**
 * Marks a guard error leaving a mapper run with where it stopped (`/vars/<i>/expr` or `/output`) and the
 * nodes charged so far (also into `stats`). A mapper called from a helper inside another mapper's run
 * keeps the innermost location.
 */
function stopped(err: unknown, path: string, nodes: number, stats: { nodes: number } | undefined): unknown {
  if (stats) stats.nodes = nodes;
  if (err instanceof MapperRuntimeError && err.path === undefined) {
    err.path = path;
    err.nodes = nodes;
  }
  return err;
}

const mapperCache = new Map<string, CompiledMapper>();
const expressionCache = new Map<string, (data: unknown) => unknown>();

/**
 * Validates and compiles a `map.custom_json` config once (cached by stable hash; treat configs as
 * immutable once compiled). Throws MapperRuntimeError `mapper.invalid_config` (with `details`) or
 * `mapper.depth_exceeded` for a config that cannot run.
 */
export function compileMapper(config: unknown): CompiledMapper {
  // Keyed by the copies setting too: a mapper compiled before `setCodeCopies` keeps the copies it has.
  return remember(mapperCache, `${codeCopies()}:${configHash(config)}`, () => {
    const check = validateMapperConfig(config);
    if (!check.ok) invalid(check.errors);
    const cfg = config as MapperConfig;
    const scope = newScope();
    const names = (cfg.vars ?? []).map((v) => v.name);
    // Each var's value also lives in a loop slot so `vars.<name>` reads are slot reads (unique names only:
    // with a repeated name, which definition a read sees depends on when it runs).
    const varSlots = names.map(() => scope.slots.count++);
    // The root's fields too: `message.…`, `ctx.…`, `meta.…` start from a slot.
    const fieldSlots = ROOT_FIELDS.map(() => scope.slots.count++);
    scope.fields = new Map(ROOT_FIELDS.map((f, i) => [f, fieldSlots[i]!]));
    const [messageSlot, ctxSlot, metaSlot] = fieldSlots as [number, number, number];
    const observed = { vars: true };
    if (new Set(names).size === names.length) {
      scope.vars = new Map(names.map((n, i) => [n, varSlots[i]!]));
      observed.vars = false;
      scope.observed = observed;
    }
    // Each var and the output is a block; the run loop charges its count inline (no wrapper per var).
    const parts = (cfg.vars ?? []).map((v, i) => codeFor(i).createCompiler().measure(v.expr, scope));
    const vars = parts.map((p) => p.node);
    const costs = parts.map((p) => p.cost);
    const outputCode = codeFor(names.length);
    const { node: output, cost: outputCost } = outputCode.createCompiler().measure(cfg.output, scope);
    const slotCount = scope.slots.count;
    // Nothing can see the `vars` object (every var read is a slot read): it is not built. Nothing can see
    // the root either (no empty or computed path, no helper), and without a helper nothing can re-enter
    // this mapper while it runs: one root and one state are reused, reset per run and cleared on exit so
    // they keep no reference to the caller's data.
    if (!observed.vars) {
      const root = {
        message: undefined as unknown,
        ctx: undefined as unknown,
        meta: undefined as unknown,
        vars: UNOBSERVED,
      };
      const s: EvalState = { nodes: 0, locals: new Array<unknown>(slotCount).fill(undefined), root };
      const outputSlots = outputCode.slotArrayOf(output);
      const outputObject = outputCode.slotObjectOf(output);
      const locals = s.locals;
      return (input, stats) => {
        root.message = input.message;
        root.ctx = input.ctx;
        root.meta = input.meta ?? {};
        locals[messageSlot] = field(root.message);
        locals[ctxSlot] = field(root.ctx);
        locals[metaSlot] = field(root.meta);
        s.nodes = 0;
        let i = 0;
        try {
          for (; i < vars.length; i++) {
            s.nodes += costs[i]!;
            if (s.nodes > MAX_NODES) nodesExceeded();
            const r = vars[i]!(root, s);
            locals[varSlots[i]!] = r === undefined ? null : r;
          }
          s.nodes += outputCost;
          if (s.nodes > MAX_NODES) nodesExceeded();
          if (outputSlots !== undefined) {
            // The usual output, an array listing vars: built and size-checked in one pass.
            if (stats) stats.nodes = s.nodes;
            return slotArrayChecked(locals, outputSlots);
          }
          if (outputObject !== undefined) {
            // The other usual output, an object of vars: likewise.
            if (stats) stats.nodes = s.nodes;
            return slotObjectChecked(locals, outputObject);
          }
          const out = output(root, s);
          const result = out === undefined ? null : out;
          if (stats) stats.nodes = s.nodes;
          checkOutputSize(result);
          return result;
        } catch (err) {
          throw stopped(err, i < vars.length ? `/vars/${i}/expr` : "/output", s.nodes, stats);
        } finally {
          root.message = root.ctx = root.meta = undefined;
          locals.fill(undefined);
        }
      };
    }
    const plain = !names.includes("__proto__");
    return (input, stats) => {
      const varValues: Record<string, unknown> = {};
      const root = { message: input.message, ctx: input.ctx, meta: input.meta ?? {}, vars: varValues };
      const s: EvalState = { nodes: 0, locals: new Array(slotCount), root };
      s.locals[messageSlot] = field(root.message);
      s.locals[ctxSlot] = field(root.ctx);
      s.locals[metaSlot] = field(root.meta);
      let i = 0;
      try {
        // In order: a later var sees earlier ones; a forward reference reads null (not yet defined).
        for (; i < vars.length; i++) {
          s.nodes += costs[i]!;
          if (s.nodes > MAX_NODES) nodesExceeded();
          const r = vars[i]!(root, s);
          const v = r === undefined ? null : r;
          s.locals[varSlots[i]!] = v;
          if (plain) varValues[names[i]!] = v;
          else defineKey(varValues, names[i]!, v);
        }
        s.nodes += outputCost;
        if (s.nodes > MAX_NODES) nodesExceeded();
        const out = output(root, s);
        const result = out === undefined ? null : out;
        if (stats) stats.nodes = s.nodes;
        checkOutputSize(result);
        return result;
      } catch (err) {
        throw stopped(err, i < vars.length ? `/vars/${i}/expr` : "/output", s.nodes, stats);
      }
    };
  });
}

/**
 * Compiles one expression for plain JsonLogic use: `data` is the `var` root (docs/mapper.md, "Using the
 * library"). Validation errors throw MapperRuntimeError `mapper.invalid_config`. The node and value-length
 * guards apply.
 */
export function compileExpression(expr: unknown): (data: unknown) => unknown {
  return remember(expressionCache, configHash(expr), () => {
    const errors = validateExpression(expr);
    if (errors.length > 0) invalid(errors);
    const plan = scan(expr);
    // Without loops, evaluated nodes ≤ operators in the expression: under the budget, nothing to count.
    const counting = plan.loops || plan.nodes > MAX_NODES;
    const scope = newScope();
    // The top block's count is charged by the runner below (no wrapper closure around the root).
    const { node, cost } = createCompiler(counting).measure(expr, scope);
    const k = constantOf(node);
    if (k !== undefined) {
      const value = k.value === undefined ? null : k.value;
      return () => value;
    }
    // A plain `var` read needs no state: it is the runner.
    if (!counting && isStandalone(node)) return node as (data: unknown) => unknown;
    if (!counting && !plan.calls && scope.slots.count === 0) {
      // Nothing writes the state (no counter, no loop slots) and nothing reads `root`: share one.
      const shared: EvalState = { nodes: 0, locals: NO_LOCALS, root: null };
      return (data) => {
        const v = node(data, shared);
        return v === undefined ? null : v;
      };
    }
    const top = counting ? cost : 0;
    if (top > MAX_NODES) return () => nodesExceeded();
    if (!plan.calls && scope.slots.count === 0) {
      // Loops in JsonLogic form only: the state holds just the counter, and without a helper nothing can
      // re-enter this expression while it runs. One state, reset per run; nothing in it refers to data.
      const shared: EvalState = { nodes: 0, locals: NO_LOCALS, root: null };
      return (data) => {
        shared.nodes = top;
        const v = node(data, shared);
        return v === undefined ? null : v;
      };
    }
    // One state object per compiled expression, reset per run, instead of one allocation per run. A run
    // that re-enters the same expression (a `call.*` helper evaluating it) finds it busy and gets a fresh one.
    const slots = scope.slots.count;
    const fresh = (data: unknown): EvalState => ({
      nodes: 0,
      locals: slots > 0 ? [] : NO_LOCALS,
      root: data,
    });
    const shared = fresh(null);
    let busy = false;
    return (data) => {
      if (busy) {
        const s = fresh(data);
        s.nodes = top;
        const v = node(data, s);
        return v === undefined ? null : v;
      }
      busy = true;
      shared.nodes = top;
      shared.root = data;
      try {
        const v = node(data, shared);
        return v === undefined ? null : v;
      } finally {
        // Do not keep the caller's data alive through the cached state.
        shared.root = null;
        for (let i = 0; i < slots; i++) shared.locals[i] = undefined;
        busy = false;
      }
    };
  });
}

/** Evaluates one expression against `data` (compiled once, then cached). */
export function evaluateExpression(expr: unknown, data: unknown): unknown {
  return compileExpression(expr)(data);
}
