/**
 * The `call.*` function registry. A helper is one file that calls `registerFunction` with its argument
 * schema, plus the line in `functions/index.ts` that imports it; the validator, the JSON Schema (`fn`
 * enum, argument names and literal types) and the compiler all read this registry, so nothing else
 * changes.
 */

/** Declared type of one named argument. A literal value must have this type; expressions are checked at run time. */
export interface FunctionArgSpec {
  /** `any`: a literal of any JSON type is accepted */
  type: "string" | "boolean" | "number" | "array" | "object" | "any";
  /** the validator reports a call without this argument */
  required?: boolean;
  /** allowed values of a string argument (documentation and schema only; run-time fallbacks still apply) */
  enum?: readonly string[];
  description: string;
}

/** A `call.<name>` helper. `run` receives the evaluated arguments that were given and the evaluation root. */
export interface MapperFunctionSpec {
  description: string;
  args: Readonly<Record<string, FunctionArgSpec>>;
  run(args: Readonly<Record<string, unknown>>, root: unknown): unknown;
  /**
   * Checks of the arguments as written in the config (validation time): `args` holds the literal values
   * and the expressions, so a check looks only at literals. Each problem names the argument path below
   * the helper's arguments (`selector`, `fields/title/selector`).
   */
  check?(args: Readonly<Record<string, unknown>>): { path: string; message: string }[];
}

const registry = new Map<string, MapperFunctionSpec>();

/**
 * Registers (or replaces) a `call.<name>` helper. Names are dotted lowercase identifiers such as
 * `extract.urls`. Configs compiled earlier keep the helper they were compiled with.
 */
export function registerFunction(name: string, spec: MapperFunctionSpec): void {
  if (!/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/.test(name)) {
    throw new Error(`function name ${JSON.stringify(name)} must be dotted lowercase, e.g. "extract.urls"`);
  }
  registry.set(name, spec);
}

export function getFunction(name: string): MapperFunctionSpec | undefined {
  return registry.get(name);
}

export function functionNames(): string[] {
  return [...registry.keys()].sort();
}

/**
 * Longest `html`/`text` a helper works on; longer input is cut to its first MAX_HELPER_INPUT_CHARS
 * characters rather than failing the mapper. On 1 M characters of link-dense HTML each helper takes 40–90
 * ms of a 2 GHz core, inside the 100 ms `call.*` budget; at 2 M `extract.bullet_list` took 147 ms.
 */
export const MAX_HELPER_INPUT_CHARS = 1_000_000;

/** A helper's `html` or `text` input: the argument when it is a string, else the message's field; capped. */
export function helperInput(
  args: Readonly<Record<string, unknown>>,
  root: unknown,
  field: "html" | "text",
): string {
  const value = typeof args[field] === "string" ? (args[field] as string) : messageField(root, field);
  if (value.length <= MAX_HELPER_INPUT_CHARS) return value;
  // Do not cut a surrogate pair in half.
  const high = value.charCodeAt(MAX_HELPER_INPUT_CHARS - 1);
  return value.slice(
    0,
    high >= 0xd800 && high <= 0xdbff ? MAX_HELPER_INPUT_CHARS - 1 : MAX_HELPER_INPUT_CHARS,
  );
}

/** Reads `message.<field>` from the evaluation root when it is a string; else "". */
export function messageField(root: unknown, field: "html" | "text"): string {
  if (typeof root !== "object" || root === null) return "";
  const message = (root as { message?: unknown }).message;
  if (typeof message !== "object" || message === null) return "";
  const v = (message as Record<string, unknown>)[field];
  return typeof v === "string" ? v : "";
}

/**
 * Mode selection shared by the extract helpers (spec "call.extract.urls"): a valid `mode` is honoured;
 * otherwise text mode when only `text` was given; otherwise HTML with fallback to text.
 */
export function selectMode(args: Readonly<Record<string, unknown>>): "html" | "text" | "auto" {
  if (args.mode === "html" || args.mode === "text") return args.mode;
  if (typeof args.text === "string" && typeof args.html !== "string") return "text";
  return "auto";
}

export function boolArg(v: unknown, fallback: boolean): boolean {
  return typeof v === "boolean" ? v : fallback;
}
