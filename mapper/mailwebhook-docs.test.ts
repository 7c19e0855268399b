/**
 * Compatibility with MailWebhook's documentation: every complete mapper config its docs show validates
 * here, and where the docs show the body a message produces, ours matches (testdata/mailwebhook-docs.ts).
 */
import { describe, expect, test } from "bun:test";
import { getFunction } from "./functions/registry.ts";
import { compileMapper, validateMapperConfig } from "./index.ts";
import { DOCS_FIXTURES } from "./testdata/mailwebhook-docs.ts";

/** `actual` cut down to what `expected` names: its keys, and arrays to its length (an abridged output). */
function abridged(actual: unknown, expected: unknown): unknown {
  if (Array.isArray(expected) && Array.isArray(actual))
    return actual.slice(0, expected.length).map((a, i) => abridged(a, expected[i]));
  if (typeof expected === "object" && expected !== null && typeof actual === "object" && actual !== null) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(expected))
      out[k] = abridged((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k]);
    return out;
  }
  return actual;
}

describe("MailWebhook documentation configs", () => {
  for (const f of DOCS_FIXTURES) {
    const missing = (f.helpers ?? []).filter((h) => getFunction(h) === undefined);
    if (missing.length > 0) {
      // A helper this build does not ship: the config is refused for exactly that reason, nothing else.
      test(`${f.name}: refused only for the missing helper ${missing.join(", ")}`, () => {
        const r = validateMapperConfig(f.config);
        expect(r.ok).toBe(false);
        const errors = r.ok ? [] : r.errors;
        expect(errors.length).toBeGreaterThan(0);
        for (const e of errors) expect(missing.some((h) => e.message.includes(`"${h}"`))).toBe(true);
      });
      continue;
    }
    test(`${f.name}: validates${f.message ? " and produces the documented body" : ""}`, () => {
      const r = validateMapperConfig(f.config);
      expect(r).toMatchObject({ ok: true });
      if (!f.message) return;
      const out = compileMapper(f.config)({ message: f.message, ctx: f.ctx ?? {} } as never);
      if (f.expected !== undefined) expect(out).toEqual(f.expected as never);
      if (f.expectedSubset !== undefined)
        expect(abridged(out, f.expectedSubset)).toEqual(f.expectedSubset as never);
    });
  }

  test("the literal {vars: [...]} the docs build with merge is a warning, not an error", () => {
    const f = DOCS_FIXTURES.find((x) => x.name.includes("built with merge"));
    const r = validateMapperConfig(f?.config);
    expect(r.ok).toBe(true);
    expect(r.warnings?.[0]?.message).toContain('did you mean "var"');
  });
});
