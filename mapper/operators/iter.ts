/**
 * Array operators. Two forms (contract §6):
 * - JsonLogic `[over, logic(, initial)]`: inside `logic` the `var` root is the item (reduce: `{current,
 *   accumulator}`), exactly as json-logic-js;
 * - object forms `{over, as, do|where}` and `{over, do, start}`: the item is bound to the alias (or
 *   `current`/`accumulator`) in a slot, and `var` still reaches everything outside.
 * Every iteration counts as an evaluated node so a cheap body cannot hide a long loop from the guard.
 */
import { MAX_NODES, nodesExceeded } from "../guards.ts";
import type { Compiler, Node, OperatorSpec, Scope } from "./types.ts";
import { isPlainObject, truthy } from "./types.ts";

const NULL: Node = () => null;

type Body = (d: unknown, s: Parameters<Node>[1], item: unknown) => unknown;
interface LoopParts {
  over: Node;
  body: Body;
}

/** Compiles `over` and the per-item body of either form; `key` is `do` or `where`. */
function compileLoop(value: unknown, key: "do" | "where", c: Compiler, scope: Scope): LoopParts {
  if (isPlainObject(value)) {
    const over = c.compile(value.over, scope);
    const alias = typeof value.as === "string" ? value.as : "item";
    const slot = scope.slots.count++;
    const inner: Scope = { aliases: new Map(scope.aliases).set(alias, slot), slots: scope.slots };
    const logic = Object.hasOwn(value, key) ? c.compile(value[key], inner) : NULL;
    return {
      over,
      body: (d, s, item) => {
        s.locals[slot] = item;
        return logic(d, s);
      },
    };
  }
  const list = Array.isArray(value) ? value : [value];
  const over = c.compile(list[0], scope);
  const logic = list.length > 1 ? c.compile(list[1], scope) : NULL;
  return { over, body: (_d, s, item) => logic(item, s) };
}

function tick(s: Parameters<Node>[1]): void {
  if (++s.nodes > MAX_NODES) nodesExceeded();
}

/** some / all / none / filter / find share the predicate form; `decide` consumes the per-item verdicts. */
function predicateOp(
  run: (items: unknown[], test: (item: unknown) => boolean) => unknown,
  empty: unknown,
): OperatorSpec {
  return {
    shape: { kind: "iter", form: "where" },
    compile(value, c, scope) {
      const { over, body } = compileLoop(value, "where", c, scope);
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return typeof empty === "function" ? empty() : empty;
        return run(items, (item) => {
          tick(s);
          return truthy(body(d, s, item));
        });
      };
    },
  };
}

export const iterOperators: Record<string, OperatorSpec> = {
  map: {
    shape: { kind: "iter", form: "do" },
    compile(value, c, scope) {
      const { over, body } = compileLoop(value, "do", c, scope);
      return (d, s) => {
        const items = over(d, s);
        if (!Array.isArray(items)) return [];
        const out = new Array<unknown>(items.length);
        for (let i = 0; i < items.length; i++) {
          tick(s);
          out[i] = body(d, s, items[i]);
        }
        return out;
      };
    },
  },
  filter: predicateOp(
    (items, test) => items.filter(test),
    () => [],
  ),
  find: predicateOp((items, test) => items.find(test) ?? null, null),
  // "all" of an empty list is false in JsonLogic; "some" false; "none" true.
  all: predicateOp((items, test) => items.length > 0 && items.every(test), false),
  some: predicateOp((items, test) => items.some(test), false),
  none: predicateOp((items, test) => !items.some(test), true),
  reduce: {
    shape: { kind: "iter", form: "reduce" },
    compile(value, c, scope) {
      if (isPlainObject(value)) {
        const over = c.compile(value.over, scope);
        const start = Object.hasOwn(value, "start") ? c.compile(value.start, scope) : NULL;
        const cur = scope.slots.count++;
        const acc = scope.slots.count++;
        const aliases = new Map(scope.aliases).set("current", cur).set("accumulator", acc);
        const logic = Object.hasOwn(value, "do")
          ? c.compile(value.do, { aliases, slots: scope.slots })
          : NULL;
        return (d, s) => {
          const items = over(d, s);
          let result = start(d, s);
          if (!Array.isArray(items)) return result;
          for (const item of items) {
            tick(s);
            s.locals[cur] = item;
            s.locals[acc] = result;
            result = logic(d, s);
          }
          return result;
        };
      }
      const list = Array.isArray(value) ? value : [value];
      const over = c.compile(list[0], scope);
      const logic = list.length > 1 ? c.compile(list[1], scope) : NULL;
      const start = list.length > 2 ? c.compile(list[2], scope) : NULL;
      return (d, s) => {
        const items = over(d, s);
        let result = start(d, s);
        if (!Array.isArray(items)) return result;
        for (const item of items) {
          tick(s);
          result = logic({ current: item, accumulator: result }, s);
        }
        return result;
      };
    },
  },
};
