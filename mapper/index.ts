/**
 * The mapper library (`map.custom_json`, docs/mapper.md). Pure: no IO except registered `call.*` helpers,
 * no clock except `ctx.now`, nothing imported from services/.
 */
import "./functions/index.ts";

export type { CompiledMapper } from "./compile.ts";
export { compileExpression, compileMapper, evaluateExpression } from "./compile.ts";
export { DEFAULT_CODE_COPIES, loadCodeCopies, MAX_CODE_COPIES, setCodeCopies } from "./copies.ts";
export type { MapperConfigIssue, MapperErrorCode } from "./errors.ts";
export { MapperRuntimeError } from "./errors.ts";
export type { FunctionArgSpec, MapperFunctionSpec } from "./functions/registry.ts";
export { registerFunction } from "./functions/registry.ts";
export { MAX_DEPTH, MAX_NODES, MAX_OUTPUT_BYTES, MAX_OUTPUT_DEPTH } from "./guards.ts";
export type { MapperPool, MapperPoolOptions } from "./pool.ts";
export { createMapperPool } from "./pool.ts";
export { mapperSchemas } from "./schema.ts";
export type { MapperConfig, MapperContext, MapperInput, MapperMessage } from "./types.ts";
export type { ValidationIssue, ValidationResult } from "./validate.ts";
export { validateMapperConfig } from "./validate.ts";
