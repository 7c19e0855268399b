/**
 * Codes of critical mapper failures (docs/mapper.md, "Errors"). Anything else inside an operator yields
 * null.
 */
export type MapperErrorCode =
  | "mapper.depth_exceeded"
  | "mapper.nodes_exceeded"
  | "mapper.output_too_large"
  | "mapper.regex_timeout"
  | "mapper.call_timeout"
  | "mapper.required_missing"
  | "mapper.invalid_config";

/**
 * One validation problem: a JSON pointer relative to the config root and a sentence for a person; `code`
 * when the problem is a guard's limit (`mapper.depth_exceeded` for nesting past 50 levels).
 */
export interface MapperConfigIssue {
  path: string;
  message: string;
  code?: MapperErrorCode;
}

/**
 * A critical mapper failure: a guard overrun, or (code `mapper.invalid_config`) a config that does not
 * validate, in which case `details` lists the problems. It is never swallowed by an operator's
 * error → null rule.
 */
export class MapperRuntimeError extends Error {
  override name = "MapperRuntimeError";
  readonly code: MapperErrorCode;
  readonly details: MapperConfigIssue[];
  /**
   * Where a run stopped, as a JSON pointer into the config: `/vars/<i>/expr` or `/output` (set by the
   * compiled mapper as the error leaves it; absent for validation errors, whose `details` have paths).
   */
  path?: string;
  /** Nodes the run had been charged when it stopped (the 10k budget's counter). */
  nodes?: number;

  constructor(code: MapperErrorCode, message?: string, details: MapperConfigIssue[] = []) {
    super(message ?? code);
    this.code = code;
    this.details = details;
  }
}
