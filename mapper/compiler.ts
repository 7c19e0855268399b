/**
 * Expression → tree of closures. No `eval`, no `new Function`: each operator factory returns a closure
 * specialised for its arguments (arity, static var paths, constant operands, constant folding), so
 * evaluation allocates only the values it produces. `compile.ts` caches the trees and runs them; this module
 * and the operators it uses are the code that `copies.ts` loads once per var position.
 *
 * Node budget: every operator is one node, as before, but nodes are charged per block rather than per
 * node. A block is a subtree whose operators all run whenever its root runs (a var, the output, a branch of
 * `if`, a later operand of `and`/`or`, a `var` default, one loop iteration); its operator count is known at
 * compile time and charged with one add on entry. The count is the same as counting node by node; the
 * guard fires on entering the block that would cross 10k instead of inside it.
 */
import { MapperRuntimeError } from "./errors.ts";
import { getFunction } from "./functions/registry.ts";
import { CALL_TIMEOUT_MS, charge, MAX_DEPTH, type SlotObject, timed } from "./guards.ts";
import { isOperator, OPERATORS } from "./operators/table.ts";
import type { Compiler, Node, Scope } from "./operators/types.ts";
import {
  constantNode,
  constantOf,
  defineKey,
  isPlainObject,
  isScopedBlock,
  isTotal,
} from "./operators/types.ts";
import { slotOf } from "./operators/var.ts";

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

function compileCall(fn: unknown, args: unknown, c: Compiler, scope: Scope): Node {
  const spec = typeof fn === "string" ? getFunction(fn) : undefined;
  if (spec === undefined) return () => null;
  const entries = Object.entries(isPlainObject(args) ? args : {}).map(
    ([k, v]) => [k, c.compile(v, scope)] as const,
  );
  return (d, s) => {
    const given: Record<string, unknown> = {};
    for (const [k, node] of entries) defineKey(given, k, node(d, s));
    // No intermediate-length check on the result: a helper's output is bounded by its input (capped at
    // MAX_HELPER_INPUT_CHARS), and html_to_text's fallback returns the message text itself, which on a
    // 1.16 M-character text-only message failed with mapper.output_too_large although nothing grew.
    return timed("mapper.call_timeout", CALL_TIMEOUT_MS, () => spec.run(given, s.root), `call.${fn}`);
  };
}

/**
 * A compiler instance tracks nesting depth and the operator count of the current block while it walks one
 * config. Without `counting` (an expression that provably stays under the budget) blocks are not charged.
 */
export function createCompiler(counting = true): Compiler {
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
    if (isScopedBlock(obj)) return compileBlock(obj, scope);
    // A literal object whose values are expressions (a template: docs/mapper.md, "Expressions and templates").
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
    const node: Node = (d, s) => {
      const out: Record<string, unknown> = { ...shape };
      for (let i = 0; i < names.length; i++) {
        const k = slots[i]!;
        const v = k < 0 ? nodes[i]!(d, s) : s.locals[k];
        out[names[i]!] = v === undefined ? null : v;
      }
      return out;
    };
    if (slots.every((k) => k >= 0)) SLOT_OBJECTS.set(node, { names, slots, shape });
    return node;
  };
  /**
   * A scoped block: its vars run top to bottom into slots of their own (a later one reads an earlier one
   * through `vars.<name>`, shadowing an enclosing var of the same name), then its output. The vars are
   * evaluated whenever the block is, so their operators are charged with the enclosing block.
   */
  const compileBlock = (obj: Record<string, unknown>, scope: Scope): Node => {
    const list = Array.isArray(obj.vars) ? (obj.vars as unknown[]) : [];
    const defs = list.filter(isPlainObject).map((v) => ({ name: String(v.name), expr: v.expr }));
    const blockVars = new Map(scope.blockVars ?? []);
    const inner: Scope = { ...scope, blockVars };
    const steps: { slot: number; node: Node }[] = [];
    for (const def of defs) {
      // Compiled before its own name is bound: `vars.x` in x's expression reads the enclosing x.
      const node = compiler.compile(def.expr, { ...inner, blockVars: new Map(blockVars) });
      const slot = scope.slots.count++;
      blockVars.set(def.name, slot);
      steps.push({ slot, node });
    }
    const output = compiler.compile(obj.output, { ...inner, blockVars: new Map(blockVars) });
    return (d, s) => {
      for (let i = 0; i < steps.length; i++) {
        const step = steps[i]!;
        const v = step.node(d, s);
        s.locals[step.slot] = v === undefined ? null : v;
      }
      const out = output(d, s);
      return out === undefined ? null : out;
    };
  };
  return compiler;
}

const SLOT_ARRAYS = new WeakMap<Node, number[]>();
const SLOT_OBJECTS = new WeakMap<Node, SlotObject>();

/**
 * The keys, slots and keyed shape of an object template made only of whole-slot reads
 * (`{"subject": {"var": "vars.subject"}, …}`, the usual `output`): the run loop builds such an output
 * itself, checking its size as it goes.
 */
export function slotObjectOf(node: Node): SlotObject | undefined {
  return SLOT_OBJECTS.get(node);
}

/**
 * The slots of an array template made only of whole-slot reads (`[{"var": "vars.a"}, …]`): the run loop
 * builds such an output itself.
 */
export function slotArrayOf(node: Node): number[] | undefined {
  return SLOT_ARRAYS.get(node);
}

interface Measured {
  node: Node;
  cost: number;
}
