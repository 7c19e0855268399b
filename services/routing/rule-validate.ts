/**
 * Route rule language (docs/routing.md): shapes, limits and validation. Matching lives in
 * rule-compile.ts; the public surface is re-exported from rules.ts.
 */
import { regexError } from "../../mapper/regex.ts";
import { AUTH_RESULTS, AUTO_KINDS } from "../../mapper/types.ts";
import { mimeGlobError } from "./glob.ts";
import { HEADER_NAME, isPlainObject, pointer, type ValidationIssue } from "./issues.ts";

/** A leaf value: one string, or a non-empty list of strings of which any may match (OR). */
export type RuleValues = string | string[];

/** `{header-name: value | [values]}`; every named header must hold (AND), values within one name are OR. */
export type HeaderConditions = Record<string, RuleValues>;

/** A route rule. Every populated key must hold (AND); `{}` matches every message. */
export interface Rule {
  subject_contains?: RuleValues;
  subject_regex?: RuleValues;
  to_contains?: RuleValues;
  to_emails?: RuleValues;
  from_contains?: RuleValues;
  from_emails?: RuleValues;
  from_domains?: RuleValues;
  headers_equals?: HeaderConditions;
  headers_contains?: HeaderConditions;
  attachments_mime?: RuleValues;
  auto_kind_in?: RuleValues;
  spf_in?: RuleValues;
  dmarc_in?: RuleValues;
  dkim_pass_domains?: RuleValues;
  spam_score_gte?: number;
  spam_score_lt?: number;
  has_forwarded?: boolean;
  all?: Rule[];
  any?: Rule[];
  none?: Rule[];
  negate?: Rule;
}

/** Leaf keys whose value is a string or list of strings. */
export const STRING_LEAF_KEYS = [
  "subject_contains",
  "subject_regex",
  "to_contains",
  "to_emails",
  "from_contains",
  "from_emails",
  "from_domains",
  "attachments_mime",
  "auto_kind_in",
  "spf_in",
  "dmarc_in",
  "dkim_pass_domains",
] as const;
/** Leaf keys on the spam verdict's score: a finite number; they never hold when there is no verdict. */
export const SCORE_LEAF_KEYS = ["spam_score_gte", "spam_score_lt"] as const;
/** Leaf keys whose value is a boolean. */
export const BOOLEAN_LEAF_KEYS = ["has_forwarded"] as const;
/** Leaf keys whose value is a header-name → value(s) object. */
export const HEADER_LEAF_KEYS = ["headers_equals", "headers_contains"] as const;
/** Combinators taking a non-empty list of rules. */
export const LIST_COMBINATORS = ["all", "any", "none"] as const;

type StringLeafKey = (typeof STRING_LEAF_KEYS)[number];
const KNOWN_KEYS: ReadonlySet<string> = new Set([
  ...STRING_LEAF_KEYS,
  ...HEADER_LEAF_KEYS,
  ...SCORE_LEAF_KEYS,
  ...BOOLEAN_LEAF_KEYS,
  ...LIST_COMBINATORS,
  "negate",
]);

/** Size limits: a rule is evaluated for every ingested message of a project, so it must stay small. */
export const RULE_LIMITS = {
  /** nesting of rules inside all/any/none/negate; the top-level rule is depth 1 */
  maxDepth: 8,
  /** entries in one leaf list, one combinator list, or header names in one headers_* object */
  maxListLength: 100,
  /** characters in one value (regexes are also capped by mapper/regex.ts) */
  maxStringLength: 1000,
  /** rules plus values in the whole tree */
  maxNodes: 1000,
} as const;

const EMAIL = /^[^\s@]+@[^\s@]+$/;

/** A domain (IDN allowed): dot-separated non-empty labels, no whitespace, no `@`. */
function isDomain(v: string): boolean {
  const d = v.trim().replace(/\.$/, "");
  return d !== "" && !/[\s@]/.test(d) && d.split(".").every((label) => label !== "");
}

/** Per-key check of one (already trimmed where relevant) value; null when fine. */
const VALUE_CHECKS: Record<StringLeafKey, (v: string) => string | null> = {
  subject_contains: nonBlank,
  subject_regex: (v) => {
    const err = regexError(`(?i)${v}`);
    return err === null ? null : `invalid RE2 regular expression: ${err}`;
  },
  to_contains: nonBlank,
  to_emails: (v) => (EMAIL.test(v.trim()) ? null : "must be an email address such as ops@example.com"),
  from_contains: nonBlank,
  from_emails: (v) => (EMAIL.test(v.trim()) ? null : "must be an email address such as ops@example.com"),
  from_domains: (v) => (isDomain(v) ? null : "must be a domain name such as example.com (no @)"),
  attachments_mime: (v) => mimeGlobError(v.trim()),
  auto_kind_in: oneOfWords(AUTO_KINDS),
  spf_in: oneOfWords(AUTH_RESULTS),
  dmarc_in: oneOfWords(AUTH_RESULTS),
  dkim_pass_domains: (v) => (isDomain(v) ? null : "must be a domain name such as example.com (no @)"),
};

/** A check that the (trimmed, case-insensitive) value is one of `words`. */
function oneOfWords(words: readonly string[]): (v: string) => string | null {
  return (v) => (words.includes(v.trim().toLowerCase()) ? null : `must be one of ${words.join(", ")}`);
}

function nonBlank(v: string): string | null {
  return v.trim() === "" ? "must not be blank" : null;
}

interface Walk {
  issues: ValidationIssue[];
  nodes: number;
  overBudget: boolean;
}

/**
 * Validates a route rule. Returns every problem found with its JSON Pointer path under `basePath`;
 * an empty list means the rule is valid and `compileRule` will accept it.
 */
export function validateRule(rule: unknown, basePath = "/rule"): ValidationIssue[] {
  const walk: Walk = { issues: [], nodes: 0, overBudget: false };
  checkRule(rule, basePath, 1, walk);
  return walk.issues;
}

function countNode(path: string, walk: Walk): boolean {
  walk.nodes++;
  if (walk.nodes > RULE_LIMITS.maxNodes) {
    if (!walk.overBudget) {
      walk.issues.push({
        path,
        message: `rule is too large (more than ${RULE_LIMITS.maxNodes} rules and values)`,
      });
      walk.overBudget = true;
    }
    return false;
  }
  return true;
}

function checkRule(rule: unknown, path: string, depth: number, walk: Walk): void {
  if (!countNode(path, walk)) return;
  if (!isPlainObject(rule)) {
    walk.issues.push({ path, message: "must be an object" });
    return;
  }
  if (depth > RULE_LIMITS.maxDepth) {
    walk.issues.push({ path, message: `rules nest deeper than ${RULE_LIMITS.maxDepth} levels` });
    return;
  }
  for (const [key, value] of Object.entries(rule)) {
    const at = pointer(path, key);
    if (!KNOWN_KEYS.has(key)) {
      walk.issues.push({ path: at, message: `unknown rule key "${key}"` });
    } else if (key === "negate") {
      checkRule(value, at, depth + 1, walk);
    } else if ((LIST_COMBINATORS as readonly string[]).includes(key)) {
      if (checkList(value, at, walk)) {
        value.forEach((sub, i) => {
          checkRule(sub, pointer(at, i), depth + 1, walk);
        });
      }
    } else if ((HEADER_LEAF_KEYS as readonly string[]).includes(key)) {
      checkHeaders(value, at, walk);
    } else if ((SCORE_LEAF_KEYS as readonly string[]).includes(key)) {
      if (typeof value !== "number" || !Number.isFinite(value))
        walk.issues.push({ path: at, message: "must be a number, e.g. 5 or 7.5" });
    } else if ((BOOLEAN_LEAF_KEYS as readonly string[]).includes(key)) {
      if (typeof value !== "boolean") walk.issues.push({ path: at, message: "must be true or false" });
    } else {
      checkValues(value, at, VALUE_CHECKS[key as StringLeafKey], walk);
    }
  }
}

/** Checks that `value` is a non-empty array within the list limit. */
function checkList(value: unknown, path: string, walk: Walk): value is unknown[] {
  if (!Array.isArray(value)) {
    walk.issues.push({ path, message: "must be an array" });
    return false;
  }
  if (value.length === 0) {
    walk.issues.push({ path, message: "must not be empty (omit the key to add no condition)" });
    return false;
  }
  if (value.length > RULE_LIMITS.maxListLength) {
    walk.issues.push({ path, message: `must have at most ${RULE_LIMITS.maxListLength} entries` });
    return false;
  }
  return true;
}

function checkValues(
  value: unknown,
  path: string,
  check: ((v: string) => string | null) | null,
  walk: Walk,
): void {
  if (typeof value === "string") {
    checkString(value, path, check, walk);
    return;
  }
  if (!Array.isArray(value)) {
    walk.issues.push({ path, message: "must be a string or a non-empty array of strings" });
    return;
  }
  if (!checkList(value, path, walk)) return;
  value.forEach((item, i) => {
    const at = pointer(path, i);
    if (!countNode(at, walk)) return;
    if (typeof item !== "string") walk.issues.push({ path: at, message: "must be a string" });
    else checkString(item, at, check, walk);
  });
}

function checkString(
  value: string,
  path: string,
  check: ((v: string) => string | null) | null,
  walk: Walk,
): void {
  if (value.length > RULE_LIMITS.maxStringLength) {
    walk.issues.push({ path, message: `must be at most ${RULE_LIMITS.maxStringLength} characters` });
    return;
  }
  const problem = check?.(value) ?? null;
  if (problem !== null) walk.issues.push({ path, message: problem });
}

function checkHeaders(value: unknown, path: string, walk: Walk): void {
  if (!isPlainObject(value)) {
    walk.issues.push({
      path,
      message: 'must be an object of header name to value(s), e.g. {"x-priority": "1"}',
    });
    return;
  }
  const names = Object.keys(value);
  if (names.length === 0) {
    walk.issues.push({ path, message: "must name at least one header (omit the key to add no condition)" });
    return;
  }
  if (names.length > RULE_LIMITS.maxListLength) {
    walk.issues.push({ path, message: `must name at most ${RULE_LIMITS.maxListLength} headers` });
    return;
  }
  for (const name of names) {
    const at = pointer(path, name);
    if (!HEADER_NAME.test(name) || name.length > 200) {
      walk.issues.push({ path: at, message: "invalid header name" });
      continue;
    }
    // Header values may be "" (equals: present and empty; contains: present at all).
    checkValues(value[name], at, null, walk);
  }
}
