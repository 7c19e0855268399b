/**
 * Route rules: the public surface for the API (validation) and ingest (matching).
 * The language is docs/routing.md; user documentation is docs/routing.md.
 */

export type { ValidationIssue } from "./issues.ts";
export { compileRule, InvalidRuleError, matchRule, type RulePredicate } from "./rule-compile.ts";
export {
  HEADER_LEAF_KEYS,
  type HeaderConditions,
  LIST_COMBINATORS,
  RULE_LIMITS,
  type Rule,
  type RuleValues,
  STRING_LEAF_KEYS,
  validateRule,
} from "./rule-validate.ts";
