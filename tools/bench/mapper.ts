/**
 * Mapper throughput against json-logic-js (interpreted) and json-logic-engine (compiled `build()`), in one
 * process, plus pool round-trip latency. Run briefly: `bun tools/bench/mapper.ts [--seconds 1]`.
 * Workloads: json-logic-engine's bench cases limited to operators all three share, and a realistic
 * 20-var mapper over a real message from the shared corpus.
 */
import { createRequire } from "node:module";
import { LogicEngine } from "json-logic-engine";
import { compileExpression, compileMapper, createMapperPool } from "../../mapper/index.ts";
import { readCases, usesOnlyV1 } from "../../mapper/testdata/conformance.ts";
import { parseEml } from "../mapper-repl-eml.ts";

const jsonLogic = createRequire(import.meta.url)("json-logic-js") as {
  apply(rule: unknown, data: unknown): unknown;
};
const secondsArg = process.argv.indexOf("--seconds");
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 1;
const DIR = "/work/shared/conformance/jsonlogic";

/** Calls `fn` in batches until SECONDS elapse; returns calls per second. */
function measure(fn: () => void): number {
  for (let i = 0; i < 2000; i++) fn(); // warm up the JIT
  let calls = 0;
  const start = performance.now();
  let now = start;
  while (now - start < SECONDS * 1000) {
    for (let i = 0; i < 200; i++) fn();
    calls += 200;
    now = performance.now();
  }
  return (calls / (now - start)) * 1000;
}

type Runner = (data: unknown) => unknown;
function suite(name: string, ours: Runner[], engine: Runner[], js: Runner[], data: unknown[]): void {
  const loop = (runners: Runner[]) => () => {
    for (let i = 0; i < runners.length; i++) runners[i]!(data[i]);
  };
  const n = ours.length;
  const a = measure(loop(ours)) * n;
  const b = measure(loop(engine)) * n;
  const c = measure(loop(js)) * n;
  const fmt = (x: number) => `${Math.round(x).toLocaleString("en-US")}/s`;
  console.log(`\n${name} (${n} expressions per pass)`);
  console.log(`  mailhook mapper            ${fmt(a)}`);
  console.log(`  json-logic-engine build()  ${fmt(b)}   mapper ÷ engine = ${(a / b).toFixed(2)}×`);
  console.log(`  json-logic-js apply()      ${fmt(c)}   mapper ÷ js     = ${(a / c).toFixed(2)}×`);
}

// 1. json-logic-engine bench cases, shared operators only.
const engine = new LogicEngine();
const cases = readCases(await Bun.file(`${DIR}/json-logic-engine/bench-tests.json`).json()).filter((c) =>
  usesOnlyV1(c.rule),
);
suite(
  "json-logic-engine bench-tests.json, shared operators",
  cases.map((c) => compileExpression(c.rule)),
  cases.map((c) => engine.build(c.rule) as Runner),
  cases.map((c) => (d: unknown) => jsonLogic.apply(c.rule, d)),
  cases.map((c) => c.data),
);

// 2. A realistic 20-var mapper (JsonLogic operators only, so all three can run it) over a real message.
const EML = "/work/shared/corpus/emails/mailparser/examples__nodemailer.eml";
const message = await parseEml(new Uint8Array(await Bun.file(EML).arrayBuffer()));
const ctx = { project_id: "p1", route_id: "r1", source_type: "smtp", now: "2025-01-01T00:00:00Z" };
const v = (p: string) => ({ var: p });
const vars: { name: string; expr: unknown }[] = [
  { name: "subject", expr: v("message.subject") },
  { name: "from", expr: v("message.from.0.email") },
  { name: "from_name", expr: v(["message.from.0.name", ""] as never) },
  { name: "to_list", expr: { map: [v("message.to"), v("email")] } },
  { name: "first_to", expr: v("vars.to_list.0") },
  { name: "is_reply", expr: { in: ["Re:", v("vars.subject")] } },
  {
    name: "has_att",
    expr: { ">": [{ reduce: [v("message.attachments"), { cat: [v("accumulator"), "x"] }, ""] }, ""] },
  },
  { name: "att_names", expr: { map: [v("message.attachments"), v("filename")] } },
  {
    name: "pdfs",
    expr: { filter: [v("message.attachments"), { "==": [v("content_type"), "application/pdf"] }] },
  },
  { name: "any_image", expr: { some: [v("message.attachments"), { in: ["image/", v("content_type")] }] } },
  { name: "all_small", expr: { all: [v("message.attachments"), { "<": [v("size"), 1000000] }] } },
  { name: "no_exe", expr: { none: [v("message.attachments"), { in: [".exe", v("filename")] }] } },
  { name: "mailer", expr: v(["message.headers.x-mailer", "unknown"] as never) },
  { name: "priority", expr: { if: [{ "==": [v("message.headers.x-priority"), "1"] }, "high", "normal"] } },
  { name: "label", expr: { cat: ["[", v("vars.priority"), "] ", v("vars.subject")] } },
  { name: "preview", expr: { substr: [v("message.text"), 0, 140] } },
  {
    name: "domain_ok",
    expr: { or: [{ in: ["kreata.ee", v("vars.from")] }, { in: ["example.com", v("vars.from")] }] },
  },
  {
    name: "route",
    expr: { if: [{ and: [v("vars.domain_ok"), { "!": v("vars.is_reply") }] }, "inbox", "review"] },
  },
  { name: "tags", expr: { merge: [[v("vars.route")], { if: [v("vars.any_image"), ["images"], []] }] } },
  {
    name: "summary",
    expr: { cat: [v("vars.from"), " → ", v("vars.first_to"), " (", v("ctx.project_id"), ")"] },
  },
];
const outputList = vars.map((x) => v(`vars.${x.name}`));
const mapper = compileMapper({ version: "v1", vars, output: outputList });
const input = { message, ctx, meta: {} };
/** The same 20 vars evaluated in order by a generic engine with a shared `vars` object. */
function sequential(run: (expr: unknown, data: unknown) => unknown, compiled: unknown[]): Runner {
  return () => {
    const varValues: Record<string, unknown> = {};
    const root = { message, ctx, meta: {}, vars: varValues };
    for (let i = 0; i < vars.length; i++) varValues[vars[i]!.name] = run(compiled[i], root);
    return run(outputList, root);
  };
}
const engineFns = vars.map((x) => engine.build(x.expr) as Runner);
const engineOut = engine.build(outputList) as Runner;
suite(
  `20-var mapper over ${EML.split("/").pop()}`,
  [() => mapper(input)],
  [sequential((f, d) => (f === outputList ? engineOut(d) : (f as Runner)(d)), engineFns)],
  [
    sequential(
      (e, d) => jsonLogic.apply(e, d),
      vars.map((x) => x.expr),
    ),
  ],
  [null],
);

// 3. Pool round trip for a small mapper.
const pool = createMapperPool({ size: 1 });
const small = {
  version: "v1",
  output: { s: { "string.upper": v("message.subject") }, from: v("message.from[0].email") },
};
for (let i = 0; i < 500; i++) await pool.run(small, input);
const times: number[] = [];
for (let i = 0; i < 3000; i++) {
  const t = performance.now();
  await pool.run(small, input);
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
console.log(
  `\npool round trip (small mapper, real message, 1 worker): p50 ${times[1500]!.toFixed(3)} ms, p99 ${times[2970]!.toFixed(3)} ms`,
);
await pool.close();
