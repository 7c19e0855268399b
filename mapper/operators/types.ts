import type { EvalState } from "../guards.ts";

/** A compiled expression: evaluated against the current `var` root `d` and the run's state. */
export type Node = (d: unknown, s: EvalState) => unknown;

/** Lexical scope at compile time: loop aliases mapped to their slot in `EvalState.locals`. */
export interface Scope {
  aliases: ReadonlyMap<string, number>;
  /** shared slot counter of one compilation */
  slots: { count: number };
}

/** What an operator factory may call back into. */
export interface Compiler {
  compile(expr: unknown, scope: Scope): Node;
}

/**
 * Argument shape of an operator, the single source for the validator, the JSON Schema and the compiler:
 * - `args`: JsonLogic style, one expression or an array of expressions (`{"!": x}` ≡ `{"!": [x]}`)
 * - `iter`: `[over, logic(, initial)]` or the object form of contract §6 (`do`/`where`/`reduce`)
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

/** JsonLogic truthiness with the contract's choice that `{}` is falsy like `[]`. */
export function truthy(v: unknown): boolean {
  if (typeof v === "object" && v !== null) {
    if (Array.isArray(v)) return v.length > 0;
    for (const _ in v) return true;
    return false;
  }
  return !!v;
}

/** `{"op": x}` is sugar for `{"op": [x]}`. */
export function argList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
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
