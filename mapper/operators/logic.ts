/** Control, logic and comparison operators with json-logic-js semantics (JS loose/strict comparison). */
import { type BinaryOp, compareNode, compareSlow } from "./compare.ts";
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
 * Builds a binary comparison specialised on constant operands, so the hot path is one closure with no
 * array allocation (`{"==": [{"var": "x"}, 1]}` becomes `(d) => x(d) == 1`; see compare.ts).
 */
function binary(op: BinaryOp): OperatorSpec {
  return {
    shape: args,
    compile(value, c, scope) {
      const [a = NULL, b = NULL] = firstArgs(value, c, scope, 2);
      return compareNode(op, a, b, constantOf(a), constantOf(b));
    },
  };
}

/** `<` and `<=` accept a third argument: `a < b < c` ("between"); the third is evaluated only if needed. */
function between(op: "<" | "<="): OperatorSpec {
  return {
    shape: args,
    compile(value, c, scope) {
      const list = argList(value);
      for (let i = 3; i < list.length; i++) c.block(list[i], scope);
      const nodes = compileArgs(list.slice(0, 3), c, scope, 2);
      const [a = NULL, b = NULL, third] = nodes;
      if (third === undefined) return compareNode(op, a, b, constantOf(a), constantOf(b));
      return (d, s) => {
        const bv = b(d, s);
        return compareSlow(op, a(d, s), bv) && compareSlow(op, bv, third(d, s));
      };
    },
  };
}

/**
 * `in`: substring of a string or strict membership of an array, as json-logic-js. Only `String(needle)` of
 * an object can throw (a hostile `toString`), and that yields null (contract §6).
 */
function inValue(a: unknown, b: unknown): boolean | null {
  if (typeof b === "string") {
    if (typeof a === "object" && a !== null) {
      try {
        return b.includes(String(a));
      } catch {
        return null;
      }
    }
    return b.includes(String(a));
  }
  if (Array.isArray(b)) return b.indexOf(a) !== -1;
  return false;
}

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
  "==": binary("=="),
  "!=": binary("!="),
  "===": binary("==="),
  "!==": binary("!=="),
  ">": binary(">"),
  ">=": binary(">="),
  "<": between("<"),
  "<=": between("<="),
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
      const ka = constantOf(a);
      if (ka !== undefined && (typeof ka.value !== "object" || ka.value === null)) {
        // A scalar needle (`{"in": ["Re:", {"var": "subject"}]}`): its text is computed once.
        const needle = ka.value;
        const text = String(needle);
        return (d, s) => {
          const h = b(d, s);
          if (typeof h === "string") return h.includes(text);
          return Array.isArray(h) ? h.indexOf(needle) !== -1 : false;
        };
      }
      return (d, s) => inValue(a(d, s), b(d, s));
    },
  },
};
