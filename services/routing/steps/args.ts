/**
 * Checks the step validators share, so every step words the same problem the same way (docs/routing.md
 * § Pipelines: unknown arguments are rejected; lists hold 1 to 100 strings of at most 1000 characters).
 */
import { type TSchema, Type } from "@sinclair/typebox";
import { pointer, type ValidationIssue } from "../issues.ts";

/** Size limits on one step's arguments. */
export const ARG_LIMITS = { maxListLength: 100, maxStringLength: 1000 } as const;

/** Reports every key of `args` that is not in `allowed` as `unknown argument`. */
export function rejectUnknownArgs(
  args: Readonly<Record<string, unknown>>,
  allowed: readonly string[],
  path: string,
  issues: ValidationIssue[],
): void {
  for (const key of Object.keys(args)) {
    if (!allowed.includes(key))
      issues.push({ path: pointer(path, key), message: `unknown argument "${key}"` });
  }
}

/**
 * Checks a list of 1 to 100 strings of at most 1000 characters, each also passing `check` (null when the
 * string is fine, else the reason). Reports the list at `path`, or each bad item at `path/<i>`.
 */
export function checkStringList(
  value: unknown,
  path: string,
  check: (s: string) => string | null,
  issues: ValidationIssue[],
): void {
  if (!Array.isArray(value) || value.length === 0 || value.length > ARG_LIMITS.maxListLength) {
    issues.push({ path, message: `must be an array of 1 to ${ARG_LIMITS.maxListLength} strings` });
    return;
  }
  value.forEach((item, i) => {
    const problem =
      typeof item !== "string"
        ? "must be a string"
        : item.length > ARG_LIMITS.maxStringLength
          ? `must be at most ${ARG_LIMITS.maxStringLength} characters`
          : check(item);
    if (problem !== null) issues.push({ path: pointer(path, i), message: problem });
  });
}

/** The schema `checkStringList` enforces, with `item` describing one string. */
export function stringListSchema<T extends TSchema>(item: T) {
  return Type.Array(item, { minItems: 1, maxItems: ARG_LIMITS.maxListLength });
}
