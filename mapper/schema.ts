/**
 * JSON Schema 2020-12 documents `custom_json_mapper@1` and `custom_json_output@1` (spec "Versioning"),
 * generated from the operator table and the function registry so they never drift from the validator.
 * The one rule JSON Schema cannot state, the expression depth limit (50), is given in `description`.
 */
import { functionNames, getFunction } from "./functions/registry.ts";
import { MAX_DEPTH } from "./guards.ts";
import { DOTTED_OPERATOR, OPERATOR_NAMES, OPERATORS, RESERVED_JSONLOGIC } from "./operators/table.ts";
import type { OpShape } from "./operators/types.ts";
import { ITER_FORMS, VAR_NAME } from "./validate.ts";

type Schema = Record<string, unknown>;

const EXPR = { $ref: "#/$defs/expression" } as const;

/** A key that is an operator, a JsonLogic operator outside v1, `call`, or dotted like one. */
const OPERATOR_LIKE = {
  anyOf: [{ enum: [...OPERATOR_NAMES, ...RESERVED_JSONLOGIC, "call"] }, { pattern: DOTTED_OPERATOR.source }],
};

function shapeSchema(shape: OpShape): Schema {
  if (shape.kind === "args") return EXPR;
  if (shape.kind === "named") {
    return {
      type: "object",
      additionalProperties: false,
      required: [...shape.required],
      properties: Object.fromEntries(shape.props.map((p) => [p, EXPR])),
    };
  }
  const form = ITER_FORMS[shape.form];
  return {
    anyOf: [
      { type: "array", minItems: 1, maxItems: shape.form === "reduce" ? 3 : 2, items: EXPR },
      {
        type: "object",
        additionalProperties: false,
        required: form.required,
        properties: Object.fromEntries(
          form.keys.map((k) => [k, k === "as" ? { type: "string", pattern: VAR_NAME.source } : EXPR]),
        ),
      },
    ],
  };
}

function argsSchema(fn: string): Schema {
  const spec = getFunction(fn)!;
  const required = Object.entries(spec.args).flatMap(([name, arg]) => (arg.required ? [name] : []));
  return {
    type: "object",
    additionalProperties: false,
    properties: Object.fromEntries(
      Object.entries(spec.args).map(([name, arg]) => [
        name,
        arg.type === "any"
          ? { description: arg.description }
          : {
              description: arg.description,
              // A literal must have the declared type; an object or array is an expression checked at run time.
              anyOf: [{ type: [arg.type, "null"] }, { type: ["object", "array"], ...EXPR }],
            },
      ]),
    ),
    ...(required.length > 0 ? { required } : {}),
  };
}

/** Returns `{mapper, output}`: the config schema and the permissive output schema, with ids under `schemaBase`. */
export function mapperSchemas(schemaBase: string): { mapper: Schema; output: Schema } {
  const base = schemaBase.replace(/\/+$/, "");
  const fns = functionNames();
  const single = (key: string, value: Schema): Schema => ({
    type: "object",
    minProperties: 1,
    maxProperties: 1,
    required: [key],
    properties: { [key]: value },
  });
  const operations: Schema[] = [
    ...OPERATOR_NAMES.map((op) => single(op, shapeSchema(OPERATORS[op]!.shape))),
    single("call", {
      type: "object",
      additionalProperties: false,
      required: ["fn"],
      properties: { fn: { enum: fns }, args: { type: "object" } },
      allOf: fns.map((fn) => ({
        if: { properties: { fn: { const: fn } } },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
        then: { properties: { args: argsSchema(fn) } },
      })),
    }),
    ...fns.map((fn) => single(`call.${fn}`, argsSchema(fn))),
  ];
  const mapper: Schema = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `${base}/transform/custom_json_mapper@1`,
    title: "map.custom_json config v1",
    description: `Config of the map.custom_json step. Expressions may not nest deeper than ${MAX_DEPTH} levels (checked by the validator).`,
    type: "object",
    additionalProperties: false,
    required: ["version", "output"],
    properties: {
      version: { const: "v1" },
      vars: { type: "array", items: { $ref: "#/$defs/var" } },
      output: EXPR,
      meta: { type: "object" },
    },
    $defs: {
      var: {
        type: "object",
        additionalProperties: false,
        required: ["name", "expr"],
        properties: {
          name: { type: "string", pattern: VAR_NAME.source },
          expr: EXPR,
          description: { type: "string" },
        },
      },
      expression: {
        description:
          "A literal, an array of expressions, an operation, or a template object. An object with one key that is (or looks like) an operator is an operation; any other object is a template.",
        // Dispatch on the shape first, so each value is checked by one branch only. With a plain anyOf a
        // validator reporting all errors (ajv's allErrors) checked every operation's argument both as an
        // operation and as a template value: twice per level, 2^depth in all.
        if: { type: "object", minProperties: 1, maxProperties: 1, propertyNames: OPERATOR_LIKE },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
        then: { $ref: "#/$defs/operation" },
        else: {
          anyOf: [
            { type: ["string", "number", "boolean", "null"] },
            { type: "array", items: EXPR },
            { $ref: "#/$defs/template" },
          ],
        },
      },
      operation: { anyOf: operations },
      template: {
        description:
          "A literal object whose values are expressions. A single key must not be (or look like) an operator. An object with exactly the keys vars and output is a scoped block.",
        type: "object",
        additionalProperties: EXPR,
        allOf: [
          {
            if: { minProperties: 1, maxProperties: 1 },
            // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
            then: { propertyNames: { not: OPERATOR_LIKE } },
          },
          {
            if: { required: ["vars", "output"], maxProperties: 2 },
            // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword
            then: { $ref: "#/$defs/block" },
          },
        ],
      },
      block: {
        description:
          "A scoped block: its vars are evaluated top to bottom, then its output, which they are visible to as vars.<name> (shadowing enclosing vars of the same name).",
        type: "object",
        additionalProperties: false,
        required: ["vars", "output"],
        properties: { vars: { type: "array", items: { $ref: "#/$defs/var" } }, output: EXPR },
      },
    },
  };
  const output: Schema = {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `${base}/transform/custom_json_output@1`,
    title: "map.custom_json output v1",
    description: "Free-form mapper output: any JSON value (at most 1 MiB encoded).",
    type: ["object", "array", "string", "number", "boolean", "null"],
  };
  return { mapper, output };
}
