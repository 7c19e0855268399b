/** `cat`, `substr`, `merge` (JsonLogic) and the `string.*` helpers (spec "String helpers"). */
import { MapperRuntimeError } from "../errors.ts";
import { checkLength } from "../guards.ts";
import type { Compiler, Node, OperatorSpec, Scope } from "./types.ts";
import { argList, compileUsed, constantOf, defineKey, isPlainObject, total } from "./types.ts";
import { slotOf } from "./var.ts";

const args = { kind: "args" } as const;
const NULL: Node = () => null;

function named(props: string[], required: string[]) {
  return { kind: "named", props, required } as const;
}

/** Compiles the named arguments of a helper; absent ones evaluate to undefined. */
function compileNamed(value: unknown, names: readonly string[], c: Compiler, scope: Scope): (Node | null)[] {
  const obj = isPlainObject(value) ? value : {};
  return names.map((n) => (Object.hasOwn(obj, n) ? c.compile(obj[n], scope) : null));
}

/** Strings pass through; numbers and booleans are stringified (as `cat` does); anything else is not text. */
function asText(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return null;
}

function asInt(v: unknown, fallback: number): number | null {
  if (v === undefined || v === null) return fallback;
  const n = typeof v === "number" ? v : typeof v === "string" && v.trim() !== "" ? Number(v) : Number.NaN;
  return Number.isFinite(n) ? Math.trunc(n) : null;
}

function unaryText(fn: (s: string) => string): OperatorSpec {
  return {
    shape: args,
    compile(value, c, scope) {
      const [a = NULL] = compileUsed(value, c, scope, 1);
      return (d, s) => {
        const t = asText(a(d, s));
        return t === null ? null : fn(t);
      };
    },
  };
}

/** Renders an item for `string.join`: text as is, null as "", structures as JSON. */
function joinItem(v: unknown): string {
  if (v === null || v === undefined) return "";
  return asText(v) ?? JSON.stringify(v);
}

/** JSON scalars (and an absent argument): coercing them cannot throw. */
function isScalar(v: unknown): boolean {
  return v === null || v === undefined || typeof v !== "object";
}

/** `String(v)`, or null when a hostile structure makes it throw. */
function textOf(v: unknown): string | null {
  if (typeof v === "string") return v;
  try {
    return String(v);
  } catch {
    return null;
  }
}

/** `Number(v)`, or null when a hostile structure makes it throw. */
function numberOf(v: unknown): number | null {
  if (typeof v === "number") return v;
  try {
    return Number(v);
  } catch {
    return null;
  }
}

/** json-logic-js `substr`: negative start counts from the end; negative length drops from the end. */
function substring(text: string, from: number, len: number | undefined): string {
  const begin = from < 0 ? Math.max(text.length + from, 0) : from;
  if (len === undefined) return text.slice(begin);
  // A negative length drops characters from the end (PHP behaviour, as json-logic-js).
  if (len < 0) return text.slice(begin, Math.max(text.length + len, begin));
  return text.slice(begin, begin + (Number.isNaN(len) ? 0 : len));
}

/**
 * `substr` in object form, `{value, start?, end?}`: the characters from `start` (default 0) up to, not
 * including, `end` (default the end of the text); a negative index counts from the end.
 */
function substrObject(value: Record<string, unknown>, c: Compiler, scope: Scope): Node {
  const src = c.compile(value.value, scope);
  const start = Object.hasOwn(value, "start") ? c.compile(value.start, scope) : null;
  const end = Object.hasOwn(value, "end") ? c.compile(value.end, scope) : null;
  return total((d, s) => {
    const v = src(d, s);
    const text = v === null || v === undefined ? null : textOf(v);
    if (text === null) return null;
    const rawFrom = start === null ? 0 : start(d, s);
    const from = rawFrom === null ? 0 : numberOf(rawFrom);
    if (from === null || Number.isNaN(from)) return null;
    const rawTo = end === null ? null : end(d, s);
    const to = rawTo === null ? text.length : numberOf(rawTo);
    if (to === null || Number.isNaN(to)) return null;
    return text.slice(Math.trunc(from), Math.trunc(to));
  });
}

/**
 * `merge` of evaluated arguments (docs/mapper.md, "Operators"): all-object arguments merge shallowly
 * (later keys win); otherwise arrays are flattened one level. JSON values cannot make it throw; an error
 * still yields null.
 */
function merged(vals: unknown[]): unknown {
  try {
    let allObjects = vals.length > 0;
    for (let i = 0; i < vals.length && allObjects; i++) allObjects = isPlainObject(vals[i]);
    if (allObjects) {
      const out: Record<string, unknown> = {};
      for (const v of vals as Record<string, unknown>[]) {
        for (const k of Object.keys(v)) defineKey(out, k, v[k]);
      }
      return out;
    }
    const out: unknown[] = [];
    for (const v of vals) {
      if (Array.isArray(v)) for (let i = 0; i < v.length; i++) out.push(v[i]);
      else out.push(v);
    }
    return checkLength(out);
  } catch (err) {
    if (err instanceof MapperRuntimeError) throw err;
    return null;
  }
}

/**
 * One `cat` argument's text with Array.prototype.join semantics, as json-logic-js (null → "", arrays
 * comma-joined), or null when `String()` throws (a hostile structure: the whole `cat` yields
 * null, as any error inside an operator does; docs/mapper.md, "Errors"). Only the rare non-string,
 * non-null argument reaches the try/catch.
 */
function catPiece(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (v === null || v === undefined) return "";
  try {
    return String(v);
  } catch {
    return null;
  }
}

/** `lead + slot + tail`: a `cat` whose only computed argument is a whole-slot read (see `slotCatOf`). */
export interface SlotCat {
  lead: string;
  slot: number;
  tail: string;
}

const SLOT_CATS = new WeakMap<Node, SlotCat>();

/**
 * The shape of `node` when it is `{"cat": [k…, {"var": x}, k…]}` with `x` a whole slot, so a loop can run
 * it inline with `catSlot` (the body of a string-building reduce: `{"cat": [{"var": "accumulator"}, "x"]}`).
 */
export function slotCatOf(node: Node): SlotCat | undefined {
  return SLOT_CATS.get(node);
}

/** What the node registered with `c` returns when its slot holds `v`. */
export function catSlot(c: SlotCat, v: unknown): string | null {
  const x = catPiece(v);
  return x === null ? null : checkLength(`${c.lead}${x}${c.tail}`);
}

/**
 * `cat` as `lead + x0 + tail0 + x1 + tail1 …`: adjacent constant arguments are rendered once at compile
 * time, and up to three computed arguments get a closure each (one string expression, no loop, no
 * array). An argument whose text fails ends the `cat` with null before the next one is evaluated.
 *
 * The string expression is a template literal, not a chain of `+`: JavaScriptCore compiles a template into
 * one concatenation of all its parts, while `lead + x + ta + …` with `lead` a variable is a chain of binary
 * additions, one rope each (a 3-part `cat` in the bench mapper: ≈ 165 → 135 ns).
 */
function compileCat(nodes: Node[]): Node {
  let lead = "";
  const parts: Node[] = [];
  const tails: string[] = [];
  for (const n of nodes) {
    const k = constantOf(n);
    // A constant whose text fails (a folded hostile structure) stays a part: it ends the cat at run time.
    const text = k === undefined ? null : catPiece(k.value);
    if (text === null) {
      parts.push(n);
      tails.push("");
    } else if (parts.length === 0) lead += text;
    else tails[tails.length - 1] += text;
  }
  const [a, b, e] = parts;
  const [ta = "", tb = "", te = ""] = tails;
  // Whole-slot arguments (`{"var": "vars.x"}` in a mapper, a loop alias) are read inline: an unset slot
  // renders "" like the null its read node returns.
  const [sa = -1, sb = -1, se = -1] = parts.map((n) => slotOf(n) ?? -1);
  if (a === undefined) return () => checkLength(lead); // folded by the compiler unless too long
  if (b === undefined) {
    const node: Node = (d, s) => {
      const x = catPiece(sa < 0 ? a(d, s) : s.locals[sa]);
      return x === null ? null : checkLength(`${lead}${x}${ta}`);
    };
    if (sa >= 0) SLOT_CATS.set(node, { lead, slot: sa, tail: ta });
    return node;
  }
  if (e === undefined) {
    return (d, s) => {
      const x = catPiece(sa < 0 ? a(d, s) : s.locals[sa]);
      if (x === null) return null;
      const y = catPiece(sb < 0 ? b(d, s) : s.locals[sb]);
      return y === null ? null : checkLength(`${lead}${x}${ta}${y}${tb}`);
    };
  }
  if (parts.length === 3) {
    return (d, s) => {
      const x = catPiece(sa < 0 ? a(d, s) : s.locals[sa]);
      if (x === null) return null;
      const y = catPiece(sb < 0 ? b(d, s) : s.locals[sb]);
      if (y === null) return null;
      const z = catPiece(se < 0 ? e(d, s) : s.locals[se]);
      return z === null ? null : checkLength(`${lead}${x}${ta}${y}${tb}${z}${te}`);
    };
  }
  return (d, s) => {
    let out = lead;
    for (let i = 0; i < parts.length; i++) {
      const x = catPiece(parts[i]!(d, s));
      if (x === null) return null;
      out += x + tails[i]!;
    }
    return checkLength(out);
  };
}

export const stringOperators: Record<string, OperatorSpec> = {
  cat: {
    shape: args,
    compile(value, c, scope) {
      return compileCat(argList(value).map((x) => c.compile(x, scope)));
    },
  },
  substr: {
    shape: args,
    compile(value, c, scope) {
      if (isPlainObject(value) && Object.hasOwn(value, "value")) return substrObject(value, c, scope);
      const [src = NULL, start = NULL, len] = compileUsed(value, c, scope, 3);
      const k0 = constantOf(start);
      const k1 = len === undefined ? { value: undefined } : constantOf(len);
      if (k0 !== undefined && k1 !== undefined && isScalar(k0.value) && isScalar(k1.value)) {
        // Constant bounds (`{"substr": [{"var": "text"}, 0, 140]}`): coerced once.
        const from = Number(k0.value) || 0;
        const l = k1.value === undefined ? undefined : Number(k1.value);
        return total((d, s) => {
          const text = textOf(src(d, s));
          return text === null ? null : substring(text, from, l);
        });
      }
      // Evaluated in order; a coercion that throws (a hostile structure) yields null before the next.
      return total((d, s) => {
        const text = textOf(src(d, s));
        if (text === null) return null;
        const from = numberOf(start(d, s));
        if (from === null) return null;
        if (len === undefined) return substring(text, from || 0, undefined);
        const l = numberOf(len(d, s));
        return l === null ? null : substring(text, from || 0, l);
      });
    },
  },
  merge: {
    shape: args,
    compile(value, c, scope) {
      const list = argList(value);
      // A literal array argument is flattened into the result anyway: its items are compiled in place
      // instead of building the array first (`{"merge": [[{"var": "a"}], …]}`).
      const literal = list.map((x) => Array.isArray(x));
      const nodes = list.map((x, i) => (literal[i] ? null : c.compile(x, scope)));
      const items = list.map((x, i) =>
        literal[i] ? (x as unknown[]).map((e) => c.compile(e, scope)) : null,
      );
      if (literal.some(Boolean)) {
        return total((d, s) => {
          const out: unknown[] = [];
          for (let i = 0; i < nodes.length; i++) {
            const group = items[i];
            if (group !== null && group !== undefined) {
              for (let j = 0; j < group.length; j++) out.push(group[j]!(d, s));
              continue;
            }
            const v = nodes[i]!(d, s);
            if (Array.isArray(v)) for (let j = 0; j < v.length; j++) out.push(v[j]);
            else out.push(v);
          }
          return checkLength(out);
        });
      }
      const all = nodes as Node[];
      if (all.length === 2) {
        const [a, b] = all as [Node, Node];
        return total((d, s) => merged([a(d, s), b(d, s)]));
      }
      return total((d, s) => {
        const vals = new Array<unknown>(all.length);
        for (let i = 0; i < all.length; i++) vals[i] = all[i]!(d, s);
        return merged(vals);
      });
    },
  },
  "string.lower": unaryText((t) => t.toLowerCase()),
  "string.upper": unaryText((t) => t.toUpperCase()),
  "string.trim": unaryText((t) => t.trim()),
  "string.slice": {
    shape: named(["value", "start", "end"], ["value"]),
    compile(value, c, scope) {
      const [v = null, start = null, end = null] = compileNamed(value, ["value", "start", "end"], c, scope);
      return (d, s) => {
        const t = asText(v?.(d, s));
        const a = asInt(start?.(d, s), 0);
        const b = end === null ? undefined : asInt(end(d, s), Number.POSITIVE_INFINITY);
        if (t === null || a === null || b === null) return null;
        return t.slice(a, b);
      };
    },
  },
  "string.split": {
    shape: named(["value", "sep"], ["value"]),
    compile(value, c, scope) {
      const [v = null, sep = null] = compileNamed(value, ["value", "sep"], c, scope);
      return (d, s) => {
        const t = asText(v?.(d, s));
        const sv = sep === null ? "," : asText(sep(d, s));
        if (t === null || sv === null) return null;
        return checkLength(sv === "" ? Array.from(t) : t.split(sv));
      };
    },
  },
  "string.join": {
    shape: named(["items", "sep"], ["items"]),
    compile(value, c, scope) {
      const [items = null, sep = null] = compileNamed(value, ["items", "sep"], c, scope);
      return (d, s) => {
        const list = items?.(d, s);
        const sv = sep === null ? "" : asText(sep(d, s));
        if (!Array.isArray(list) || sv === null) return null;
        return checkLength(list.map(joinItem).join(sv));
      };
    },
  },
  "string.replace": {
    shape: named(["value", "find", "with", "count"], ["value", "find"]),
    compile(value, c, scope) {
      const [v = null, find = null, repl = null, count = null] = compileNamed(
        value,
        ["value", "find", "with", "count"],
        c,
        scope,
      );
      return (d, s) => {
        const t = asText(v?.(d, s));
        const f = asText(find?.(d, s));
        const w = repl === null ? "" : asText(repl(d, s));
        const n = count === null ? Number.POSITIVE_INFINITY : asInt(count(d, s), Number.POSITIVE_INFINITY);
        if (t === null || f === null || w === null || n === null) return null;
        if (f === "" || n <= 0) return t;
        if (n === Number.POSITIVE_INFINITY) return checkLength(t.split(f).join(w));
        let out = "";
        let from = 0;
        for (let done = 0; done < n; done++) {
          const at = t.indexOf(f, from);
          if (at < 0) break;
          out += t.slice(from, at) + w;
          from = at + f.length;
        }
        return checkLength(out + t.slice(from));
      };
    },
  },
};
