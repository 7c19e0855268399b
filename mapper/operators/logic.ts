/** Control, logic and comparison operators with json-logic-js semantics (JS loose/strict comparison). */
import type { Node, OperatorSpec } from "./types.ts";
import { argList, truthy } from "./types.ts";

const args = { kind: "args" } as const;
const NULL: Node = () => null;

function compileArgs(
  value: unknown,
  c: Parameters<OperatorSpec["compile"]>[1],
  scope: Parameters<OperatorSpec["compile"]>[2],
) {
  return argList(value).map((a) => c.compile(a, scope));
}

/** Builds a binary operator specialised on arity so the hot path has no array allocation. */
function binary(fn: (a: unknown, b: unknown) => unknown): OperatorSpec {
  return {
    shape: args,
    compile(value, c, scope) {
      const [a = NULL, b = NULL] = compileArgs(value, c, scope);
      return (d, s) => fn(a(d, s), b(d, s));
    },
  };
}

/** `<` and `<=` accept a third argument: `a < b < c` ("between"). */
function between(fn: (a: unknown, b: unknown) => boolean): OperatorSpec {
  return {
    shape: args,
    compile(value, c, scope) {
      const nodes = compileArgs(value, c, scope);
      const [a = NULL, b = NULL, third] = nodes;
      if (third === undefined) return (d, s) => fn(a(d, s), b(d, s));
      return (d, s) => {
        const bv = b(d, s);
        return fn(a(d, s), bv) && fn(bv, third(d, s));
      };
    },
  };
}

// Loose comparisons are JsonLogic's semantics (json-logic-js uses the JS operators); biome would flag them.
// biome-ignore lint/suspicious/noDoubleEquals: JsonLogic `==` is JavaScript loose equality
const looseEq = (a: unknown, b: unknown) => a == b;
// biome-ignore lint/suspicious/noDoubleEquals: JsonLogic `!=` is JavaScript loose inequality
const looseNe = (a: unknown, b: unknown) => a != b;
// JS relational operators on JSON values, exactly as json-logic-js applies them.
type Rel = (a: unknown, b: unknown) => boolean;
const gt: Rel = (a, b) => (a as number) > (b as number);
const ge: Rel = (a, b) => (a as number) >= (b as number);
const lt: Rel = (a, b) => (a as number) < (b as number);
const le: Rel = (a, b) => (a as number) <= (b as number);

export const logicOperators: Record<string, OperatorSpec> = {
  if: {
    shape: args,
    compile(value, c, scope) {
      const nodes = compileArgs(value, c, scope);
      if (nodes.length === 3) {
        const [cond, yes, no] = nodes as [Node, Node, Node];
        return (d, s) => (truthy(cond(d, s)) ? yes(d, s) : no(d, s));
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
      const nodes = compileArgs(value, c, scope);
      return (d, s) => {
        let current: unknown = null;
        for (const n of nodes) {
          current = n(d, s);
          if (!truthy(current)) return current;
        }
        return current;
      };
    },
  },
  or: {
    shape: args,
    compile(value, c, scope) {
      const nodes = compileArgs(value, c, scope);
      return (d, s) => {
        let current: unknown = null;
        for (const n of nodes) {
          current = n(d, s);
          if (truthy(current)) return current;
        }
        return current;
      };
    },
  },
  "!": {
    shape: args,
    compile(value, c, scope) {
      const [a = NULL] = compileArgs(value, c, scope);
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
  in: binary((a, b) => {
    if (typeof b === "string") return b.includes(String(a));
    if (Array.isArray(b)) return b.indexOf(a) !== -1;
    return false;
  }),
};
