/**
 * Helpers for running JsonLogic conformance files through `evaluateExpression` (tests and report). Where
 * the files live is test/support/paths.ts's business (`MAILHOOK_CONFORMANCE_DIR`).
 */
import { OPERATOR_NAMES } from "../operators/table.ts";

const V1 = new Set(OPERATOR_NAMES);

export interface ConformanceCase {
  description: string;
  rule: unknown;
  data: unknown;
  result?: unknown;
  error?: unknown;
  templating?: boolean;
}

/** Every single-key object key of a rule: the operators it uses. */
export function operatorsOf(rule: unknown, acc = new Set<string>()): Set<string> {
  if (Array.isArray(rule)) for (const r of rule) operatorsOf(r, acc);
  else if (typeof rule === "object" && rule !== null) {
    const keys = Object.keys(rule);
    if (keys.length === 1) acc.add(keys[0]!);
    else if (keys.length > 1) acc.add("<multi-key object>");
    for (const v of Object.values(rule)) operatorsOf(v, acc);
  }
  return acc;
}

/** True when every operator of the rule is in the v1 set (and it has no multi-key object, which v1 reads as a template). */
export function usesOnlyV1(rule: unknown): boolean {
  for (const op of operatorsOf(rule)) if (!V1.has(op)) return false;
  return true;
}

/** Reads Format A (triples) and Format B (objects) files; comment strings are skipped. */
export function readCases(raw: unknown): ConformanceCase[] {
  if (!Array.isArray(raw)) return [];
  const out: ConformanceCase[] = [];
  for (const c of raw) {
    if (typeof c === "string") continue;
    if (Array.isArray(c))
      out.push({ description: JSON.stringify(c[0]), rule: c[0], data: c[1] ?? null, result: c[2] });
    else if (typeof c === "object" && c !== null) {
      const o = c as Record<string, unknown>;
      out.push({
        description: String(o.description ?? JSON.stringify(o.rule)),
        rule: o.rule,
        data: o.data ?? null,
        ...(Object.hasOwn(o, "result") ? { result: o.result } : {}),
        ...(Object.hasOwn(o, "error") ? { error: o.error } : {}),
        ...(o.templating === true ? { templating: true } : {}),
      });
    }
  }
  return out;
}

/** Normalises -0 to 0 as the upstream runners do. */
export function normalise(v: unknown): unknown {
  if (Object.is(v, -0)) return 0;
  if (Array.isArray(v)) return v.map(normalise);
  if (typeof v === "object" && v !== null) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalise(x)]));
  }
  return v;
}
