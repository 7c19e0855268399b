/**
 * Mapper config fuzzing, beyond `mapper/fuzz.test.ts` (random JSON into the
 * validator; random configs from the operator table over one benign message): here every operator is
 * in play, regex ones included, with hostile arguments, and the *data* is hostile too — messages whose
 * fields are `{"toString": 1}` objects, own `__proto__` keys, huge strings, long arrays, deep nesting,
 * lone surrogates — read through hostile `var` paths (`constructor.name`, `__proto__.x`, `to[1e9]`).
 *
 *   bun tools/chaos/fuzz-mapper.ts [--quick] [--runs 5000] [--seed N] [--json]
 *
 * Invariants: the validator never throws, on anything (JSON text parsed with own `__proto__` keys and
 * deep nesting included); a valid config compiles, and a run finishes within the time bound and
 * either returns JSON-serialisable output or throws `MapperRuntimeError` — docs/mapper.md: an error inside
 * an operator yields null, so a TypeError escaping a run is a bug.
 */
import { parseArgs } from "node:util";
import fc from "fast-check";
import { compileMapper, MapperRuntimeError, validateMapperConfig } from "../../mapper/index.ts";
import { OPERATOR_NAMES } from "../../mapper/operators/table.ts";
import { HOSTILE_KEYS, hostileJson } from "./fuzz-json.ts";

/** Options of {@link run}. */
export interface MapperFuzzOptions {
  /** validator inputs and mapper runs, each */
  runs: number;
  seed: number;
  /** a run slower than this is a failure (default 5 s: generous, as the box may be shared; guards: regex 50 ms, calls bounded) */
  maxRunMs?: number;
  log?: (line: string) => void;
}

/** One broken invariant with its input (configs and data as JSON text where they are JSON). */
export interface MapperFuzzFailure {
  kind: "validator_threw" | "compile_threw" | "run_threw" | "too_slow" | "output_not_json";
  detail: string;
  config: string;
  data: string;
}

/** What {@link run} found. */
export interface MapperFuzzResult {
  seed: number;
  validated: number;
  ran: number;
  runtimeErrors: Record<string, number>;
  slowestRunMs: number;
  durationMs: number;
  failures: MapperFuzzFailure[];
}

const PATHS = [
  "message.subject",
  "message.to",
  "message.to.0.email",
  "message.to[0].name",
  "message.headers.x-a",
  "message.attachments",
  "message.__proto__",
  "message.constructor.name",
  "message.to[999999999]",
  "meta.list",
  "meta.obj.toString",
  "meta.__proto__.polluted",
  "vars.a",
  "ctx.now",
  "",
  "it",
  "it.email",
  "current",
  "accumulator",
  "a..b",
  "[",
  "message.text.length",
];

const leaf = fc.oneof(
  fc.constantFrom<unknown>(
    null,
    true,
    0,
    -0,
    1e308,
    -1,
    "",
    "a",
    "(a+)+$",
    "[",
    "\\",
    "$1",
    "$<x>",
    "\\g<0>",
  ),
  fc.constantFrom(...HOSTILE_KEYS),
  hostileJson.map((t) => JSON.parse(t) as unknown),
);

/** Expressions from the whole operator table with hostile arguments, in both argument shapes. */
const expr = fc.letrec<{ e: unknown }>((tie) => ({
  e: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    fc.constantFrom(...PATHS).map((p) => ({ var: p })),
    fc.tuple(fc.constantFrom(...PATHS), leaf).map(([p, d]) => ({ var: [p, d] })),
    fc.array(tie("e"), { maxLength: 3 }),
    fc
      .tuple(fc.constantFrom(...OPERATOR_NAMES), fc.array(tie("e"), { maxLength: 4 }))
      .map(([op, args]) => ({ [op]: args })),
    fc.tuple(fc.constantFrom(...OPERATOR_NAMES), tie("e")).map(([op, arg]) => ({ [op]: arg })),
    fc
      .tuple(fc.constantFrom("map", "filter", "find", "some", "all", "none"), tie("e"), tie("e"))
      .map(([op, over, body]) => ({
        [op]: op === "map" ? { over, as: "it", do: body } : { over, as: "it", where: body },
      })),
    fc.tuple(tie("e"), tie("e"), tie("e")).map(([over, d, start]) => ({ reduce: { over, do: d, start } })),
    fc.dictionary(fc.constantFrom("a", "b", "c", "__proto__", "constructor"), tie("e"), { maxKeys: 3 }),
  ),
})).e;

const config = fc.record({
  version: fc.constant("v1"),
  vars: fc.array(fc.record({ name: fc.constantFrom("a", "b", "c"), expr }), { maxLength: 3 }),
  output: expr,
});

/** A message model whose fields are sometimes the wrong type or hostile (built from JSON text). */
const data = fc
  .record({
    subject: hostileJson,
    text: fc.oneof(
      hostileJson,
      fc.nat({ max: 2_000_000 }).map((n) => JSON.stringify("ab ".repeat(n / 3))),
    ),
    to: fc.oneof(
      hostileJson,
      fc.constant('[{"email":"a@b.c","name":"A"},{"toString":1,"email":{"valueOf":2}}]'),
    ),
    headers: fc.oneof(
      hostileJson,
      fc.constant('{"x-a":"1","__proto__":{"polluted":true},"constructor":"c"}'),
    ),
    attachments: hostileJson,
    list: fc.oneof(
      hostileJson,
      fc.nat({ max: 20_000 }).map((n) => `[${Array(n).fill("1").join(",")}]`),
    ),
    obj: fc.constantFrom('{"toString":1,"valueOf":{},"length":-1}', '{"__proto__":{"a":1}}', "[]", "null"),
  })
  .map(
    (r) =>
      `{"message":{"message_id":"<m@x>","subject":${r.subject},"text":${r.text},"html":"","from":[],"to":${r.to},` +
      `"headers":${r.headers},"attachments":${r.attachments}},"ctx":{"now":"2025-01-01T00:00:00Z"},` +
      `"meta":{"list":${r.list},"obj":${r.obj},"__proto__":{"polluted":1}}}`,
  );

/** Runs the fuzzer; problems are returned in `failures`, never thrown. */
export async function run(options: MapperFuzzOptions): Promise<MapperFuzzResult> {
  const log = options.log ?? (() => {});
  const maxRunMs = options.maxRunMs ?? 5_000;
  const started = performance.now();
  const result: MapperFuzzResult = {
    seed: options.seed,
    validated: 0,
    ran: 0,
    runtimeErrors: {},
    slowestRunMs: 0,
    durationMs: 0,
    failures: [],
  };
  const fail = (f: MapperFuzzFailure) => {
    result.failures.push({ ...f, config: f.config.slice(0, 20_000), data: f.data.slice(0, 20_000) });
    log(`FAIL ${f.kind}: ${f.detail.slice(0, 200)} config=${f.config.slice(0, 300)}`);
  };
  log(`fuzz-mapper: seed=${options.seed} runs=${options.runs}`);

  const anyConfig = fc.oneof(
    hostileJson,
    config.map((c) => JSON.stringify(c)),
    hostileJson.map((o) => `{"version":"v1","vars":${o},"output":${o}}`),
  );
  for (const text of fc.sample(anyConfig, { seed: options.seed, numRuns: options.runs })) {
    result.validated++;
    try {
      const r = validateMapperConfig(JSON.parse(text));
      if (typeof r.ok !== "boolean") throw new Error("no ok flag");
    } catch (err) {
      fail({ kind: "validator_threw", detail: String(err), config: text, data: "" });
    }
  }

  const pairs = fc.sample(fc.tuple(config, data), { seed: options.seed + 1, numRuns: options.runs });
  for (const [cfg, dataText] of pairs) {
    if (!validateMapperConfig(cfg).ok) continue;
    const cfgText = JSON.stringify(cfg);
    let mapper: ReturnType<typeof compileMapper>;
    try {
      mapper = compileMapper(cfg);
    } catch (err) {
      fail({ kind: "compile_threw", detail: String(err), config: cfgText, data: "" });
      continue;
    }
    const input = JSON.parse(dataText);
    const t0 = performance.now();
    try {
      const out = mapper(input);
      try {
        JSON.stringify(out);
      } catch (err) {
        fail({ kind: "output_not_json", detail: String(err), config: cfgText, data: dataText });
      }
    } catch (err) {
      if (err instanceof MapperRuntimeError)
        result.runtimeErrors[err.code] = (result.runtimeErrors[err.code] ?? 0) + 1;
      else
        fail({
          kind: "run_threw",
          detail: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
          config: cfgText,
          data: dataText,
        });
    }
    const ms = performance.now() - t0;
    result.ran++;
    result.slowestRunMs = Math.max(result.slowestRunMs, Math.round(ms));
    if (ms > maxRunMs)
      fail({ kind: "too_slow", detail: `${Math.round(ms)} ms`, config: cfgText, data: dataText });
    if (({} as Record<string, unknown>).polluted !== undefined) {
      fail({ kind: "run_threw", detail: "Object.prototype was polluted", config: cfgText, data: dataText });
    }
  }
  result.durationMs = Math.round(performance.now() - started);
  log(
    `fuzz-mapper: ${result.validated} validated, ${result.ran} ran in ${result.durationMs} ms, ${result.failures.length} failures`,
  );
  return result;
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      runs: { type: "string" },
      seed: { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  const runs = Number(values.runs ?? (values.quick ? 400 : 5_000));
  const log = values.json ? () => {} : (l: string) => console.log(l);
  const result = await run({ runs, seed, log });
  console.log(
    values.json
      ? JSON.stringify(result)
      : `RESULT ${JSON.stringify({ ...result, failures: result.failures.length })}`,
  );
  process.exit(result.failures.length > 0 ? 1 : 0);
}
