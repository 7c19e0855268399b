/** Control, logic and comparison operators with json-logic-js semantics (JS loose/strict comparison). */
import type { Node, OperatorSpec } from "./types.ts";
import { argList, compileUsed, constantOf, NULL_NODE, truthy } from "./types.ts";

const args = { kind: "args" } as const;
const NULL = NULL_NODE;

type C = Parameters<OperatorSpec["compile"]>[1];
type S = Parameters<OperatorSpec["compile"]>[2];

/** Compiles the arguments; those after the first `always` are evaluated conditionally (own blocks). */
function compileArgs(value: unknown, c: C, scope: S, always = Number.POSITIVE_INFINITY): Node[] {
  return argList(value).map((a, i) => (i < always ? c.compile(a, scope) : c.block(a, scope)));
}

/** Operators that read only their first `n` arguments: see `compileUsed`. */
function firstArgs(value: unknown, c: C, scope: S, n: number): Node[] {
  return compileUsed(value, c, scope, n);
}

/**
 * Builds a binary operator specialised on arity and on constant operands, so the hot path is one closure
 * with no array allocation (`{"==": [{"var": "x"}, 1]}` becomes `(d) => x(d) == 1`).
 */
function binary(fn: (a: unknown, b: unknown) => unknown): OperatorSpec {
  return {
    shape: args,
    compile(value, c, scope) {
      const [a = NULL, b = NULL] = firstArgs(value, c, scope, 2);
      const kb = constantOf(b);
      if (kb !== undefined) {
        const bv = kb.value;
        return (d, s) => fn(a(d, s), bv);
      }
      const ka = constantOf(a);
      if (ka !== undefined) {
        const av = ka.value;
        return (d, s) => fn(av, b(d, s));
      }
      return (d, s) => fn(a(d, s), b(d, s));
    },
  };
}

/** `<` and `<=` accept a third argument: `a < b < c` ("between"); the third is evaluated only if needed. */
function between(fn: (a: unknown, b: unknown) => boolean | null): OperatorSpec {
  return {
    shape: args,
    compile(value, c, scope) {
      const list = argList(value);
      for (let i = 3; i < list.length; i++) c.block(list[i], scope);
      const nodes = compileArgs(list.slice(0, 3), c, scope, 2);
      const [a = NULL, b = NULL, third] = nodes;
      if (third === undefined) {
        const kb = constantOf(b);
        if (kb !== undefined) {
          const bv = kb.value;
          return (d, s) => fn(a(d, s), bv);
        }
        return (d, s) => fn(a(d, s), b(d, s));
      }
      return (d, s) => {
        const bv = b(d, s);
        return fn(a(d, s), bv) && fn(bv, third(d, s));
      };
    },
  };
}

/**
 * Runs a JS comparison, returning null when it throws. JSON data can make the operators' ToPrimitive
 * throw (an object whose own `toString`/`valueOf` keys hold data: `{"toString": 1}` → TypeError "No
 * default value"), and an error inside an operator yields null (contract §6). Only an object operand can
 * throw, so scalars keep the plain, inlinable path (found by tools/chaos/fuzz-mapper.ts).
 */
function guarded<T>(fn: (a: unknown, b: unknown) => T): (a: unknown, b: unknown) => T | null {
  const slow = (a: unknown, b: unknown): T | null => {
    try {
      return fn(a, b);
    } catch {
      return null;
    }
  };
  return (a, b) =>
    (typeof a === "object" && a !== null) || (typeof b === "object" && b !== null) ? slow(a, b) : fn(a, b);
}

// Loose comparisons are JsonLogic's semantics (json-logic-js uses the JS operators); biome would flag them.
// biome-ignore lint/suspicious/noDoubleEquals: JsonLogic `==` is JavaScript loose equality
const looseEq = guarded((a, b) => a == b);
// biome-ignore lint/suspicious/noDoubleEquals: JsonLogic `!=` is JavaScript loose inequality
const looseNe = guarded((a, b) => a != b);
// JS relational operators on JSON values, exactly as json-logic-js applies them.
type Rel = (a: unknown, b: unknown) => boolean | null;
const gt: Rel = guarded((a, b) => (a as number) > (b as number));
const ge: Rel = guarded((a, b) => (a as number) >= (b as number));
const lt: Rel = guarded((a, b) => (a as number) < (b as number));
const le: Rel = guarded((a, b) => (a as number) <= (b as number));

const inOp = guarded((a: unknown, b: unknown): boolean => {
  if (typeof b === "string") return b.includes(String(a));
  if (Array.isArray(b)) return b.indexOf(a) !== -1;
  return false;
});

export const logicOperators: Record<string, OperatorSpec> = {
  if: {
    shape: args,
    compile(value, c, scope) {
      // Only the first condition always runs; branches and later conditions are blocks of their own.
      const nodes = compileArgs(value, c, scope, 1);
      if (nodes.length === 3) {
        const [cond, yes, no] = nodes as [Node, Node, Node];
        return (d, s) => (truthy(cond(d, s)) ? yes(d, s) : no(d, s));
      }
      if (nodes.length === 2) {
        const [cond, yes] = nodes as [Node, Node];
        return (d, s) => (truthy(cond(d, s)) ? yes(d, s) : null);
      }
      // if / else-if chains: pairs of (condition, consequent), then an optional else.
      return (d, s) => {
        let i = 0;
        for (; i < nodes.length - 1; i += 2) {
          if (truthy(nodes[i]!(d, s))) return nodes[i + 1]!(d, s);
        }
        return i === nodes.length - 1 ? nodes[i]!(d, s) : null;
      };
    },
  },
  and: {
    shape: args,
    compile(value, c, scope) {
      const nodes = compileArgs(value, c, scope, 1);
      if (nodes.length === 1) return nodes[0]!;
      if (nodes.length === 2) {
        const [a, b] = nodes as [Node, Node];
        return (d, s) => {
          const x = a(d, s);
          return truthy(x) ? b(d, s) : x;
        };
      }
      return (d, s) => {
        let current: unknown = null;
        for (let i = 0; i < nodes.length; i++) {
          current = nodes[i]!(d, s);
          if (!truthy(current)) return current;
        }
        return current;
      };
    },
  },
  or: {
    shape: args,
    compile(value, c, scope) {
      const nodes = compileArgs(value, c, scope, 1);
      if (nodes.length === 1) return nodes[0]!;
      if (nodes.length === 2) {
        const [a, b] = nodes as [Node, Node];
        return (d, s) => {
          const x = a(d, s);
          return truthy(x) ? x : b(d, s);
        };
      }
      return (d, s) => {
        let current: unknown = null;
        for (let i = 0; i < nodes.length; i++) {
          current = nodes[i]!(d, s);
          if (truthy(current)) return current;
        }
        return current;
      };
    },
  },
  "!": {
    shape: args,
    compile(value, c, scope) {
      const [a = NULL] = firstArgs(value, c, scope, 1);
      return (d, s) => !truthy(a(d, s));
    },
  },
  "==": binary(looseEq),
  "!=": binary(looseNe),
  "===": binary((a, b) => a === b),
  "!==": binary((a, b) => a !== b),
  ">": binary(gt),
  ">=": binary(ge),
  "<": between(lt),
  "<=": between(le),
  in: {
    shape: args,
    compile(value, c, scope) {
      const list = argList(value);
      for (let i = 2; i < list.length; i++) c.block(list[i], scope);
      const a = list.length > 0 ? c.compile(list[0], scope) : NULL;
      const lit = list[1];
      // A literal list of scalars is never returned by `in`, so it is built once instead of per run.
      if (Array.isArray(lit) && lit.every((x) => x === null || typeof x !== "object")) {
        const items: readonly unknown[] = lit.slice();
        return (d, s) => items.indexOf(a(d, s)) !== -1;
      }
      const b = list.length > 1 ? c.compile(lit, scope) : NULL;
      return (d, s) => inOp(a(d, s), b(d, s));
    },
  },
};
