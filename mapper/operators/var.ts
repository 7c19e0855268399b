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
 * Descends `segments` from `start`. Only own properties are read, so `constructor` or `__proto__` never
 * leak out of the data; strings and arrays expose their elements and `length`.
 */
function descend(start: unknown, segments: readonly Segment[], from: number): unknown {
  let cur = start;
  for (let i = from; i < segments.length; i++) {
    if (cur === null || cur === undefined) return undefined;
    const key = segments[i]!;
    if (typeof cur === "object") {
      if (!Object.hasOwn(cur, key)) return undefined;
      cur = (cur as Record<string | number, unknown>)[key];
    } else if (typeof cur === "string") {
      if (!Object.hasOwn(Object(cur), key)) return undefined;
      cur = (cur as unknown as Record<string | number, unknown>)[key];
    } else return undefined;
  }
  return cur;
}

/** Reader for a path known at compile time: alias lookups become slot reads. */
function compileStaticPath(path: unknown, scope: Scope): (d: unknown, locals: unknown[]) => unknown {
  if (path === null || path === undefined || path === "") return (d) => d;
  const segments = typeof path === "number" ? [String(path)] : parsePath(String(path));
  const first = segments[0];
  const slot = typeof first === "string" ? scope.aliases.get(first) : undefined;
  if (slot !== undefined) {
    if (segments.length === 1) return (_d, locals) => locals[slot];
    return (_d, locals) => descend(locals[slot], segments, 1);
  }
  if (segments.length === 1) {
    const key = segments[0]!;
    return (d) =>
      typeof d === "object" && d !== null && Object.hasOwn(d, key)
        ? (d as Record<string, unknown>)[key]
        : descend(d, segments, 0);
  }
  if (segments.length === 2) {
    const [k0, k1] = segments as [Segment, Segment];
    return (d) => {
      if (typeof d === "object" && d !== null && Object.hasOwn(d, k0)) {
        const mid = (d as Record<string | number, unknown>)[k0];
        if (typeof mid === "object" && mid !== null && Object.hasOwn(mid, k1)) {
          return (mid as Record<string | number, unknown>)[k1];
        }
      }
      return descend(d, segments, 0);
    };
  }
  return (d) => descend(d, segments, 0);
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
