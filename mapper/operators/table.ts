/** The v1 operator set (spec "Mapper operators" + helpers), and names v1 reserves but rejects. */
import { iterOperators } from "./iter.ts";
import { logicOperators } from "./logic.ts";
import { regexOperators } from "./regex-ops.ts";
import { stringOperators } from "./strings.ts";
import type { OperatorSpec } from "./types.ts";
import { varOperator } from "./var.ts";

/** Every v1 operator keyed by name; `call`/`call.<fn>` are handled by the compiler through the registry. */
export const OPERATORS: Readonly<Record<string, OperatorSpec>> = {
  ...logicOperators,
  var: varOperator,
  ...stringOperators,
  ...iterOperators,
  ...regexOperators,
};

export const OPERATOR_NAMES: readonly string[] = Object.keys(OPERATORS);

/**
 * JsonLogic operators outside v1 (json-logic-js, json-logic-engine, the JSON Logic org proposals). A
 * single-key object with one of these keys is rejected instead of being read as a literal object, so a
 * rule copied from elsewhere fails loudly (docs/mapper.md, "Expressions and templates").
 */
export const RESERVED_JSONLOGIC: ReadonlySet<string> = new Set([
  "+",
  "-",
  "*",
  "/",
  "%",
  "min",
  "max",
  "!!",
  "?:",
  "log",
  "missing",
  "missing_some",
  "method",
  "val",
  "exists",
  "try",
  "throw",
  "preserve",
  "??",
  "length",
  "keys",
  "get",
  "eachKey",
  "every",
  "length",
  "not",
  "xor",
  "switch",
  "type",
  "sort",
  "slice",
  "split",
  "join",
  "upper",
  "lower",
  "trim",
  "starts_with",
  "ends_with",
  "now",
  "datetime",
  "duration",
  "abs",
  "ceil",
  "floor",
]);

/** A dotted identifier such as `string.reverse` or `call.foo`: operator-shaped, never a literal key. */
export const DOTTED_OPERATOR = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$/;

export function isOperator(name: string): boolean {
  return Object.hasOwn(OPERATORS, name);
}
