import { describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { mapperSchemas, validateMapperConfig } from "./index.ts";

const cfg = (output: unknown, vars?: unknown) => ({ version: "v1", ...(vars ? { vars } : {}), output });
const deep = (n: number): unknown => (n === 0 ? 1 : { "!": [deep(n - 1)] });

const ajv = new Ajv2020({ strict: false, allErrors: false });
const schemas = mapperSchemas("https://example.test/v1/schemas");
const schemaValid = ajv.compile(schemas.mapper);

describe("mapperSchemas", () => {
  test("both documents validate against the 2020-12 meta-schema", () => {
    const meta = new Ajv2020({ strict: true, strictTypes: false, strictTuples: false });
    expect(meta.validateSchema(schemas.mapper)).toBe(true);
    expect(meta.validateSchema(schemas.output)).toBe(true);
  });

  test("ids live under {schema_base}/transform/", () => {
    expect(schemas.mapper.$id).toBe("https://example.test/v1/schemas/transform/custom_json_mapper@1");
    expect(schemas.output.$id).toBe("https://example.test/v1/schemas/transform/custom_json_output@1");
  });

  test("the output schema accepts any JSON value", () => {
    const v = ajv.compile(schemas.output);
    for (const x of [null, 1, "s", true, [], {}]) expect(v(x)).toBe(true);
  });
});

const valid: [string, unknown][] = [
  ["minimal config", cfg(null)],
  [
    "vars and a template",
    cfg({ s: { var: "vars.a" } }, [{ name: "a", expr: { var: "message.subject" }, description: "d" }]),
  ],
  [
    "every helper",
    cfg([
      { "string.lower": "A" },
      { "string.slice": { value: "a", start: 0, end: 1 } },
      { "regex.replace": { value: "a", pattern: "a", with: "b" } },
    ]),
  ],
  ["call object form", cfg({ call: { fn: "extract.urls", args: { mode: "text", deduplicate: true } } })],
  ["call dotted form", cfg({ "call.extract.bullet_list": { nested: true } })],
  ["call with computed argument", cfg({ "call.transform.html_to_text": { html: { var: "message.html" } } })],
  [
    "object forms",
    cfg({ map: { over: [1], as: "x", do: { var: "x" } }, n: { reduce: { over: [1], do: 1 } } }),
  ],
  ["multi-key object with operator keys is a template", cfg({ "+": 1, "-": 2 })],
  ["meta object", { version: "v1", output: 1, meta: { owner: "x" } }],
  [
    "scoped block",
    cfg({ b: { vars: [{ name: "a", expr: { var: "message.subject" } }], output: { var: "vars.a" } } }),
  ],
  ["a {vars, output} object with a third key is a template", cfg({ vars: 1, output: 2, x: 3 })],
  ["substr object form", cfg({ substr: { value: "abc", start: 0, end: 2 } })],
  [
    "extract.dom with records",
    cfg({
      "call.extract.dom": {
        selector_type: "xpath",
        selector: "//tr",
        value: "text",
        fields: { a: { selector: ".//td[1]", value: "text" } },
        default: 0,
      },
    }),
  ],
  ["depth exactly 50", cfg(deep(49))],
];

const invalid: [string, unknown, string, RegExp][] = [
  ["not an object", "x", "", /must be an object/],
  ["missing version", { output: 1 }, "", /version/],
  ["wrong version", { version: "v2", output: 1 }, "/version", /"v1"/],
  ["missing output", { version: "v1" }, "", /output/],
  ["extra top-level key", { version: "v1", output: 1, extra: 1 }, "/extra", /unknown key "extra"/],
  ["vars as an object", { version: "v1", output: 1, vars: { a: 1 } }, "/vars", /array/],
  ["bad var name", cfg(1, [{ name: "1a", expr: 1 }]), "/vars/0/name", /must match/],
  ["extra var key", cfg(1, [{ name: "a", expr: 1, x: 1 }]), "/vars/0/x", /unknown key/],
  ["var without expr", cfg(1, [{ name: "a" }]), "/vars/0", /expr/],
  [
    "unknown dotted operator",
    cfg({ x: { "string.reverse": "a" } }),
    "/output/x/string.reverse",
    /unknown operator "string.reverse"/,
  ],
  ["JsonLogic + outside v1", cfg({ "+": [1, 2] }), "/output/+", /does not support/],
  [
    "JsonLogic missing outside v1",
    { version: "v1", vars: [{ name: "a", expr: { missing: ["x"] } }], output: 1 },
    "/vars/0/expr/missing",
    /does not support/,
  ],
  ["unknown call fn", cfg({ call: { fn: "extract.phones" } }), "/output/call/fn", /unknown function/],
  [
    "unknown dotted call fn",
    cfg({ "call.extract.phones": {} }),
    "/output/call.extract.phones",
    /unknown function/,
  ],
  [
    "unknown call argument",
    cfg({ "call.extract.urls": { foo: 1 } }),
    "/output/call.extract.urls/foo",
    /no argument "foo"/,
  ],
  [
    "wrongly typed literal argument",
    cfg({ "call.extract.urls": { deduplicate: "yes" } }),
    "/output/call.extract.urls/deduplicate",
    /boolean/,
  ],
  ["extra key in call", cfg({ call: { fn: "extract.urls", x: 1 } }), "/output/call/x", /unknown key/],
  [
    "helper with a missing required argument",
    cfg({ "string.slice": { start: 1 } }),
    "/output/string.slice",
    /value/,
  ],
  [
    "helper with an unknown argument",
    cfg({ "regex.match": { value: "a", pattern: "a", flags: "i" } }),
    "/output/regex.match/flags",
    /unknown key/,
  ],
  ["map object form without as", cfg({ map: { over: [], do: 1 } }), "/output/map", /"as"/],
  [
    "map object form with a bad alias",
    cfg({ map: { over: [], as: "a b", do: 1 } }),
    "/output/map/as",
    /name/,
  ],
  ["reduce with 4 items", cfg({ reduce: [[], 1, 2, 3] }), "/output/reduce", /initial/],
  [
    "scoped block whose vars is not a list",
    cfg({ vars: { a: 1 }, output: 1 }),
    "/output/vars",
    /scoped block/,
  ],
  [
    "scoped block with a bad var",
    cfg({ vars: [{ name: "a b", expr: 1 }], output: 1 }),
    "/output/vars/0/name",
    /must match/,
  ],
  [
    "extract.dom without its required arguments",
    cfg({ "call.extract.dom": { selector: "a" } }),
    "/output/call.extract.dom",
    /required argument "selector_type"/,
  ],
  ["too deep", cfg(deep(60)), "/output/!/0/!/0", /deeper than 50/],
];

describe("validateMapperConfig", () => {
  test.each(valid)("accepts %s", (_n, config) => {
    expect(validateMapperConfig(config)).toEqual({ ok: true });
  });

  test.each(invalid)("rejects %s with a path and a message", (_n, config, path, message) => {
    const r = validateMapperConfig(config);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const hit = r.errors.find((e) => e.path === path || e.path.startsWith(path));
    expect({ errors: r.errors, hit: hit !== undefined }).toMatchObject({ hit: true });
    expect(r.errors.some((e) => message.test(e.message))).toBe(true);
  });

  test("never throws on hostile inputs", () => {
    const cyclic: Record<string, unknown> = { version: "v1" };
    cyclic.output = cyclic;
    const throwing = {
      version: "v1",
      get output() {
        throw new Error("boom");
      },
    };
    for (const x of [
      undefined,
      null,
      0,
      [],
      cyclic,
      throwing,
      { version: "v1", output: () => 1 },
      { version: "v1", output: Number.NaN },
    ]) {
      expect(() => validateMapperConfig(x)).not.toThrow();
      expect(validateMapperConfig(x).ok).toBe(false);
    }
  });
});

describe("the schema agrees with the validator", () => {
  test("each value is checked by one branch: with allErrors, errors grow with depth, not 2^depth", () => {
    // An operation's argument used to be checked as an operation and again as a template value.
    const all = new Ajv2020({ strict: false, allErrors: true }).compile(schemas.mapper);
    const count = (depth: number) => {
      let e: unknown = { "string.reverse": 1 };
      for (let i = 0; i < depth; i++) e = { "!": [e] };
      expect(all({ version: "v1", output: e })).toBe(false);
      return all.errors?.length ?? 0;
    };
    const [d4, d8, d12] = [count(4), count(8), count(12)];
    expect(d12 - d8).toBe(d8 - d4); // linear (it was 2,579, 43,139 and 692,099 errors)
    expect(d12).toBeLessThan(1_000);
  });

  test.each(valid.filter(([n]) => n !== "depth exactly 50"))("schema accepts %s", (_n, config) => {
    expect(schemaValid(config)).toBe(true);
  });
  test.each(invalid.filter(([n]) => n !== "too deep" && n !== "not an object"))(
    "schema rejects %s",
    (_n, config) => {
      expect(schemaValid(config)).toBe(false);
    },
  );
});
