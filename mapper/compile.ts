/**
 * Config → tree of closures, built once and cached by the config's stable hash. No `eval`, no
 * `new Function`: each operator factory returns a closure specialised for its arguments (arity, static var
 * paths, constant operands, constant folding), so evaluation allocates only the values it produces.
 *
 * Node budget: every operator is one node, as before, but nodes are charged per block rather than per
 * node. A block is a subtree whose operators all run whenever its root runs (a var, the output, a branch of
 * `if`, a later operand of `and`/`or`, a `var` default, one loop iteration); its operator count is known at
 * compile time and charged with one add on entry. The count is the same as counting node by node; the
 * guard fires on entering the block that would cross 10k instead of inside it.
 */
import { MapperRuntimeError } from "./errors.ts";
import { getFunction } from "./functions/registry.ts";
import {
  CALL_TIMEOUT_MS,
  charge,
  checkLength,
  checkOutputSize,
  type EvalState,
  MAX_DEPTH,
  MAX_NODES,
  nodesExceeded,
  slotArrayChecked,
  timed,
} from "./guards.ts";
import { configHash } from "./hash.ts";
import { iterOperators } from "./operators/iter.ts";
import { isOperator, OPERATORS } from "./operators/table.ts";
import type { Compiler, Node, Scope } from "./operators/types.ts";
import { constantNode, constantOf, defineKey, isPlainObject, isTotal } from "./operators/types.ts";
import { isStandalone, slotOf } from "./operators/var.ts";
import type { MapperConfig, MapperInput } from "./types.ts";
import { validateExpression, validateMapperConfig } from "./validate.ts";

/**
 * Operators whose implementation can raise an ordinary error on odd input (helpers, coercions of deep
 * structures). Only they pay for a try/catch, and not when their node catches inline (`total`: `substr`,
 * `merge`); the JsonLogic core operators cannot throw on JSON values (`cat`, `in` and the comparisons catch
 * the coercions of hostile structures inline).
 */
const RISKY = (op: string) => op.includes(".") || op === "substr" || op === "merge";

/** Operators that can throw: an ordinary error yields null (spec rule 4); guard errors propagate. */
function safe(inner: Node): Node {
  return (d, s) => {
    try {
      return inner(d, s);
    } catch (err) {
      if (err instanceof MapperRuntimeError) throw err;
      return null;
    }
  };
}

/** Charges `n` nodes each time `inner` runs (see the header: one add per block). */
function counted(inner: Node, n: number): Node {
  return (d, s) => {
    charge(s, n);
    return inner(d, s);
  };
}

/** True when nothing in `expr` reads data or calls out: it can be evaluated once at compile time. */
function isDataIndependent(expr: unknown): boolean {
  if (expr === null || typeof expr !== "object") return true;
  if (Array.isArray(expr)) return expr.every(isDataIndependent);
  for (const k of Object.keys(expr)) {
    if (k === "var" || k === "call" || k.startsWith("call.") || k.startsWith("regex.")) return false;
    if (!isDataIndependent((expr as Record<string, unknown>)[k])) return false;
  }
  return true;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * Constant folding: a data-independent operator is evaluated once and becomes a constant (frozen when it
 * is a structure, so a caller cannot mutate what later runs return). Guard errors are left to run time.
 */
function fold(expr: unknown, node: Node): Node | null {
  if (!isDataIndependent(expr)) return null;
  try {
    const v = deepFreeze(node(null, { nodes: 0, locals: [], root: null }));
    return constantNode(v === undefined ? null : v);
  } catch {
    return null;
  }
}

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

function compileCall(fn: unknown, args: unknown, c: Compiler, scope: Scope): Node {
  const spec = typeof fn === "string" ? getFunction(fn) : undefined;
  if (spec === undefined) return () => null;
  const entries = Object.entries(isPlainObject(args) ? args : {}).map(
    ([k, v]) => [k, c.compile(v, scope)] as const,
  );
  return (d, s) => {
    const given: Record<string, unknown> = {};
    for (const [k, node] of entries) defineKey(given, k, node(d, s));
    const result = timed("mapper.call_timeout", CALL_TIMEOUT_MS, () => spec.run(given, s.root));
    return typeof result === "string" || Array.isArray(result) ? checkLength(result) : result;
  };
}

/**
 * A compiler instance tracks nesting depth and the operator count of the current block while it walks one
 * config. Without `counting` (an expression that provably stays under the budget) blocks are not charged.
 */
function createCompiler(counting = true): Compiler {
  let depth = 0;
  let cost = 0;
  const compiler: Compiler = {
    charged(expr: unknown, scope: Scope, extra = 0): Measured {
      const m = compiler.measure(expr, scope);
      const n = m.cost + extra;
      return { node: m.node, cost: counting && n > 0 ? n : 0 };
    },
    /** Compiles a block and returns its operator count for the caller to charge (no wrapper). */
    measure(expr: unknown, scope: Scope): Measured {
      const outer = cost;
      cost = 0;
      try {
        const node = compiler.compile(expr, scope);
        return { node, cost };
      } finally {
        cost = outer;
      }
    },
    block(expr: unknown, scope: Scope, extra = 0): Node {
      const outer = cost;
      cost = 0;
      try {
        const node = compiler.compile(expr, scope);
        const n = cost + extra;
        return counting && n > 0 ? counted(node, n) : node;
      } finally {
        cost = outer;
      }
    },
    compile(expr: unknown, scope: Scope): Node {
      if (++depth > MAX_DEPTH) {
        throw new MapperRuntimeError(
          "mapper.depth_exceeded",
          `expression nested deeper than ${MAX_DEPTH} levels`,
        );
      }
      try {
        return compileNode(expr, scope);
      } finally {
        depth--;
      }
    },
  };
  const compileNode = (expr: unknown, scope: Scope): Node => {
    if (expr === null || expr === undefined || typeof expr !== "object") {
      return constantNode(expr === undefined ? null : expr);
    }
    if (Array.isArray(expr)) {
      const nodes = expr.map((e) => compiler.compile(e, scope));
      // Constant items are copied from a template (one slice), only the others are evaluated; a new
      // array every run, as before, since the caller may keep or change it.
      const template: unknown[] = nodes.map((n) => constantOf(n)?.value ?? null);
      const dynamic = nodes.flatMap((n, i) => (constantOf(n) === undefined ? [i] : []));
      const dynNodes = dynamic.map((i) => nodes[i]!);
      // `{"var": "vars.x"}` items (an output listing vars) read their slot inline: no call.
      const slots = dynNodes.map((n) => slotOf(n) ?? -1);
      if (dynamic.length === nodes.length && slots.every((k) => k >= 0)) {
        // Only whole-slot reads (`[{"var": "vars.a"}, {"var": "vars.b"}]`): pushed in order, no template.
        const node: Node = (_d, s) => {
          const out = new Array<unknown>(slots.length);
          for (let j = 0; j < slots.length; j++) out[j] = s.locals[slots[j]!] ?? null;
          return out;
        };
        SLOT_ARRAYS.set(node, slots);
        return node;
      }
      return (d, s) => {
        const out = template.slice();
        for (let j = 0; j < dynamic.length; j++) {
          const k = slots[j]!;
          const v = k < 0 ? dynNodes[j]!(d, s) : s.locals[k];
          out[dynamic[j]!] = k >= 0 && v === undefined ? null : v;
        }
        return out;
      };
    }
    const obj = expr as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 1) {
      const key = keys[0]!;
      if (isOperator(key)) {
        const mark = cost++;
        const inner = OPERATORS[key]!.compile(obj[key], compiler, scope);
        const node = RISKY(key) && !isTotal(inner) ? safe(inner) : inner;
        const folded = fold(expr, node);
        if (folded === null) return node;
        cost = mark; // a folded operator is never evaluated at run time
        return folded;
      }
      if (key === "call" || key.startsWith("call.")) {
        // A helper is handed the evaluation root (`vars` included).
        if (scope.observed !== undefined) scope.observed.vars = true;
      }
      if (key === "call") {
        cost++;
        const v = isPlainObject(obj.call) ? obj.call : {};
        return safe(compileCall(v.fn, v.args, compiler, scope));
      }
      if (key.startsWith("call.")) {
        cost++;
        return safe(compileCall(key.slice(5), obj[key], compiler, scope));
      }
    }
    // A literal object whose values are expressions (contract §6 templates).
    const names = keys.slice();
    const nodes = keys.map((k) => compiler.compile(obj[k], scope));
    if (names.includes("__proto__")) {
      return (d, s) => {
        const out: Record<string, unknown> = {};
        for (let i = 0; i < names.length; i++) {
          const v = nodes[i]!(d, s);
          defineKey(out, names[i]!, v === undefined ? null : v);
        }
        return out;
      };
    }
    const slots = nodes.map((n) => slotOf(n) ?? -1);
    // Each run copies a template that already has every key (in the same order) and then replaces the
    // values: adding the keys one by one goes through a structure transition per key at a property site
    // shared by every template (20 keys: ≈ 350 ns against ≈ 180 ns, bench state).
    const shape: Record<string, unknown> = {};
    for (const k of names) shape[k] = null;
    return (d, s) => {
      const out: Record<string, unknown> = { ...shape };
      for (let i = 0; i < names.length; i++) {
        const k = slots[i]!;
        const v = k < 0 ? nodes[i]!(d, s) : s.locals[k];
        out[names[i]!] = v === undefined ? null : v;
      }
      return out;
    };
  };
  return compiler;
}

/** Array templates made only of whole-slot reads → their slots (the run loop builds such an output itself). */
const SLOT_ARRAYS = new WeakMap<Node, number[]>();

interface Measured {
  node: Node;
  cost: number;
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

const mapperCache = new Map<string, CompiledMapper>();
const expressionCache = new Map<string, (data: unknown) => unknown>();

/**
 * Validates and compiles a `map.custom_json` config once (cached by stable hash; treat configs as
 * immutable once compiled). Throws MapperRuntimeError `mapper.invalid_config` (with `details`) or
 * `mapper.depth_exceeded` for a config that cannot run.
 */
export function compileMapper(config: unknown): CompiledMapper {
  return remember(mapperCache, configHash(config), () => {
    const check = validateMapperConfig(config);
    if (!check.ok) invalid(check.errors);
    const cfg = config as MapperConfig;
    const compiler = createCompiler();
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
    const parts = (cfg.vars ?? []).map((v) => compiler.measure(v.expr, scope));
    const vars = parts.map((p) => p.node);
    const costs = parts.map((p) => p.cost);
    const { node: output, cost: outputCost } = compiler.measure(cfg.output, scope);
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
      const outputSlots = SLOT_ARRAYS.get(output);
      const locals = s.locals;
      return (input, stats) => {
        root.message = input.message;
        root.ctx = input.ctx;
        root.meta = input.meta ?? {};
        locals[messageSlot] = field(root.message);
        locals[ctxSlot] = field(root.ctx);
        locals[metaSlot] = field(root.meta);
        s.nodes = 0;
        try {
          for (let i = 0; i < vars.length; i++) {
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
          const out = output(root, s);
          const result = out === undefined ? null : out;
          if (stats) stats.nodes = s.nodes;
          checkOutputSize(result);
          return result;
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
      // In order: a later var sees earlier ones; a forward reference reads null (not yet defined).
      for (let i = 0; i < vars.length; i++) {
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
    };
  });
}

/**
 * Compiles one expression for plain JsonLogic use: `data` is the `var` root (contract §6). Validation
 * errors throw MapperRuntimeError `mapper.invalid_config`. The node and value-length guards apply.
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
