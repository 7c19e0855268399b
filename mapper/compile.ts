/**
 * Config → tree of closures, built once and cached by the config's stable hash. No `eval`, no
 * `new Function`: each operator factory returns a closure specialised for its arguments (arity, static var
 * paths, constant folding of literals), so evaluation allocates only the values it produces.
 */
import { MapperRuntimeError } from "./errors.ts";
import { getFunction } from "./functions/registry.ts";
import {
  CALL_TIMEOUT_MS,
  checkLength,
  checkOutputSize,
  type EvalState,
  MAX_DEPTH,
  MAX_NODES,
  nodesExceeded,
  timed,
} from "./guards.ts";
import { configHash } from "./hash.ts";
import { isOperator, OPERATORS } from "./operators/table.ts";
import type { Compiler, Node, Scope } from "./operators/types.ts";
import { defineKey, isPlainObject } from "./operators/types.ts";
import type { MapperConfig, MapperInput } from "./types.ts";
import { validateExpression, validateMapperConfig } from "./validate.ts";

/**
 * Operators whose implementation can raise an ordinary error on odd input (helpers, coercions of deep
 * structures). Only they pay for a try/catch; the JsonLogic core operators cannot throw on JSON values.
 */
const RISKY = (op: string) =>
  op.includes(".") || op === "cat" || op === "substr" || op === "merge" || op === "in";

/** Wraps an operator: counts it against the node budget; with `risky`, an ordinary error yields null (spec rule 4). */
function guarded(inner: Node, risky: boolean): Node {
  if (!risky) {
    return (d, s) => {
      if (++s.nodes > MAX_NODES) nodesExceeded();
      return inner(d, s);
    };
  }
  return (d, s) => {
    if (++s.nodes > MAX_NODES) nodesExceeded();
    try {
      return inner(d, s);
    } catch (err) {
      if (err instanceof MapperRuntimeError) throw err;
      return null;
    }
  };
}

/** True when nothing in `expr` reads data or calls out: it can be evaluated once at compile time. */
function isDataIndependent(expr: unknown): boolean {
  if (expr === null || typeof expr !== "object") return true;
  if (Array.isArray(expr)) return expr.every(isDataIndependent);
  for (const k of Object.keys(expr)) {
    if (k === "var" || k === "call" || k.startsWith("call.") || k.startsWith("regex.")) return false;
    if (!isDataIndependent((expr as Record<string, unknown>)[k])) return false;
  }
  return true;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  return v;
}

/**
 * Constant folding: a data-independent operator is evaluated once and becomes a constant (frozen when it
 * is a structure, so a caller cannot mutate what later runs return). Guard errors are left to run time.
 */
function fold(expr: unknown, node: Node): Node {
  if (!isDataIndependent(expr)) return node;
  try {
    const v = deepFreeze(node(null, { nodes: 0, locals: [], root: null }));
    const value = v === undefined ? null : v;
    return () => value;
  } catch {
    return node;
  }
}

function compileCall(fn: unknown, args: unknown, c: Compiler, scope: Scope): Node {
  const spec = typeof fn === "string" ? getFunction(fn) : undefined;
  if (spec === undefined) return () => null;
  const entries = Object.entries(isPlainObject(args) ? args : {}).map(
    ([k, v]) => [k, c.compile(v, scope)] as const,
  );
  return (d, s) => {
    const given: Record<string, unknown> = {};
    for (const [k, node] of entries) defineKey(given, k, node(d, s));
    const result = timed("mapper.call_timeout", CALL_TIMEOUT_MS, () => spec.run(given, s.root));
    return typeof result === "string" || Array.isArray(result) ? checkLength(result) : result;
  };
}

/** A compiler instance tracks nesting depth while it walks one config. */
function createCompiler(): Compiler {
  let depth = 0;
  const compiler: Compiler = {
    compile(expr, scope) {
      if (++depth > MAX_DEPTH) {
        throw new MapperRuntimeError(
          "mapper.depth_exceeded",
          `expression nested deeper than ${MAX_DEPTH} levels`,
        );
      }
      try {
        return compileNode(expr, scope);
      } finally {
        depth--;
      }
    },
  };
  const compileNode = (expr: unknown, scope: Scope): Node => {
    if (expr === null || expr === undefined || typeof expr !== "object") {
      const v = expr === undefined ? null : expr;
      return () => v;
    }
    if (Array.isArray(expr)) {
      const nodes = expr.map((e) => compiler.compile(e, scope));
      return (d, s) => {
        const out = new Array<unknown>(nodes.length);
        for (let i = 0; i < nodes.length; i++) out[i] = nodes[i]!(d, s);
        return out;
      };
    }
    const obj = expr as Record<string, unknown>;
    const keys = Object.keys(obj);
    if (keys.length === 1) {
      const key = keys[0]!;
      if (isOperator(key))
        return fold(expr, guarded(OPERATORS[key]!.compile(obj[key], compiler, scope), RISKY(key)));
      if (key === "call") {
        const v = isPlainObject(obj.call) ? obj.call : {};
        return guarded(compileCall(v.fn, v.args, compiler, scope), true);
      }
      if (key.startsWith("call.")) return guarded(compileCall(key.slice(5), obj[key], compiler, scope), true);
    }
    // A literal object whose values are expressions (contract §6 templates).
    const entries = keys.map((k) => [k, compiler.compile(obj[k], scope)] as const);
    return (d, s) => {
      const out: Record<string, unknown> = {};
      for (const [k, node] of entries) {
        const v = node(d, s);
        defineKey(out, k, v === undefined ? null : v);
      }
      return out;
    };
  };
  return compiler;
}

function newScope(): Scope {
  return { aliases: new Map(), slots: { count: 0 } };
}

function invalid(errors: { path: string; message: string }[]): never {
  const first = errors[0];
  throw new MapperRuntimeError(
    "mapper.invalid_config",
    first ? `invalid mapper config at ${first.path || "/"}: ${first.message}` : "invalid mapper config",
    errors,
  );
}

const CACHE_LIMIT = 500;
function remember<T>(cache: Map<string, T>, key: string, make: () => T): T {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const made = make();
  if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, made);
  return made;
}

/**
 * A compiled mapper: input → output JSON value. Throws MapperRuntimeError on a guard overrun. When
 * `stats` is given, it receives the number of nodes evaluated (for the REPL and diagnostics).
 */
export type CompiledMapper = (input: MapperInput, stats?: { nodes: number }) => unknown;

const mapperCache = new Map<string, CompiledMapper>();
const expressionCache = new Map<string, (data: unknown) => unknown>();

/**
 * Validates and compiles a `map.custom_json` config once (cached by stable hash; treat configs as
 * immutable once compiled). Throws MapperRuntimeError `mapper.invalid_config` (with `details`) or
 * `mapper.depth_exceeded` for a config that cannot run.
 */
export function compileMapper(config: unknown): CompiledMapper {
  return remember(mapperCache, configHash(config), () => {
    const check = validateMapperConfig(config);
    if (!check.ok) invalid(check.errors);
    const cfg = config as MapperConfig;
    const compiler = createCompiler();
    const scope = newScope();
    const vars = (cfg.vars ?? []).map((v) => [v.name, compiler.compile(v.expr, scope)] as const);
    const output = compiler.compile(cfg.output, scope);
    return (input, stats) => {
      const varValues: Record<string, unknown> = {};
      const root = { message: input.message, ctx: input.ctx, meta: input.meta ?? {}, vars: varValues };
      const s: EvalState = { nodes: 0, locals: [], root };
      // In order: a later var sees earlier ones; a forward reference reads null (not yet defined).
      for (const [name, node] of vars) {
        const v = node(root, s);
        defineKey(varValues, name, v === undefined ? null : v);
      }
      const out = output(root, s);
      const result = out === undefined ? null : out;
      if (stats) stats.nodes = s.nodes;
      checkOutputSize(result);
      return result;
    };
  });
}

/**
 * Compiles one expression for plain JsonLogic use: `data` is the `var` root (contract §6). Validation
 * errors throw MapperRuntimeError `mapper.invalid_config`. The node and value-length guards apply.
 */
export function compileExpression(expr: unknown): (data: unknown) => unknown {
  return remember(expressionCache, configHash(expr), () => {
    const errors = validateExpression(expr);
    if (errors.length > 0) invalid(errors);
    const node = createCompiler().compile(expr, newScope());
    return (data) => {
      const v = node(data, { nodes: 0, locals: [], root: data });
      return v === undefined ? null : v;
    };
  });
}

/** Evaluates one expression against `data` (compiled once, then cached). */
export function evaluateExpression(expr: unknown, data: unknown): unknown {
  return compileExpression(expr)(data);
}
