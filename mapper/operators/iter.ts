/**
 * Array operators. Two forms (docs/mapper.md, "Array operators"):
 * - JsonLogic `[over, logic(, initial)]`: inside `logic` the `var` root is the item (reduce: `{current,
 *   accumulator}`), exactly as json-logic-js;
 * - object forms `{over, as, do|where}` and `{over, do, start}`: the item is bound to the alias (or
 *   `current`/`accumulator`) in a slot, and `var` still reaches everything outside.
 * Every iteration counts as an evaluated node so a cheap body cannot hide a long loop from the guard.
 */
import { charge } from "../guards.ts";
import { type FieldTest, fieldTestOf, passes } from "./compare.ts";
import { catSlot, slotCatOf } from "./strings.ts";
import type { Compiler, Node, OperatorSpec, Scope } from "./types.ts";
import { isPlainObject, NULL_NODE, truthy } from "./types.ts";
import { fieldOf, readField } from "./var.ts";

/**
 * `over` and the per-item body of either form; `key` is `do` or `where`. The body is a block charging its
 * nodes plus one for the iteration. `slot` < 0: the JsonLogic form, the item is the body's `var` root;
 * otherwise the item is stored in that loop slot and the root stays the outer data.
 */
interface LoopParts {
  over: Node;
  body: Node;
  slot: number;
  /** nodes charged per iteration: the body's operators plus the iteration itself */
  n: number;
}

function compileLoop(value: unknown, key: "do" | "where", c: Compiler, scope: Scope): LoopParts {
  if (isPlainObject(value)) {
    const over = c.compile(value.over, scope);
    const alias = typeof value.as === "string" ? value.as : "item";
    const slot = scope.slots.count++;
    const inner: Scope = { ...scope, aliases: new Map(scope.aliases).set(alias, slot) };
    const { node, cost } = c.measure(Object.hasOwn(value, key) ? value[key] : null, inner);
    return { over, body: node, slot, n: cost + 1 };
  }
  const list = Array.isArray(value) ? value : [value];
  const over = c.compile(list[0], scope);
  const { node, cost } = c.measure(list.length > 1 ? list[1] : null, itemRoot(scope));
  return { over, body: node, slot: -1, n: cost + 1 };
}

/**
 * The scope of a JsonLogic-form body: its `var` root is the item, so `vars.…`, `message.…` are no longer
 * the mapper's.
 */
function itemRoot(scope: Scope): Scope {
  if (
    scope.vars === undefined &&
    scope.fields === undefined &&
    scope.item === undefined &&
    scope.blockVars === undefined
  )
    return scope;
  // Scoped-block vars are `vars.…` too: not reachable from a body whose root is the item.
  return { aliases: scope.aliases, slots: scope.slots };
}

/**
 * True when some `var` in `expr` may read its root as a whole: an empty or computed path. Conservative (it
 * also looks inside nested bodies and templates): a JsonLogic reduce body without such a read only ever
 * reads `current…`, `accumulator…` or keys its item does not have, so the item can live in two slots.
 */
function readsWholeRoot(expr: unknown): boolean {
  if (Array.isArray(expr)) return expr.some(readsWholeRoot);
  if (!isPlainObject(expr)) return false;
  if (Object.hasOwn(expr, "var")) {
    const arg = expr.var;
    const path = Array.isArray(arg) ? arg[0] : arg;
    if (typeof path !== "number" && (typeof path !== "string" || path === "")) return true;
  }
  return Object.values(expr).some(readsWholeRoot);
}

/** The body's `var` root when its item lives in slots: any other key it reads is missing, as on the item. */
const SLOTTED_ITEM: Readonly<Record<string, unknown>> = Object.freeze(Object.create(null));

type Decide = "filter" | "find" | "all" | "some" | "none";

/**
 * some / all / none / filter / find: one loop each with the body called inline (no per-item helper
 * closure), in both forms: JsonLogic (the item is the body's root) and object form (the item in a slot).
 */
function predicateOp(kind: Decide): OperatorSpec {
  return {
    shape: { kind: "iter", form: "where" },
    compile(value, c, scope) {
      const { over, body, slot, n } = compileLoop(value, "where", c, scope);
      return slot < 0 ? itemRooted(kind, over, body, n) : slotted(kind, over, body, n, slot);
    },
  };
}

/** JsonLogic form: `body(item)`. "all" of an empty list is false in JsonLogic; "some" false; "none" true. */
function itemRooted(kind: Decide, over: Node, body: Node, n: number): Node {
  const t = fieldTestOf(body);
  if (t !== undefined) return fieldTested(kind, over, t, n);
  switch (kind) {
    case "filter":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return [];
        const out: unknown[] = [];
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (truthy(body(items[i], s))) out.push(items[i]);
        }
        return out;
      };
    case "find":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return null;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (truthy(body(items[i], s))) return items[i] ?? null;
        }
        return null;
      };
    case "all":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items) || items.length === 0) return false;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (!truthy(body(items[i], s))) return false;
        }
        return true;
      };
    case "some":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return false;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (truthy(body(items[i], s))) return true;
        }
        return false;
      };
    case "none":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return true;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (truthy(body(items[i], s))) return false;
        }
        return true;
      };
  }
}

/**
 * JsonLogic form whose body tests one field of the item against a constant (`{"==": [{"var": "type"},
 * "pdf"]}`, `{"in": ["image/", {"var": "type"}]}`): the loop runs the test itself (`passes`), no call per
 * item. Same results and charges as `itemRooted`.
 */
function fieldTested(kind: Decide, over: Node, t: FieldTest, n: number): Node {
  const { key, op, k, text } = t;
  switch (kind) {
    case "filter":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return [];
        const out: unknown[] = [];
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (passes(key, op, k, text, items[i])) out.push(items[i]);
        }
        return out;
      };
    case "find":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return null;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (passes(key, op, k, text, items[i])) return items[i] ?? null;
        }
        return null;
      };
    case "all":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items) || items.length === 0) return false;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (!passes(key, op, k, text, items[i])) return false;
        }
        return true;
      };
    case "some":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return false;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (passes(key, op, k, text, items[i])) return true;
        }
        return false;
      };
    case "none":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return true;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          if (passes(key, op, k, text, items[i])) return false;
        }
        return true;
      };
  }
}

/** Object form: the item goes to `slot`, the body keeps the outer root. */
function slotted(kind: Decide, over: Node, body: Node, n: number, slot: number): Node {
  switch (kind) {
    case "filter":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return [];
        const out: unknown[] = [];
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          s.locals[slot] = items[i];
          if (truthy(body(d, s))) out.push(items[i]);
        }
        return out;
      };
    case "find":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return null;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          s.locals[slot] = items[i];
          if (truthy(body(d, s))) return items[i] ?? null;
        }
        return null;
      };
    case "all":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items) || items.length === 0) return false;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          s.locals[slot] = items[i];
          if (!truthy(body(d, s))) return false;
        }
        return true;
      };
    case "some":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return false;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          s.locals[slot] = items[i];
          if (truthy(body(d, s))) return true;
        }
        return false;
      };
    case "none":
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return true;
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          s.locals[slot] = items[i];
          if (truthy(body(d, s))) return false;
        }
        return true;
      };
  }
}

export const iterOperators: Record<string, OperatorSpec> = {
  map: {
    shape: { kind: "iter", form: "do" },
    compile(value, c, scope) {
      const { over, body, slot, n } = compileLoop(value, "do", c, scope);
      const key = slot < 0 ? fieldOf(body) : undefined;
      if (typeof key === "string") {
        // `{"map": [items, {"var": "email"}]}` plucks one key: the read fused into the loop.
        return (d, s) => {
          const items = over(d, s);
          if (!Array.isArray(items)) return [];
          const out = new Array<unknown>(items.length);
          for (let i = 0; i < items.length; i++) {
            charge(s, n);
            out[i] = readField(items[i], key);
          }
          return out;
        };
      }
      if (slot < 0) {
        return (d, s) => {
          const items = over(d, s);
          if (!Array.isArray(items)) return [];
          const out = new Array<unknown>(items.length);
          for (let i = 0; i < items.length; i++) {
            charge(s, n);
            out[i] = body(items[i], s);
          }
          return out;
        };
      }
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return [];
        const out = new Array<unknown>(items.length);
        for (let i = 0; i < items.length; i++) {
          charge(s, n);
          s.locals[slot] = items[i];
          out[i] = body(d, s);
        }
        return out;
      };
    },
  },
  filter: predicateOp("filter"),
  find: predicateOp("find"),
  all: predicateOp("all"),
  some: predicateOp("some"),
  none: predicateOp("none"),
  reduce: {
    shape: { kind: "iter", form: "reduce" },
    compile(value, c, scope) {
      if (isPlainObject(value)) {
        const over = c.compile(value.over, scope);
        const start = Object.hasOwn(value, "start") ? c.compile(value.start, scope) : NULL_NODE;
        const cur = scope.slots.count++;
        const acc = scope.slots.count++;
        const aliases = new Map(scope.aliases).set("current", cur).set("accumulator", acc);
        const body = Object.hasOwn(value, "do") ? value.do : null;
        const { node: logic, cost: n } = c.charged(body, { ...scope, aliases }, 1);
        return (d, s) => {
          const items = over(d, s);
          let result = start(d, s);
          if (!Array.isArray(items)) return result;
          for (let i = 0; i < items.length; i++) {
            if (n > 0) charge(s, n);
            s.locals[cur] = items[i];
            s.locals[acc] = result;
            result = logic(d, s);
          }
          return result;
        };
      }
      const list = Array.isArray(value) ? value : [value];
      const over = c.compile(list[0], scope);
      const bodyExpr = list.length > 1 ? list[1] : null;
      if (!readsWholeRoot(bodyExpr)) {
        // `{current, accumulator}` in two slots: no object per iteration (see `Scope.item`).
        const cur = scope.slots.count++;
        const acc = scope.slots.count++;
        const item = new Map([
          ["current", cur],
          ["accumulator", acc],
        ]);
        const inner: Scope = { aliases: scope.aliases, slots: scope.slots, item };
        const { node: logic, cost: n } = c.charged(bodyExpr, inner, 1);
        const start = list.length > 2 ? c.compile(list[2], scope) : NULL_NODE;
        const cat = slotCatOf(logic);
        if (cat !== undefined && cat.slot === acc) {
          // `{"cat": [{"var": "accumulator"}, "x"]}` builds a string: the body runs inline (no call per
          // item) on the accumulator itself, so neither slot need be stored.
          return (d, s) => {
            const items = over(d, s);
            let result = start(d, s);
            if (!Array.isArray(items)) return result;
            for (let i = 0; i < items.length; i++) {
              if (n > 0) charge(s, n);
              result = catSlot(cat, result);
            }
            return result;
          };
        }
        return (d, s) => {
          const items = over(d, s);
          let result = start(d, s);
          if (!Array.isArray(items)) return result;
          for (let i = 0; i < items.length; i++) {
            if (n > 0) charge(s, n);
            s.locals[cur] = items[i];
            s.locals[acc] = result;
            result = logic(SLOTTED_ITEM, s);
          }
          return result;
        };
      }
      const { node: logic, cost: n } = c.charged(bodyExpr, itemRoot(scope), 1);
      const start = list.length > 2 ? c.compile(list[2], scope) : NULL_NODE;
      return (d, s) => {
        const items = over(d, s);
        let result = start(d, s);
        if (!Array.isArray(items)) return result;
        for (let i = 0; i < items.length; i++) {
          if (n > 0) charge(s, n);
          result = logic({ current: items[i], accumulator: result }, s);
        }
        return result;
      };
    },
  },
};
