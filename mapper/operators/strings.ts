/** `cat`, `substr`, `merge` (JsonLogic) and the `string.*` helpers (spec "String helpers"). */
import { MapperRuntimeError } from "../errors.ts";
import { checkLength } from "../guards.ts";
import type { Compiler, Node, OperatorSpec, Scope } from "./types.ts";
import { argList, compileUsed, constantOf, defineKey, isPlainObject } from "./types.ts";

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

/** One `cat` argument with Array.prototype.join semantics, as json-logic-js: null → "", arrays comma-joined. */
function catText(v: unknown): string {
  if (typeof v === "string") return v;
  return v === null || v === undefined ? "" : String(v);
}

/** Renders an item for `string.join`: text as is, null as "", structures as JSON. */
function joinItem(v: unknown): string {
  if (v === null || v === undefined) return "";
  return asText(v) ?? JSON.stringify(v);
}

export const stringOperators: Record<string, OperatorSpec> = {
  cat: {
    shape: args,
    compile(value, c, scope) {
      const nodes = argList(value).map((x) => c.compile(x, scope));
      // Constant parts are rendered once; the try/catch is inline (cat is a risky operator: a hostile
      // structure can make String() throw, which yields null) instead of a wrapper closure.
      const texts = nodes.map((n) => {
        const k = constantOf(n);
        if (k === undefined) return null;
        try {
          return catText(k.value);
        } catch {
          return null;
        }
      });
      const parts = nodes.map((n, i) => (texts[i] === null ? n : null));
      return (d, s) => {
        try {
          let out = "";
          for (let i = 0; i < parts.length; i++) {
            const p = parts[i];
            out += p === null ? texts[i]! : catText(p!(d, s));
          }
          return checkLength(out);
        } catch (err) {
          if (err instanceof MapperRuntimeError) throw err;
          return null;
        }
      };
    },
  },
  substr: {
    shape: args,
    compile(value, c, scope) {
      const [src = NULL, start = NULL, len] = compileUsed(value, c, scope, 3);
      return (d, s) => {
        const text = String(src(d, s));
        const from = Number(start(d, s)) || 0;
        const begin = from < 0 ? Math.max(text.length + from, 0) : from;
        if (len === undefined) return text.slice(begin);
        const l = Number(len(d, s));
        // A negative length drops characters from the end (PHP behaviour, as json-logic-js).
        if (l < 0) return text.slice(begin, Math.max(text.length + l, begin));
        return text.slice(begin, begin + (Number.isNaN(l) ? 0 : l));
      };
    },
  },
  merge: {
    shape: args,
    compile(value, c, scope) {
      const nodes = argList(value).map((x) => c.compile(x, scope));
      const flatten = (vals: unknown[]): unknown => {
        // Contract §6: all-object arguments merge shallowly (later keys win); otherwise flatten one level.
        let allObjects = vals.length > 0;
        for (let i = 0; i < vals.length && allObjects; i++) allObjects = isPlainObject(vals[i]);
        if (allObjects) {
          const merged: Record<string, unknown> = {};
          for (const v of vals as Record<string, unknown>[]) {
            for (const k of Object.keys(v)) defineKey(merged, k, v[k]);
          }
          return merged;
        }
        const out: unknown[] = [];
        for (const v of vals) {
          if (Array.isArray(v)) for (let i = 0; i < v.length; i++) out.push(v[i]);
          else out.push(v);
        }
        return checkLength(out);
      };
      if (nodes.length === 2) {
        const [a, b] = nodes as [Node, Node];
        return (d, s) => flatten([a(d, s), b(d, s)]);
      }
      return (d, s) => {
        const vals = new Array<unknown>(nodes.length);
        for (let i = 0; i < nodes.length; i++) vals[i] = nodes[i]!(d, s);
        return flatten(vals);
      };
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
