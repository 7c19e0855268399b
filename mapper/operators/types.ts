import type { EvalState } from "../guards.ts";

/** A compiled expression: evaluated against the current `var` root `d` and the run's state. */
export type Node = (d: unknown, s: EvalState) => unknown;

/** Lexical scope at compile time: loop aliases mapped to their slot in `EvalState.locals`. */
export interface Scope {
  aliases: ReadonlyMap<string, number>;
  /** shared slot counter of one compilation */
  slots: { count: number };
  /**
   * In a mapper, where the `var` root is the evaluation root (not inside a JsonLogic-form loop body): var
   * name → the slot holding its value, so `vars.<name>…` reads a slot instead of two property lookups.
   */
  vars?: ReadonlyMap<string, number> | undefined;
  /**
   * With `vars`: set when something compiled in this scope may see the mapper's whole `vars` object (a
   * `vars` read that is not a slot read, an empty or computed path, a `call.*` helper given the root).
   * While it stays false the run does not build that object: every read of a var is a slot read.
   */
  observed?: { vars: boolean } | undefined;
  /**
   * In a mapper, where the `var` root is the evaluation root: `message`, `ctx`, `meta` → the slot holding
   * that field of the root, so `message.…` starts from a slot (the root object's shape never varies).
   */
  fields?: ReadonlyMap<string, number> | undefined;
  /**
   * In the body of a JsonLogic-form `reduce` whose root is never read whole: `current` and `accumulator`
   * (the keys of the `{current, accumulator}` item) → their slots, so no item object is built per
   * iteration. Consulted after `aliases` (an outer object-form alias still wins, as it did on the item);
   * dropped by a nested JsonLogic-form body, whose root is its own item.
   */
  item?: ReadonlyMap<string, number> | undefined;
  /**
   * Inside scoped blocks (`{"vars": [...], "output": …}`): block var name → its slot, innermost block
   * winning. `vars.<name>` reads such a slot first, whatever the `var` root is; other names fall through
   * to the enclosing vars.
   */
  blockVars?: ReadonlyMap<string, number> | undefined;
}

/**
 * What an operator factory may call back into. Node counting is static per block: `compile` is for a child
 * that is evaluated whenever its parent is (its nodes are charged with the parent's block); `block` is for a
 * child evaluated conditionally or repeatedly (a branch, a default, a loop body): it charges its own nodes,
 * plus `extra` (a loop iteration), each time it runs. The count is therefore exact, one add per block.
 */
export interface Compiler {
  compile(expr: unknown, scope: Scope): Node;
  block(expr: unknown, scope: Scope, extra?: number): Node;
  /** A block whose count the caller charges itself (loops charge per iteration without a wrapper). */
  measure(expr: unknown, scope: Scope): { node: Node; cost: number };
  /**
   * A block the caller charges inline (`charge(s, cost)` before running it): like `block` without the
   * wrapper closure. `cost` is 0 when it needs no charging (nothing to count, or counting is off).
   */
  charged(expr: unknown, scope: Scope, extra?: number): { node: Node; cost: number };
}

const CONSTANTS = new WeakMap<Node, { value: unknown }>();

/** A node that always returns `value` (a literal or a folded expression); operators may specialise on it. */
export function constantNode(value: unknown): Node {
  const node: Node = () => value;
  CONSTANTS.set(node, { value });
  return node;
}

/** The value of a constant node, or undefined when the node depends on data. */
export function constantOf(node: Node): { value: unknown } | undefined {
  return CONSTANTS.get(node);
}

/** Shared null node (absent optional argument). */
export const NULL_NODE: Node = constantNode(null);

/**
 * Argument shape of an operator, the single source for the validator, the JSON Schema and the compiler:
 * - `args`: JsonLogic style, one expression or an array of expressions (`{"!": x}` ≡ `{"!": [x]}`)
 * - `iter`: `[over, logic(, initial)]` or the object form (`do`/`where`/`reduce`; docs/mapper.md, "Array
 *   operators")
 * - `named`: an object of named argument expressions
 */
export type OpShape =
  | { kind: "args" }
  | { kind: "iter"; form: "do" | "where" | "reduce" }
  | { kind: "named"; props: readonly string[]; required: readonly string[] };

export interface OperatorSpec {
  shape: OpShape;
  compile(value: unknown, c: Compiler, scope: Scope): Node;
}

/**
 * JsonLogic truthiness, except that `{}` is falsy like `[]` (docs/mapper.md, "Differences from
 * json-logic-js").
 */
export function truthy(v: unknown): boolean {
  if (typeof v === "object" && v !== null) {
    if (Array.isArray(v)) return v.length > 0;
    for (const _ in v) return true;
    return false;
  }
  return !!v;
}

/**
 * Compiles the arguments an operator evaluates (the first `used`); the rest are compiled only for their
 * compile-time checks and dropped, so the static node count of the block holds only evaluated nodes.
 */
export function compileUsed(value: unknown, c: Compiler, scope: Scope, used: number): Node[] {
  const list = argList(value);
  for (let i = used; i < list.length; i++) c.block(list[i], scope);
  return list.slice(0, used).map((x) => c.compile(x, scope));
}

/** `{"op": x}` is sugar for `{"op": [x]}`. */
export function argList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

/** An object with exactly the keys `vars` and `output` is a scoped block (docs/mapper.md, "Scoped blocks"). */
export function isScopedBlock(obj: Record<string, unknown>): boolean {
  const keys = Object.keys(obj);
  return keys.length === 2 && Object.hasOwn(obj, "vars") && Object.hasOwn(obj, "output");
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Sets `key` as an own data property even when it is `__proto__` (plain assignment would set the prototype). */
export function defineKey(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else target[key] = value;
}

const TOTAL = new WeakSet<Node>();

/**
 * Marks a node of an operator the compiler would wrap in a try/catch (substr, merge, …) as handling its
 * own errors: it never throws an ordinary error (guard errors still propagate), so it needs no wrapper.
 */
export function total(node: Node): Node {
  TOTAL.add(node);
  return node;
}

export function isTotal(node: Node): boolean {
  return TOTAL.has(node);
}
