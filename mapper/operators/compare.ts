/**
 * Comparison closures with json-logic-js semantics (the JavaScript operators on JSON values), one closure
 * body per operator and operand shape so each compiles to its own inlinable comparison: a shared
 * `(a, b) => fn(a, b)` wrapper would make every comparison an indirect call through one megamorphic site.
 *
 * JSON data can make the operators' ToPrimitive throw (an object whose own `toString`/`valueOf` keys hold
 * data: `{"toString": 1}` → TypeError "No default value"), and an error inside an operator yields null
 * (docs/mapper.md, "Errors"). Only an object operand can throw, so each closure tests for one inline and
 * leaves the try/catch to `slow`; with a constant scalar operand only the other side is tested.
 */
import type { Node } from "./types.ts";
import { fieldOf, IDENTITY, readField } from "./var.ts";

export type BinaryOp = "==" | "!=" | "===" | "!==" | ">" | ">=" | "<" | "<=";

/**
 * JavaScript loose equality, JsonLogic's `==` (json-logic-js applies the JS operator; `!=` is its
 * negation, as in JavaScript). A direct call to one function: the JIT inlines it into each closure.
 */
function looseEq(a: unknown, b: unknown): boolean {
  // biome-ignore lint/suspicious/noDoubleEquals: JsonLogic `==` is JavaScript loose equality
  return a == b;
}

/**
 * `x == k` for a constant scalar `k` and a non-object `x`: JavaScript's loose equality is strict equality
 * when both have the same type (ECMA-262 IsLooselyEqual, step 1) and, for null or undefined, true exactly
 * when the other side is null or undefined (steps 2–3); only mixed types reach the generic `==`. The
 * generic comparison site sees every type pair of every expression and costs ≈ 30 ns a call in the
 * bench process; a `typeof` test and `===` do not.
 */
function looseEqConst(x: unknown, k: unknown): boolean {
  if (typeof x === typeof k) return x === k;
  if (x === null || x === undefined) return k === null || k === undefined;
  return looseEq(x, k);
}

/** The operator applied to two values (may throw on hostile objects: callers catch). */
function apply(op: BinaryOp, a: unknown, b: unknown): boolean {
  switch (op) {
    case "==":
      return looseEq(a, b);
    case "!=":
      return !looseEq(a, b);
    case "===":
      return a === b;
    case "!==":
      return a !== b;
    case ">":
      return (a as number) > (b as number);
    case ">=":
      return (a as number) >= (b as number);
    case "<":
      return (a as number) < (b as number);
    case "<=":
      return (a as number) <= (b as number);
  }
}

/** Slow path for operands that include an object: a throwing coercion yields null. */
export function compareSlow(op: BinaryOp, a: unknown, b: unknown): boolean | null {
  try {
    return apply(op, a, b);
  } catch {
    return null;
  }
}

/** True for values whose coercion can run data-defined code paths (objects and arrays). */
const obj = (v: unknown): boolean => typeof v === "object" && v !== null;

/** `a op k` for a constant scalar `k`. */
function withRight(op: BinaryOp, a: Node, k: unknown): Node {
  if (k === "" && isRelational(op)) return againstEmpty(op, a);
  if (typeof k === "string" && (op === "==" || op === "!=")) return againstText(op, a, k);
  switch (op) {
    case "==":
      return (d, s) => {
        const x = a(d, s);
        return obj(x) ? compareSlow(op, x, k) : looseEqConst(x, k);
      };
    case "!=":
      return (d, s) => {
        const x = a(d, s);
        return obj(x) ? compareSlow(op, x, k) : !looseEqConst(x, k);
      };
    case "===":
      return (d, s) => a(d, s) === k;
    case "!==":
      return (d, s) => a(d, s) !== k;
    case ">":
      return (d, s) => {
        const x = a(d, s);
        return obj(x) ? compareSlow(op, x, k) : (x as number) > (k as number);
      };
    case ">=":
      return (d, s) => {
        const x = a(d, s);
        return obj(x) ? compareSlow(op, x, k) : (x as number) >= (k as number);
      };
    case "<":
      return (d, s) => {
        const x = a(d, s);
        return obj(x) ? compareSlow(op, x, k) : (x as number) < (k as number);
      };
    case "<=":
      return (d, s) => {
        const x = a(d, s);
        return obj(x) ? compareSlow(op, x, k) : (x as number) <= (k as number);
      };
  }
}

/**
 * `{"var": key} op k` for a constant scalar `k`, with the read fused in (no call to the `var` node): the
 * most common comparison, e.g. the body of `{"filter": [items, {"==": [{"var": "type"}, "pdf"]}]}`.
 */
function fieldRight(op: BinaryOp, key: string | typeof IDENTITY, k: unknown): Node {
  const node = fieldRightNode(op, key, k);
  FIELD_TESTS.set(node, { key, op, k, text: "" });
  return node;
}

function fieldRightNode(op: BinaryOp, key: string | typeof IDENTITY, k: unknown): Node {
  const read = (d: unknown): unknown => (key === IDENTITY ? (d === undefined ? null : d) : readField(d, key));
  switch (op) {
    case "==":
      return (d) => {
        const x = read(d);
        return obj(x) ? compareSlow(op, x, k) : looseEqConst(x, k);
      };
    case "!=":
      return (d) => {
        const x = read(d);
        return obj(x) ? compareSlow(op, x, k) : !looseEqConst(x, k);
      };
    case "===":
      return (d) => read(d) === k;
    case "!==":
      return (d) => read(d) !== k;
    case ">":
      return (d) => {
        const x = read(d);
        return obj(x) ? compareSlow(op, x, k) : (x as number) > (k as number);
      };
    case ">=":
      return (d) => {
        const x = read(d);
        return obj(x) ? compareSlow(op, x, k) : (x as number) >= (k as number);
      };
    case "<":
      return (d) => {
        const x = read(d);
        return obj(x) ? compareSlow(op, x, k) : (x as number) < (k as number);
      };
    case "<=":
      return (d) => {
        const x = read(d);
        return obj(x) ? compareSlow(op, x, k) : (x as number) <= (k as number);
      };
  }
}

const isRelational = (op: BinaryOp): op is ">" | ">=" | "<" | "<=" =>
  op === ">" || op === ">=" || op === "<" || op === "<=";

/**
 * `a op ""` for a relational `op` (`{">": [x, ""]}`, JsonLogic's "is not empty"). A string is decided by
 * its length, since "" sorts before every other string: the same answer as the native comparison, which
 * first flattens a string that `cat` or a string-building `reduce` left as a rope (≈ 100–200 ns for a
 * short one on the bench machine). Other values take the ordinary comparison.
 */
function againstEmpty(op: ">" | ">=" | "<" | "<=", a: Node): Node {
  const rest = (x: unknown): boolean | null => (obj(x) ? compareSlow(op, x, "") : apply(op, x, ""));
  switch (op) {
    case ">":
      return (d, s) => {
        const x = a(d, s);
        return typeof x === "string" ? x.length > 0 : rest(x);
      };
    case ">=":
      return (d, s) => {
        const x = a(d, s);
        return typeof x === "string" ? true : rest(x);
      };
    case "<":
      return (d, s) => {
        const x = a(d, s);
        return typeof x === "string" ? false : rest(x);
      };
    case "<=":
      return (d, s) => {
        const x = a(d, s);
        return typeof x === "string" ? x.length === 0 : rest(x);
      };
  }
}

/**
 * `a == k` / `a != k` for a constant string `k` (`{"==": [{"var": "vars.priority"}, "high"]}`): a string is
 * compared with `===`, null and undefined never equal a string, and only the other types reach the general
 * path. The same answers as `looseEqConst`, without computing `typeof k` on every run.
 */
function againstText(op: "==" | "!=", a: Node, k: string): Node {
  const equal = (x: unknown): boolean | null => {
    if (typeof x === "string") return x === k;
    if (x === null || x === undefined) return false;
    return obj(x) ? compareSlow("==", x, k) : looseEq(x, k);
  };
  if (op === "==") return (d, s) => equal(a(d, s));
  return (d, s) => {
    const e = equal(a(d, s));
    return e === null ? null : !e;
  };
}

/** `k op b` for a constant scalar `k`. */
function withLeft(op: BinaryOp, k: unknown, b: Node): Node {
  switch (op) {
    case "==":
      return (d, s) => {
        const y = b(d, s);
        return obj(y) ? compareSlow(op, k, y) : looseEq(k, y);
      };
    case "!=":
      return (d, s) => {
        const y = b(d, s);
        return obj(y) ? compareSlow(op, k, y) : !looseEq(k, y);
      };
    case "===":
      return (d, s) => k === b(d, s);
    case "!==":
      return (d, s) => k !== b(d, s);
    case ">":
      return (d, s) => {
        const y = b(d, s);
        return obj(y) ? compareSlow(op, k, y) : (k as number) > (y as number);
      };
    case ">=":
      return (d, s) => {
        const y = b(d, s);
        return obj(y) ? compareSlow(op, k, y) : (k as number) >= (y as number);
      };
    case "<":
      return (d, s) => {
        const y = b(d, s);
        return obj(y) ? compareSlow(op, k, y) : (k as number) < (y as number);
      };
    case "<=":
      return (d, s) => {
        const y = b(d, s);
        return obj(y) ? compareSlow(op, k, y) : (k as number) <= (y as number);
      };
  }
}

/** `a op b`, both evaluated (left first, as json-logic-js). */
function both(op: BinaryOp, a: Node, b: Node): Node {
  switch (op) {
    case "==":
      return (d, s) => {
        const x = a(d, s);
        const y = b(d, s);
        return obj(x) || obj(y) ? compareSlow(op, x, y) : looseEq(x, y);
      };
    case "!=":
      return (d, s) => {
        const x = a(d, s);
        const y = b(d, s);
        return obj(x) || obj(y) ? compareSlow(op, x, y) : !looseEq(x, y);
      };
    case "===":
      return (d, s) => a(d, s) === b(d, s);
    case "!==":
      return (d, s) => a(d, s) !== b(d, s);
    case ">":
      return (d, s) => {
        const x = a(d, s);
        const y = b(d, s);
        return obj(x) || obj(y) ? compareSlow(op, x, y) : (x as number) > (y as number);
      };
    case ">=":
      return (d, s) => {
        const x = a(d, s);
        const y = b(d, s);
        return obj(x) || obj(y) ? compareSlow(op, x, y) : (x as number) >= (y as number);
      };
    case "<":
      return (d, s) => {
        const x = a(d, s);
        const y = b(d, s);
        return obj(x) || obj(y) ? compareSlow(op, x, y) : (x as number) < (y as number);
      };
    case "<=":
      return (d, s) => {
        const x = a(d, s);
        const y = b(d, s);
        return obj(x) || obj(y) ? compareSlow(op, x, y) : (x as number) <= (y as number);
      };
  }
}

/**
 * The node for `a op b`. A constant operand that is a scalar is captured as a value (no call, no object
 * test on that side); a constant structure is treated like any other operand.
 */
export function compareNode(
  op: BinaryOp,
  a: Node,
  b: Node,
  ka?: { value: unknown },
  kb?: { value: unknown },
): Node {
  if (kb !== undefined && !obj(kb.value)) {
    const key = fieldOf(a);
    return key === undefined ? withRight(op, a, kb.value) : fieldRight(op, key, kb.value);
  }
  if (ka !== undefined && !obj(ka.value)) return withLeft(op, ka.value, b);
  return both(op, a, b);
}

/**
 * A test of one field of the `var` root against a constant: `{"var": key} op k` (`fieldRight`) or
 * `{"in": [k, {"var": key}]}` with a scalar needle `k` (`text` = `String(k)`). A predicate loop whose body
 * is such a test runs it inline with `passes` instead of calling the body per item.
 */
export interface FieldTest {
  key: string | typeof IDENTITY;
  op: BinaryOp | "in";
  k: unknown;
  text: string;
}

const FIELD_TESTS = new WeakMap<Node, FieldTest>();

/** Registers `node` as computing `t` (see FieldTest); returns it. */
export function fieldTest(node: Node, t: FieldTest): Node {
  FIELD_TESTS.set(node, t);
  return node;
}

export function fieldTestOf(node: Node): FieldTest | undefined {
  return FIELD_TESTS.get(node);
}

/**
 * `truthy(node(d))` for a node registered with test `t`, computed inline: the same read (`readField`), the
 * same operator (a hostile structure makes the comparison null, which is falsy) and the same `in`.
 */
export function passes(
  key: string | typeof IDENTITY,
  op: BinaryOp | "in",
  k: unknown,
  text: string,
  d: unknown,
): boolean {
  const x = key === IDENTITY ? (d === undefined ? null : d) : readField(d, key);
  if (op === "in") {
    if (typeof x === "string") return x.includes(text);
    return Array.isArray(x) ? x.indexOf(k) !== -1 : false;
  }
  if (obj(x)) return compareSlow(op, x, k) === true;
  switch (op) {
    case "==":
      return looseEqConst(x, k);
    case "!=":
      return !looseEqConst(x, k);
    case "===":
      return x === k;
    case "!==":
      return x !== k;
    case ">":
      return (x as number) > (k as number);
    case ">=":
      return (x as number) >= (k as number);
    case "<":
      return (x as number) < (k as number);
    case "<=":
      return (x as number) <= (k as number);
  }
}
