/**
 * Hand-written structural validation of mapper configs. Chosen over reporting ajv's errors because an
 * expression is an `anyOf` of many shapes and ajv then reports every branch; a walk that knows which
 * operator it is in says one precise sentence per problem. The JSON Schema in schema.ts is generated
 * from the same operator table and registry, and tests check that both agree.
 */
import { distance } from "fastest-levenshtein";
import type { MapperConfigIssue, MapperErrorCode } from "./errors.ts";
import { functionNames, getFunction } from "./functions/registry.ts";
import { MAX_DEPTH } from "./guards.ts";
import {
  DOTTED_OPERATOR,
  isOperator,
  OPERATOR_NAMES,
  OPERATORS,
  RESERVED_JSONLOGIC,
} from "./operators/table.ts";
import type { OpShape } from "./operators/types.ts";
import { isPlainObject, isScopedBlock } from "./operators/types.ts";
import { regexError } from "./regex.ts";

/** One problem: a JSON pointer, a sentence, and the guard's code when a limit was passed. */
export type ValidationIssue = MapperConfigIssue;
/**
 * `warnings` (present only when there are some) point at things that are valid but probably not meant:
 * a literal object whose key is one typo away from an operator or helper name.
 */
export type ValidationResult =
  | { ok: true; warnings?: ValidationIssue[] }
  | { ok: false; errors: ValidationIssue[]; warnings?: ValidationIssue[] };

export const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_ERRORS = 50;
const CONFIG_KEYS = ["version", "vars", "output", "meta"];
const VAR_KEYS = ["name", "expr", "description"];

/** RFC 6901 escaping of one reference token. */
const token = (k: string | number) => String(k).replace(/~/g, "~0").replace(/\//g, "~1");
const show = (v: unknown) => JSON.stringify(v) ?? String(v);

/** Keys and their roles in the object forms of the array operators (docs/mapper.md, "Array operators"). */
export const ITER_FORMS: Record<"do" | "where" | "reduce", { keys: string[]; required: string[] }> = {
  do: { keys: ["over", "as", "do"], required: ["over", "as", "do"] },
  where: { keys: ["over", "as", "where"], required: ["over", "as", "where"] },
  reduce: { keys: ["over", "do", "start"], required: ["over", "do"] },
};

/** Names a near miss is compared with: every operator and every `call.<helper>`. */
function knownNames(): string[] {
  return [...OPERATOR_NAMES, "call", ...functionNames().map((f) => `call.${f}`)];
}

/**
 * The operator or helper name `key` looks like a typo of, or null: edit distance 1 from a name of 3 or
 * more characters, 2 from one of 6 or more (compared case-insensitively), and `concat` for `cat`.
 */
export function nearMiss(key: string, names: readonly string[] = knownNames()): string | null {
  if (key === "concat") return "cat";
  const lower = key.toLowerCase();
  let best: string | null = null;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of names) {
    if (name === key || name.length < 3 || Math.abs(name.length - lower.length) > 2) continue;
    const d = distance(lower, name.toLowerCase());
    const limit = name.length >= 6 ? 2 : 1;
    if (d <= limit && d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

const hint = (near: string | null) => (near === null ? "" : ` — did you mean ${show(near)}?`);

/** Keys of `substr`'s object form (`{"substr": {"value": …, "start": 0, "end": 80}}`). */
const SUBSTR_KEYS = ["value", "start", "end"];

class Walker {
  readonly errors: ValidationIssue[] = [];
  readonly warnings: ValidationIssue[] = [];
  private names: string[] | undefined;

  warn(path: string, message: string): void {
    if (this.warnings.length < MAX_ERRORS) this.warnings.push({ path, message });
  }

  near(key: string): string | null {
    this.names ??= knownNames();
    return nearMiss(key, this.names);
  }

  add(path: string, message: string, code?: MapperErrorCode): void {
    if (this.errors.length < MAX_ERRORS) this.errors.push(code ? { path, message, code } : { path, message });
  }

  /** Checks that `obj` has only `allowed` keys and every `required` key. */
  keys(
    obj: Record<string, unknown>,
    path: string,
    allowed: string[],
    required: string[],
    what: string,
  ): void {
    for (const k of Object.keys(obj)) {
      if (!allowed.includes(k))
        this.add(`${path}/${token(k)}`, `unknown key ${show(k)} in ${what} (allowed: ${allowed.join(", ")})`);
    }
    for (const k of required) {
      if (!Object.hasOwn(obj, k)) this.add(path, `${what} is missing the required key ${show(k)}`);
    }
  }

  expr(e: unknown, path: string, depth: number): void {
    if (this.errors.length >= MAX_ERRORS) return;
    if (depth > MAX_DEPTH) {
      this.add(
        path,
        `expression is nested deeper than ${MAX_DEPTH} levels (each operator, array, template object and value counts as one)`,
        "mapper.depth_exceeded",
      );
      return;
    }
    if (e === null || typeof e === "string" || typeof e === "boolean") return;
    if (typeof e === "number") {
      if (!Number.isFinite(e)) this.add(path, "numbers must be finite JSON numbers");
      return;
    }
    if (Array.isArray(e)) {
      for (let i = 0; i < e.length; i++) this.expr(e[i], `${path}/${i}`, depth + 1);
      return;
    }
    if (!isPlainObject(e)) {
      this.add(path, `${typeof e} is not a JSON value`);
      return;
    }
    const keys = Object.keys(e);
    if (keys.length === 1) {
      const key = keys[0]!;
      const at = `${path}/${token(key)}`;
      if (isOperator(key)) {
        this.operator(key, OPERATORS[key]!.shape, e[key], at, depth);
        return;
      }
      if (key === "call") {
        this.callObject(e[key], at, depth);
        return;
      }
      if (key.startsWith("call.")) {
        this.call(key.slice(5), e[key], depth, at, at);
        return;
      }
      if (RESERVED_JSONLOGIC.has(key)) {
        this.add(at, `${show(key)} is a JsonLogic operator that mapper v1 does not support`);
        return;
      }
      if (DOTTED_OPERATOR.test(key)) {
        const near = this.near(key);
        this.add(
          at,
          near === null
            ? `unknown operator ${show(key)} (v1 operators: ${OPERATOR_NAMES.join(", ")}, call.<fn>)`
            : `unknown operator ${show(key)}${hint(near)}`,
        );
        return;
      }
      const near = this.near(key);
      if (near !== null) {
        this.warn(at, `${show(key)} is not an operator, so this object is emitted as a literal${hint(near)}`);
      }
    }
    if (isScopedBlock(e)) {
      this.block(e, path, depth);
      return;
    }
    for (const k of keys) this.expr(e[k], `${path}/${token(k)}`, depth + 1);
  }

  /** A var list `[{name, expr, description?}]`, at top level or in a scoped block. */
  vars(list: unknown, path: string, depth: number): void {
    if (!Array.isArray(list)) {
      this.add(path, "vars must be an array of {name, expr, description?}");
      return;
    }
    for (const [i, v] of list.entries()) {
      const at = `${path}/${i}`;
      if (!isPlainObject(v)) {
        this.add(at, "each var must be an object {name, expr, description?}");
        continue;
      }
      this.keys(v, at, VAR_KEYS, ["name", "expr"], "a var");
      if (Object.hasOwn(v, "name") && (typeof v.name !== "string" || !VAR_NAME.test(v.name))) {
        this.add(`${at}/name`, `var name ${show(v.name)} must match ${VAR_NAME.source}`);
      }
      if (Object.hasOwn(v, "description") && typeof v.description !== "string") {
        this.add(`${at}/description`, "description must be a string");
      }
      if (Object.hasOwn(v, "expr")) this.expr(v.expr, `${at}/expr`, depth);
    }
  }

  /** A scoped block `{vars, output}`: its vars as top-level vars, then its output. */
  block(e: Record<string, unknown>, path: string, depth: number): void {
    if (!Array.isArray(e.vars)) {
      this.add(
        `${path}/vars`,
        'an object with exactly the keys "vars" and "output" is a scoped block, and its vars must be an array of {name, expr}; to emit such an object literally, build it with merge',
      );
      return;
    }
    this.vars(e.vars, `${path}/vars`, depth + 1);
    this.expr(e.output, `${path}/output`, depth + 1);
  }

  /** A constant regex pattern must compile (RE2); a computed one yields null at run time when it does not. */
  pattern(value: unknown, path: string): void {
    if (!isPlainObject(value) || typeof value.pattern !== "string") return;
    const problem = regexError(value.pattern);
    if (problem !== null) this.add(`${path}/pattern`, `invalid regex pattern: ${problem}`);
  }

  operator(name: string, shape: OpShape, value: unknown, path: string, depth: number): void {
    if (name === "substr" && isPlainObject(value) && Object.hasOwn(value, "value")) {
      this.keys(value, path, SUBSTR_KEYS, ["value"], "substr");
      for (const k of SUBSTR_KEYS)
        if (Object.hasOwn(value, k)) this.expr(value[k], `${path}/${k}`, depth + 1);
      return;
    }
    if (name.startsWith("regex.")) this.pattern(value, path);
    if (shape.kind === "args") {
      if (Array.isArray(value))
        for (let i = 0; i < value.length; i++) this.expr(value[i], `${path}/${i}`, depth + 1);
      else this.expr(value, path, depth + 1);
      return;
    }
    if (shape.kind === "named") {
      if (!isPlainObject(value)) {
        this.add(path, `${name} takes an object {${shape.props.join(", ")}}`);
        return;
      }
      this.keys(value, path, [...shape.props], [...shape.required], name);
      for (const k of shape.props)
        if (Object.hasOwn(value, k)) this.expr(value[k], `${path}/${k}`, depth + 1);
      return;
    }
    const form = ITER_FORMS[shape.form];
    if (Array.isArray(value)) {
      const max = shape.form === "reduce" ? 3 : 2;
      if (value.length < 1 || value.length > max) {
        this.add(
          path,
          `${name} takes [array, logic${max === 3 ? ", initial" : ""}], got ${value.length} item(s)`,
        );
      }
      for (let i = 0; i < value.length; i++) this.expr(value[i], `${path}/${i}`, depth + 1);
      return;
    }
    if (!isPlainObject(value)) {
      this.add(path, `${name} takes [array, logic] or an object {${form.keys.join(", ")}}`);
      return;
    }
    this.keys(value, path, form.keys, form.required, name);
    if (Object.hasOwn(value, "as") && (typeof value.as !== "string" || !VAR_NAME.test(value.as))) {
      this.add(`${path}/as`, `"as" must be a name matching ${VAR_NAME.source}`);
    }
    for (const k of form.keys) {
      if (k !== "as" && Object.hasOwn(value, k)) this.expr(value[k], `${path}/${k}`, depth + 1);
    }
  }

  callObject(value: unknown, path: string, depth: number): void {
    if (!isPlainObject(value)) {
      this.add(path, `call takes an object {fn, args?}`);
      return;
    }
    this.keys(value, path, ["fn", "args"], ["fn"], "call");
    if (!Object.hasOwn(value, "fn")) return;
    if (typeof value.fn !== "string") {
      this.add(`${path}/fn`, "fn must be a string");
      return;
    }
    const args = Object.hasOwn(value, "args") ? value.args : {};
    this.call(value.fn, args, depth, `${path}/args`, `${path}/fn`);
  }

  call(fn: string, args: unknown, depth: number, argsPath: string, fnPath = argsPath): void {
    const spec = getFunction(fn);
    if (spec === undefined) {
      const near = nearMiss(fn, functionNames());
      this.add(
        fnPath,
        near === null
          ? `unknown function ${show(fn)} (known: ${functionNames().join(", ")})`
          : `unknown function ${show(fn)}${hint(near)}`,
      );
      return;
    }
    if (!isPlainObject(args)) {
      this.add(argsPath, `arguments of ${fn} must be an object`);
      return;
    }
    for (const [k, arg] of Object.entries(spec.args)) {
      if (arg.required === true && !Object.hasOwn(args, k))
        this.add(argsPath, `${fn} is missing the required argument ${show(k)}`);
    }
    for (const problem of spec.check?.(args) ?? []) {
      const rel = problem.path.split("/").map(token).join("/");
      this.add(`${argsPath}/${rel}`, `${fn}: ${problem.message}`);
    }
    for (const [k, v] of Object.entries(args)) {
      const arg = spec.args[k];
      const at = `${argsPath}/${token(k)}`;
      if (arg === undefined || !Object.hasOwn(spec.args, k)) {
        this.add(at, `${fn} has no argument ${show(k)} (arguments: ${Object.keys(spec.args).join(", ")})`);
        continue;
      }
      if (isLiteral(v) && v !== null && arg.type !== "any" && literalType(v) !== arg.type) {
        this.add(at, `${fn} argument ${show(k)} must be a ${arg.type}, got ${literalType(v)}`);
        continue;
      }
      this.expr(v, at, depth + 1);
    }
  }
}

function isLiteral(v: unknown): boolean {
  return v === null || typeof v !== "object";
}
function literalType(v: unknown): string {
  return typeof v;
}

/** Validates one expression; returns its problems (empty when valid). Paths are relative to the expression. */
export function validateExpression(expr: unknown, path = ""): ValidationIssue[] {
  const w = new Walker();
  w.expr(expr, path, 1);
  return w.errors;
}

/** The near-miss warnings of one expression (empty when there are none). */
export function expressionWarnings(expr: unknown, path = ""): ValidationIssue[] {
  const w = new Walker();
  w.expr(expr, path, 1);
  return w.warnings;
}

/** The JSON pointer of the first value nested deeper than `limit` objects/arrays, else null (iterative). */
function deeperThan(value: unknown, limit: number): string | null {
  const stack: [unknown, string, number][] = [[value, "", 1]];
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop() as [unknown, string, number];
    if (v === null || typeof v !== "object") continue;
    if (depth > limit) return path;
    for (const [k, child] of Object.entries(v)) stack.push([child, `${path}/${token(k)}`, depth + 1]);
  }
  return null;
}

/**
 * Validates a `map.custom_json` config (schema `custom_json_mapper@1` plus the depth limit). Never
 * throws; each problem has a JSON pointer relative to the config root and a sentence for a person.
 */
export function validateMapperConfig(config: unknown): ValidationResult {
  try {
    const w = new Walker();
    if (!isPlainObject(config)) {
      w.add("", "the mapper config must be an object {version, vars?, output, meta?}");
      return { ok: false, errors: w.errors };
    }
    w.keys(config, "", CONFIG_KEYS, ["version", "output"], "the mapper config");
    if (Object.hasOwn(config, "version") && config.version !== "v1") {
      w.add("/version", `version must be "v1", got ${show(config.version)}`);
    }
    if (Object.hasOwn(config, "meta")) {
      if (!isPlainObject(config.meta)) w.add("/meta", "meta must be an object");
      else {
        const deep = deeperThan(config.meta, MAX_DEPTH);
        if (deep !== null)
          w.add(`/meta${deep}`, `meta is nested deeper than ${MAX_DEPTH} levels`, "mapper.depth_exceeded");
      }
    }
    if (Object.hasOwn(config, "vars")) w.vars(config.vars, "/vars", 1);
    if (Object.hasOwn(config, "output")) w.expr(config.output, "/output", 1);
    const warnings = w.warnings.length > 0 ? { warnings: w.warnings } : {};
    return w.errors.length === 0 ? { ok: true, ...warnings } : { ok: false, errors: w.errors, ...warnings };
  } catch (err) {
    // Exotic inputs (proxies, getters that throw, cyclic structures) must not escape as exceptions.
    return {
      ok: false,
      errors: [
        {
          path: "",
          message: `config could not be read: ${err instanceof Error ? err.message : String(err)}`,
        },
      ],
    };
  }
}
