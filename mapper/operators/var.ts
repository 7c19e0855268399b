/**
 * `var`: reads the data root, a loop alias, or (in a mapper) `message.…`, `ctx.…`, `meta.…`, `vars.…`.
 * Paths: dots split object keys, `[n]` indexes arrays, `["key"]` quotes a key that contains dots
 * (spec rule 3). `{"var": ["path", default]}` returns the default when the path is missing.
 */
import type { Node, OperatorSpec, Scope } from "./types.ts";
import { argList } from "./types.ts";

type Segment = string | number;

const cache = new Map<string, Segment[]>();

/** Splits `a.b[0]["c.d"]` into `["a", "b", 0, "c.d"]`. Parsed once per distinct path. */
export function parsePath(path: string): Segment[] {
  const hit = cache.get(path);
  if (hit !== undefined) return hit;
  const out: Segment[] = [];
  const re = /\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|\['((?:[^'\\]|\\.)*)'\]|([^.[\]]+)|(\.)/g;
  for (let m = re.exec(path); m !== null; m = re.exec(path)) {
    if (m[1] !== undefined) out.push(Number(m[1]));
    else if (m[2] !== undefined) out.push(m[2].replace(/\\(.)/g, "$1"));
    else if (m[3] !== undefined) out.push(m[3].replace(/\\(.)/g, "$1"));
    else if (m[4] !== undefined) out.push(m[4]);
  }
  if (cache.size > 4096) cache.clear();
  cache.set(path, out);
  return out;
}

/**
 * Descends `segments` from `start`. Inherited members never leak out of the data: every inherited
 * property of JSON values is a function (filtered) except `__proto__`, which is read as an own property
 * only. Strings and arrays expose their elements and `length`.
 */
function descend(start: unknown, segments: readonly Segment[], from: number): unknown {
  let cur = start;
  for (let i = from; i < segments.length; i++) {
    if (cur === null || cur === undefined) return undefined;
    const key = segments[i]!;
    if (key === "__proto__") {
      if (typeof cur !== "object" || !Object.hasOwn(cur, key)) return undefined;
    }
    cur = (cur as Record<string | number, unknown>)[key];
    if (typeof cur === "function") return undefined;
  }
  return cur;
}

type Reader = (d: unknown, locals: unknown[]) => unknown;

/** Unrolled readers for the common short paths; the generic loop for the rest. */
function pathReader(
  segments: readonly Segment[],
  from: number,
  base: (d: unknown, locals: unknown[]) => unknown,
): Reader {
  const rest = segments.slice(from);
  if (rest.includes("__proto__") || rest.length > 5) return (d, l) => descend(base(d, l), rest, 0);
  const get = (o: unknown, k: Segment): unknown => {
    if (o === null || o === undefined) return undefined;
    const v = (o as Record<string | number, unknown>)[k];
    return typeof v === "function" ? undefined : v;
  };
  if (rest.length === 0) return base;
  const [k0, k1, k2, k3, k4] = rest as [Segment, Segment, Segment, Segment, Segment];
  if (rest.length === 1) return (d, l) => get(base(d, l), k0);
  if (rest.length === 2) return (d, l) => get(get(base(d, l), k0), k1);
  if (rest.length === 3) return (d, l) => get(get(get(base(d, l), k0), k1), k2);
  if (rest.length === 4) return (d, l) => get(get(get(get(base(d, l), k0), k1), k2), k3);
  return (d, l) => get(get(get(get(get(base(d, l), k0), k1), k2), k3), k4);
}

/** Reader for a path known at compile time: alias lookups become slot reads. */
function compileStaticPath(path: unknown, scope: Scope): Reader {
  if (path === null || path === undefined || path === "") return (d) => d;
  const segments = typeof path === "number" ? [String(path)] : parsePath(String(path));
  const first = segments[0];
  const slot = typeof first === "string" ? scope.aliases.get(first) : undefined;
  if (slot !== undefined) return pathReader(segments, 1, (_d, locals) => locals[slot]);
  return pathReader(segments, 0, (d) => d);
}

const NOT_FOUND = Symbol("not found");

function isStatic(v: unknown): boolean {
  return v === null || typeof v === "string" || typeof v === "number" || v === undefined;
}

export const varOperator: OperatorSpec = {
  shape: { kind: "args" },
  compile(value, c, scope) {
    const list = argList(value);
    const [pathExpr, defaultExpr] = list;
    const fallback: Node | null = list.length > 1 ? c.compile(defaultExpr, scope) : null;
    if (isStatic(pathExpr)) {
      const read = compileStaticPath(pathExpr, scope);
      if (fallback === null) {
        return (d, s) => {
          const v = read(d, s.locals);
          return v === undefined ? null : v;
        };
      }
      return (d, s) => {
        const v = read(d, s.locals);
        return v === undefined ? fallback(d, s) : v;
      };
    }
    // A computed path (e.g. `{"var": {"cat": [...]}}`) is resolved per evaluation.
    const pathNode = c.compile(pathExpr, scope);
    return (d, s) => {
      const p = pathNode(d, s);
      const v = isStatic(p) ? compileStaticPath(p, scope)(d, s.locals) : NOT_FOUND;
      if (v !== undefined && v !== NOT_FOUND) return v;
      return fallback === null ? null : fallback(d, s);
    };
  },
};
