/** Control, logic and comparison operators with json-logic-js semantics (JS loose/strict comparison). */
import { charge } from "../guards.ts";
import { type BinaryOp, compareNode, compareSlow, fieldTest } from "./compare.ts";
import type { Node, OperatorSpec } from "./types.ts";
import { argList, compileUsed, constantOf, NULL_NODE, truthy } from "./types.ts";
import { fieldOf, readField, slotOf } from "./var.ts";

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
 * an object can throw (a hostile `toString`), and that yields null (docs/mapper.md, "Errors").
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

/** A conditionally evaluated argument and the nodes to charge before running it (0: none). */
interface Block {
  node: Node;
  cost: number;
}

/** The arguments of `if`/`and`/`or`: the first always runs (the parent's block), the rest are blocks. */
function blocks(value: unknown, c: C, scope: S): Block[] {
  return argList(value).map((a, i) =>
    i === 0 ? { node: c.compile(a, scope), cost: 0 } : c.charged(a, scope),
  );
}

/**
 * `if` with a condition and two branches. Each branch charges its own nodes inline (no wrapper closure);
 * a constant branch (a literal or folded operator, which costs nothing) is returned without a call.
 */
function ifElse(cond: Node, yes: Block, no: Block): Node {
  const ky = constantOf(yes.node);
  const kn = constantOf(no.node);
  const [y, cy, n, cn] = [yes.node, yes.cost, no.node, no.cost];
  const slot = slotOf(cond) ?? -1;
  if (ky !== undefined && kn !== undefined) {
    const [yv, nv] = [ky.value, kn.value];
    // A whole-slot condition (`{"var": "vars.x"}` in a mapper) is read inline; unset is falsy as null.
    if (slot >= 0) return (_d, s) => (truthy(s.locals[slot]) ? yv : nv);
    return (d, s) => (truthy(cond(d, s)) ? yv : nv);
  }
  return (d, s) => {
    if (truthy(slot < 0 ? cond(d, s) : s.locals[slot])) {
      if (cy > 0) charge(s, cy);
      return y(d, s);
    }
    if (cn > 0) charge(s, cn);
    return n(d, s);
  };
}

export const logicOperators: Record<string, OperatorSpec> = {
  if: {
    shape: args,
    compile(value, c, scope) {
      // Only the first condition always runs; branches and later conditions are blocks of their own.
      const parts = blocks(value, c, scope);
      const [first, yes, no] = parts;
      if (first === undefined) return NULL;
      if (parts.length === 3) return ifElse(first.node, yes!, no!);
      if (parts.length === 2) return ifElse(first.node, yes!, { node: NULL, cost: 0 });
      if (parts.length === 1) {
        // `{"if": [x]}`: the single argument is the else branch.
        return first.node;
      }
      // if / else-if chains: pairs of (condition, consequent), then an optional else.
      const nodes = parts.map((p) => p.node);
      const costs = parts.map((p) => p.cost);
      return (d, s) => {
        let i = 0;
        for (; i < nodes.length - 1; i += 2) {
          if (i > 0 && costs[i]! > 0) charge(s, costs[i]!);
          if (truthy(nodes[i]!(d, s))) {
            if (costs[i + 1]! > 0) charge(s, costs[i + 1]!);
            return nodes[i + 1]!(d, s);
          }
        }
        if (i !== nodes.length - 1) return null;
        if (costs[i]! > 0) charge(s, costs[i]!);
        return nodes[i]!(d, s);
      };
    },
  },
  and: {
    shape: args,
    compile(value, c, scope) {
      const parts = blocks(value, c, scope);
      if (parts.length === 0) return NULL;
      if (parts.length === 1) return parts[0]!.node;
      if (parts.length === 2) {
        const [a, { node: b, cost }] = [parts[0]!.node, parts[1]!];
        const slot = slotOf(a) ?? -1;
        return (d, s) => {
          // A whole-slot first operand is read inline (unset reads null, as the read node returns).
          const x = slot < 0 ? a(d, s) : (s.locals[slot] ?? null);
          if (!truthy(x)) return x;
          if (cost > 0) charge(s, cost);
          return b(d, s);
        };
      }
      const nodes = parts.map((p) => p.node);
      const costs = parts.map((p) => p.cost);
      return (d, s) => {
        let current: unknown = null;
        for (let i = 0; i < nodes.length; i++) {
          if (costs[i]! > 0) charge(s, costs[i]!);
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
      const parts = blocks(value, c, scope);
      if (parts.length === 0) return NULL;
      if (parts.length === 1) return parts[0]!.node;
      if (parts.length === 2) {
        const [a, { node: b, cost }] = [parts[0]!.node, parts[1]!];
        const slot = slotOf(a) ?? -1;
        return (d, s) => {
          // A whole-slot first operand is read inline (unset reads null, as the read node returns).
          const x = slot < 0 ? a(d, s) : (s.locals[slot] ?? null);
          if (truthy(x)) return x;
          if (cost > 0) charge(s, cost);
          return b(d, s);
        };
      }
      const nodes = parts.map((p) => p.node);
      const costs = parts.map((p) => p.cost);
      return (d, s) => {
        let current: unknown = null;
        for (let i = 0; i < nodes.length; i++) {
          if (costs[i]! > 0) charge(s, costs[i]!);
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
      const slot = slotOf(a);
      if (slot !== undefined) return (_d, s) => !truthy(s.locals[slot]); // unset: missing, falsy as null
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
        const key = fieldOf(b);
        if (typeof key === "string") {
          // `{"in": ["image/", {"var": "content_type"}]}`: the read fused in.
          const node: Node = (d) => {
            const h = readField(d, key);
            if (typeof h === "string") return h.includes(text);
            return Array.isArray(h) ? h.indexOf(needle) !== -1 : false;
          };
          return fieldTest(node, { key, op: "in", k: needle, text });
        }
        const slot = slotOf(b) ?? -1;
        return (d, s) => {
          // A whole-slot haystack (`{"var": "vars.subject"}` in a mapper) is read inline; unset is missing.
          const h = slot < 0 ? b(d, s) : s.locals[slot];
          if (typeof h === "string") return h.includes(text);
          return Array.isArray(h) ? h.indexOf(needle) !== -1 : false;
        };
      }
      return (d, s) => inValue(a(d, s), b(d, s));
    },
  },
};
