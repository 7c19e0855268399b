/**
 * `var`: reads the data root, a loop alias, or (in a mapper) `message.…`, `ctx.…`, `meta.…`, `vars.…`.
 * Paths: dots split object keys, `[n]` indexes arrays, `["key"]` quotes a key that contains dots
 * (spec rule 3). `{"var": ["path", default]}` returns the default when the path is missing.
 */
import type { Node, OperatorSpec, Scope } from "./types.ts";
import { argList, constantOf, NULL_NODE } from "./types.ts";

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

/** The slot a path's first segment names: a loop alias, else a key of a slot-bound reduce item. */
function aliasSlot(scope: Scope, first: string): number | undefined {
  return scope.aliases.get(first) ?? scope.item?.get(first);
}

/** The slot of scoped-block var `name` visible here (the innermost block defining it), else undefined. */
function blockSlot(scope: Scope, name: Segment | undefined): number | undefined {
  return typeof name === "string" && scope.blockVars !== undefined && Object.hasOwn(blockNames(scope), name)
    ? scope.blockVars.get(name)
    : undefined;
}

const BLOCK_NAMES = new WeakMap<ReadonlyMap<string, number>, Record<string, true>>();
function blockNames(scope: Scope): Record<string, true> {
  const map = scope.blockVars as ReadonlyMap<string, number>;
  let names = BLOCK_NAMES.get(map);
  if (names === undefined) {
    names = Object.create(null) as Record<string, true>;
    for (const k of map.keys()) names[k] = true;
    BLOCK_NAMES.set(map, names);
  }
  return names;
}

/** `base` (an object, else nothing) with the scoped-block vars in `entries` laid over it: a new object. */
function overlay(
  base: unknown,
  entries: readonly [string, number][],
  locals: unknown[],
): Record<string, unknown> {
  const out: Record<string, unknown> =
    typeof base === "object" && base !== null && !Array.isArray(base)
      ? { ...(base as Record<string, unknown>) }
      : {};
  for (const [k, slot] of entries) {
    const v = locals[slot] === undefined ? null : locals[slot];
    if (k === "__proto__")
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

/**
 * `{"var": "vars"}` inside a scoped block: the enclosing vars with the block's vars laid over them (a new
 * object per read; the enclosing object is not changed).
 */
function blockVarsObject(scope: Scope, outer: Node): Node {
  const entries = [...(scope.blockVars as ReadonlyMap<string, number>)];
  return (d, s) => overlay(outer(d, s), entries, s.locals);
}

/** Generic reader (long paths, `__proto__`): used for computed paths and paths over three segments. */
function compileStaticPath(path: unknown, scope: Scope): Reader {
  const block = scope.blockVars === undefined ? undefined : [...scope.blockVars];
  if (path === null || path === undefined || path === "") {
    if (block === undefined) return (d) => d;
    // The whole root inside a scoped block: its `vars` with the block's laid over them.
    return (d, locals) =>
      typeof d === "object" && d !== null && !Array.isArray(d)
        ? { ...(d as Obj), vars: overlay((d as Obj).vars, block, locals) }
        : d;
  }
  const segments = typeof path === "number" ? [String(path)] : parsePath(String(path));
  const first = segments[0];
  if (block !== undefined && first === "vars" && segments.length === 1)
    return (d, locals) => overlay(descend(d, segments, 0), block, locals);
  const slot = typeof first === "string" ? aliasSlot(scope, first) : undefined;
  if (slot !== undefined) return (_d, locals) => descend(locals[slot], segments, 1);
  const inBlock = first === "vars" ? blockSlot(scope, segments[1]) : undefined;
  if (inBlock !== undefined) return (_d, locals) => descend(locals[inBlock], segments, 2);
  return (d) => descend(d, segments, 0);
}

/**
 * `"1"` and `1` name the same property of every JSON value; the numeric form hits the fast indexed path of
 * arrays and strings.
 */
function keyOf(seg: Segment): Segment {
  return typeof seg === "string" && /^(0|[1-9][0-9]{0,8})$/.test(seg) ? Number(seg) : seg;
}

type Obj = Record<string | number, unknown>;

/** `fieldOf` of a `{"var": ""}` read: the root itself. */
export const IDENTITY = Symbol("the var root");
const FIELDS = new WeakMap<Node, string | typeof IDENTITY>();

/** Registers `node` as a plain read of one named key of its root (no default, no loop slot). */
function field(node: Node, key: string | typeof IDENTITY): Node {
  FIELDS.set(node, key);
  return standalone(node);
}

const STANDALONE = new WeakSet<Node>();
const SLOT_READS = new WeakMap<Node, number>();

/**
 * The slot when `node` reads a whole slot with no default (`{"var": "vars.x"}` in a mapper): unset reads
 * null. Templates read such slots inline instead of calling the node.
 */
export function slotOf(node: Node): number | undefined {
  return SLOT_READS.get(node);
}

/** Marks a read that uses only its root argument (never the state) and never returns undefined. */
function standalone(node: Node): Node {
  STANDALONE.add(node);
  return node;
}

/** True when `node` can run as `node(data)` alone: compileExpression returns it as the runner. */
export function isStandalone(node: Node): boolean {
  return STANDALONE.has(node);
}

/**
 * The key when `node` is `{"var": "<key>"}` (one plain object key from the root, no default) or IDENTITY
 * for `{"var": ""}`, so a consumer can read the value inline instead of calling the node (fused reads).
 */
export function fieldOf(node: Node): string | typeof IDENTITY | undefined {
  return FIELDS.get(node);
}

/** What `{"var": "<key>"}` returns for root `d`: the same rules as `descend`, missing → null. */
export function readField(d: unknown, key: string): unknown {
  if (d === null || d === undefined) return null;
  const v = (d as Obj)[key];
  return v === undefined || typeof v === "function" ? null : v;
}

/**
 * A `var` node for a path known at compile time, specialised on its length (0–4 segments after the root,
 * 0–3 after a loop slot)
 * and on its base (the data root or a loop slot) so a read is one closure call with inline property
 * accesses. `fb` runs when the path is missing (the default, or null). Same rules as `descend`.
 */
function staticVar(path: unknown, scope: Scope, fb: Node): Node {
  const noDefault = constantOf(fb) !== undefined && constantOf(fb)?.value === null;
  if ((path === null || path === undefined || path === "") && scope.blockVars !== undefined) {
    // The whole root inside a scoped block: its `vars` with the block's vars laid over them.
    const outer = staticVar(path, { ...scope, blockVars: undefined }, fb);
    const vars = blockVarsObject(scope, (d) =>
      typeof d === "object" && d !== null ? (d as Obj).vars : undefined,
    );
    return (d, s) => {
      const root = outer(d, s);
      if (typeof root !== "object" || root === null || Array.isArray(root)) return root;
      return { ...(root as Obj), vars: vars(d, s) };
    };
  }
  if (path === null || path === undefined || path === "") {
    if (scope.observed !== undefined) scope.observed.vars = true; // the whole root, `vars` included
    if (!noDefault) return (d, s) => (d === undefined ? fb(d, s) : d);
    return field((d) => (d === undefined ? null : d), IDENTITY);
  }
  const segments = typeof path === "number" ? [String(path)] : parsePath(String(path));
  const first = segments[0];
  const alias = typeof first === "string" ? aliasSlot(scope, first) : undefined;
  let slot = alias;
  let rest = (alias === undefined ? segments : segments.slice(1)).map(keyOf);
  if (alias === undefined && first === "vars" && segments.length === 1 && scope.blockVars !== undefined) {
    const outer = staticVar(path, { ...scope, blockVars: undefined }, NULL_NODE);
    const merged = blockVarsObject(scope, outer);
    return (d, s) => merged(d, s);
  }
  // `vars.<name>…` reads the slot of a scoped-block var of that name, else (in a mapper) the var's slot
  // (same value as the vars object, undefined until set).
  const second = segments[1];
  const inBlock = alias === undefined && first === "vars" ? blockSlot(scope, second) : undefined;
  const varSlot =
    inBlock ??
    (alias === undefined && first === "vars" && typeof second === "string"
      ? scope.vars?.get(second)
      : undefined);
  const fieldSlot = alias === undefined && typeof first === "string" ? scope.fields?.get(first) : undefined;
  if (varSlot !== undefined && segments.length <= 5 && !segments.includes("__proto__")) {
    slot = varSlot;
    rest = segments.slice(2).map(keyOf);
  } else if (fieldSlot !== undefined && segments.length <= 4 && !segments.includes("__proto__")) {
    // `message.…`, `ctx.…`, `meta.…` in a mapper: the root field is in a slot.
    slot = fieldSlot;
    rest = segments.slice(1).map(keyOf);
  } else if (alias === undefined && first === "vars" && scope.observed !== undefined) {
    scope.observed.vars = true;
  }
  if (rest.includes("__proto__") || rest.length > 4 || (slot !== undefined && rest.length > 3)) {
    const read = compileStaticPath(path, scope);
    return (d, s) => {
      const v = read(d, s.locals);
      return v === undefined ? fb(d, s) : v;
    };
  }
  const [k0, k1, k2] = rest as [Segment, Segment, Segment];
  if (slot !== undefined) return slotVar(slot, rest, k0, k1, k2, fb);
  if (rest.length === 1) {
    if (noDefault && typeof k0 === "string") return field((d) => readField(d, k0), k0);
    return (d, s) => {
      if (d === null || d === undefined) return fb(d, s);
      const v = (d as Obj)[k0];
      return v === undefined || typeof v === "function" ? fb(d, s) : v;
    };
  }
  if (rest.length === 2 && noDefault) {
    return standalone((d) => {
      if (d === null || d === undefined) return null;
      const a = (d as Obj)[k0] as Obj | null | undefined;
      if (a === null || a === undefined || typeof a === "function") return null;
      const v = a[k1];
      return v === undefined || typeof v === "function" ? null : v;
    });
  }
  if (rest.length === 2) {
    return (d, s) => {
      if (d === null || d === undefined) return fb(d, s);
      const a = (d as Obj)[k0] as Obj | null | undefined;
      if (a === null || a === undefined || typeof a === "function") return fb(d, s);
      const v = a[k1];
      return v === undefined || typeof v === "function" ? fb(d, s) : v;
    };
  }
  if (rest.length === 3) {
    return (d, s) => {
      if (d === null || d === undefined) return fb(d, s);
      const a = (d as Obj)[k0] as Obj | null | undefined;
      if (a === null || a === undefined || typeof a === "function") return fb(d, s);
      const b = a[k1] as Obj | null | undefined;
      if (b === null || b === undefined || typeof b === "function") return fb(d, s);
      const v = b[k2];
      return v === undefined || typeof v === "function" ? fb(d, s) : v;
    };
  }
  // Four segments from the root: `message.from.0.email`.
  const k3 = rest[3] as Segment;
  return (d, s) => {
    if (d === null || d === undefined) return fb(d, s);
    const a = (d as Obj)[k0] as Obj | null | undefined;
    if (a === null || a === undefined || typeof a === "function") return fb(d, s);
    const b = a[k1] as Obj | null | undefined;
    if (b === null || b === undefined || typeof b === "function") return fb(d, s);
    const e = b[k2] as Obj | null | undefined;
    if (e === null || e === undefined || typeof e === "function") return fb(d, s);
    const v = e[k3];
    return v === undefined || typeof v === "function" ? fb(d, s) : v;
  };
}

/** A read from a loop slot (or a mapper var's slot) then up to three segments; same rules as `descend`. */
function slotVar(
  slot: number,
  rest: readonly Segment[],
  k0: Segment,
  k1: Segment,
  k2: Segment,
  fb: Node,
): Node {
  if (rest.length === 0) {
    const node: Node = (d, s) => (s.locals[slot] === undefined ? fb(d, s) : s.locals[slot]);
    if (constantOf(fb)?.value === null) SLOT_READS.set(node, slot);
    return node;
  }
  if (rest.length === 1) {
    return (d, s) => {
      const o = s.locals[slot] as Obj | null | undefined;
      if (o === null || o === undefined) return fb(d, s);
      const v = o[k0];
      return v === undefined || typeof v === "function" ? fb(d, s) : v;
    };
  }
  if (rest.length === 2) {
    return (d, s) => {
      const o = s.locals[slot] as Obj | null | undefined;
      if (o === null || o === undefined) return fb(d, s);
      const a = o[k0] as Obj | null | undefined;
      if (a === null || a === undefined || typeof a === "function") return fb(d, s);
      const v = a[k1];
      return v === undefined || typeof v === "function" ? fb(d, s) : v;
    };
  }
  return (d, s) => {
    const o = s.locals[slot] as Obj | null | undefined;
    if (o === null || o === undefined) return fb(d, s);
    const a = o[k0] as Obj | null | undefined;
    if (a === null || a === undefined || typeof a === "function") return fb(d, s);
    const b = a[k1] as Obj | null | undefined;
    if (b === null || b === undefined || typeof b === "function") return fb(d, s);
    const v = b[k2];
    return v === undefined || typeof v === "function" ? fb(d, s) : v;
  };
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
    // The default is evaluated only when the path is missing: its nodes are a block of their own.
    const fallback: Node = list.length > 1 ? c.block(defaultExpr, scope) : NULL_NODE;
    if (isStatic(pathExpr)) return staticVar(pathExpr, scope, fallback);
    // A computed path (e.g. `{"var": {"cat": [...]}}`) is resolved per evaluation.
    const pathNode = c.compile(pathExpr, scope);
    if (scope.observed !== undefined) scope.observed.vars = true;
    return (d, s) => {
      const p = pathNode(d, s);
      const v = isStatic(p) ? compileStaticPath(p, scope)(d, s.locals) : NOT_FOUND;
      if (v !== undefined && v !== NOT_FOUND) return v;
      return fallback(d, s);
    };
  },
};
