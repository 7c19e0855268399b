/**
 * Mapper throughput against json-logic-js (interpreted) and json-logic-engine (compiled `build()`), in one
 * process, plus pool round-trip latency:
 * `bun tools/bench/mapper.ts [--seconds 0.05] [--rounds 41] [--worst 8] [--copies 8] [--only helpers,...]`.
 * Workloads: json-logic-engine's bench cases limited to operators all three share, and a realistic
 * 20-var mapper over a real message from the shared corpus. Last, `regex.replace` over message-sized
 * text against its 50 ms limit, and the `call.*` helpers on 1 MB of link-dense HTML against their 100 ms
 * limit (ours only: the other engines have neither), and the structured-extraction helpers on 100 KB, 1 MB
 * and 4 MB (tools/bench/mapper-helpers.ts). `--only` runs the named sections alone (comma-separated):
 * `engine`, `mapper20`, `pool`, `regex`, `helpers`, `structured`.
 *
 * The limit figures (sections `regex`, `helpers`, `structured`) are charged as the limits charge a call:
 * the smaller of wall-clock and the calling thread's CPU time, so a call that waited for a core on a busy
 * machine is not reported as slow (mapper/guards.ts).
 */

import { createRequire } from "node:module";
import { join } from "node:path";
import { LogicEngine } from "json-logic-engine";
import {
  compileExpression,
  compileMapper,
  createMapperPool,
  DEFAULT_CODE_COPIES,
  setCodeCopies,
} from "../../mapper/index.ts";
import { readCases, usesOnlyV1 } from "../../mapper/testdata/conformance.ts";
import { sharedDataDir } from "../../test/support/paths.ts";
import { parseEmlBytes } from "../mapper-repl-input.ts";
import { benchNewHelpers, medianRun } from "./mapper-helpers.ts";

const jsonLogic = createRequire(import.meta.url)("json-logic-js") as {
  apply(rule: unknown, data: unknown): unknown;
};
const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
/** Seconds per measurement of one runner in one round. */
const SECONDS = arg("--seconds", 0.05);
/** Rounds per workload; each round measures the three runners back to back (rotating order). */
const ROUNDS = arg("--rounds", 41);
/** How many of the worst per-case ratios to print (0 disables the per-case pass). */
const WORST = arg("--worst", 8);
/** Copies of the evaluator's code the 20-var mapper's vars are spread over (mapper/copies.ts; 0: off). */
const COPIES = arg("--copies", DEFAULT_CODE_COPIES);
const onlyAt = process.argv.indexOf("--only");
const ONLY = new Set(onlyAt > 0 ? (process.argv[onlyAt + 1] ?? "").split(",").filter(Boolean) : []);
const SECTIONS = ["engine", "mapper20", "pool", "regex", "helpers", "structured"];
for (const name of ONLY) {
  if (!SECTIONS.includes(name))
    throw new Error(`--only: unknown section ${name} (one of ${SECTIONS.join(", ")})`);
}
/** True when section `name` is to run (all run without `--only`). */
const want = (name: string): boolean => ONLY.size === 0 || ONLY.has(name);
setCodeCopies(COPIES);
const DIR = join(sharedDataDir("conformance"), "jsonlogic");

/** Calls `fn` in batches until `seconds` elapse; returns calls per second. */
function measure(fn: () => void, seconds = SECONDS): number {
  let calls = 0;
  const start = performance.now();
  let now = start;
  while (now - start < seconds * 1000) {
    for (let i = 0; i < 50; i++) fn();
    calls += 50;
    now = performance.now();
  }
  return (calls / (now - start)) * 1000;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

type Runner = (data: unknown) => unknown;
/**
 * Every runner is compiled once outside the timing loop; each round times the three on the same data,
 * in a rotating order so drift on a shared machine hits each equally; ratios are taken within a round
 * and the median over rounds is reported (with the min–max of the per-round ratios).
 */
function suite(name: string, ours: Runner[], engine: Runner[], js: Runner[], data: unknown[]): void {
  const loop = (runners: Runner[]) => () => {
    for (let i = 0; i < runners.length; i++) runners[i]!(data[i]);
  };
  const fns = [loop(ours), loop(engine), loop(js)];
  for (const f of fns) measure(f, 0.3); // warm up the JIT for all three before any timing
  const rates: number[][] = [[], [], []];
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < 3; k++) {
      const j = (r + k) % 3;
      rates[j]!.push(measure(fns[j]!) * ours.length);
    }
  }
  const ratio = (j: number) => rates[0]!.map((a, r) => a / rates[j]![r]!);
  const fmt = (x: number) => `${Math.round(x).toLocaleString("en-US")}/s`;
  const span = (xs: number[]) =>
    `${median(xs).toFixed(2)}× (rounds ${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  console.log(`\n${name} (${ours.length} expressions per pass, median of ${ROUNDS} rounds × ${SECONDS}s)`);
  console.log(`  mailhook mapper            ${fmt(median(rates[0]!))}`);
  console.log(`  json-logic-engine build()  ${fmt(median(rates[1]!))}   mapper ÷ engine = ${span(ratio(1))}`);
  console.log(`  json-logic-js apply()      ${fmt(median(rates[2]!))}   mapper ÷ js     = ${span(ratio(2))}`);
}

/** Per-case ratios (each case timed alone, so call sites are friendlier than in the mixed pass). */
function worstCases(labels: string[], ours: Runner[], engine: Runner[], data: unknown[]): void {
  if (WORST <= 0) return;
  const rows = labels.map((label, i) => {
    const a = () => ours[i]!(data[i]);
    const b = () => engine[i]!(data[i]);
    const ra: number[] = [];
    const rb: number[] = [];
    for (let r = 0; r < 3; r++) {
      ra.push(measure(a, 0.01));
      rb.push(measure(b, 0.01));
    }
    return { label, ratio: median(ra) / median(rb), ours: median(ra) };
  });
  rows.sort((x, y) => x.ratio - y.ratio);
  console.log(
    `  worst per-case ratios (mapper ÷ engine; median over cases ${median(rows.map((r) => r.ratio)).toFixed(2)}×):`,
  );
  for (const r of rows.slice(0, WORST)) {
    const label = r.label.length > 70 ? `${r.label.slice(0, 67)}...` : r.label;
    console.log(
      `    ${r.ratio.toFixed(2)}×  ${Math.round(r.ours).toLocaleString("en-US").padStart(11)}/s  ${label}`,
    );
  }
}

// 1. json-logic-engine bench cases, shared operators only.
const engine = new LogicEngine();
if (want("engine")) {
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
  worstCases(
    cases.map((c) => JSON.stringify(c.rule)),
    cases.map((c) => compileExpression(c.rule)),
    cases.map((c) => engine.build(c.rule) as Runner),
    cases.map((c) => c.data),
  );
}

// 2. A realistic 20-var mapper (JsonLogic operators only, so all three can run it) over a real message.
const EML = join(sharedDataDir("corpus"), "emails/mailparser/examples__nodemailer.eml");
const message = await parseEmlBytes(new Uint8Array(await Bun.file(EML).arrayBuffer()));
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
if (want("mapper20")) {
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

  console.log(
    `  (its vars on ${COPIES} copies of the evaluator's code, mapper/copies.ts; --copies 0 turns them off)`,
  );
}

// 3. Pool round trip for a small mapper.
if (want("pool")) {
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
}

// 4. regex.replace over message-sized text against the 50 ms limit: a one-class pattern (scanned) and a
// general one (one RE2 search per match).
if (want("regex")) {
  console.log(
    "\nregex.replace over text (median of 7 runs, charged as the limit charges: min of wall and thread CPU time; limit 50 ms per operation)",
  );
  const prose =
    "Dear customer, your order #1234 has shipped.\n  Track it at https://t.example/1234 below.\t ";
  const replaces: [string, unknown][] = [
    ["\\s+ → ' ' (one class: scanned)", { "regex.replace": { value: v("t"), pattern: "\\s+", with: " " } }],
    [
      "#(\\d+)|https?://\\S+ → <$1> (searched)",
      { "regex.replace": { value: v("t"), pattern: "#(\\d+)|https?://\\S+", with: "<$1>" } },
    ],
  ];
  for (const [label, expr] of replaces) {
    const run = compileExpression(expr);
    const figures: string[] = [];
    for (const kb of [20, 100, 1000]) {
      const t = prose.repeat(Math.ceil((kb * 1024) / prose.length)).slice(0, kb * 1024);
      figures.push(`${kb} KB ${medianRun(7, () => run({ t }))}`);
    }
    console.log(`  ${label}: ${figures.join(", ")}`);
  }
}

// 5. The helpers on big HTML: 1 MB (and the 1 M-character cap they cut longer input to) vs 100 ms.
if (want("helpers")) {
  console.log(
    "\ncall.* on link-dense HTML (median of 5 runs, charged as the limit charges: min of wall and thread CPU time; limit 100 ms per call; input cut at 1 M characters)",
  );
  const page = `<p>Weekly digest</p><ul>${Array.from(
    { length: 40 },
    (_, i) =>
      `<li><a href="https://news.example.com/story/${i}?utm_source=mail">Story ${i}: a headline</a> — a short summary with <b>bold</b> words.</li>`,
  ).join("")}</ul><p>Read more at <a href="https://example.com">example.com</a></p>`;
  const helpers = {
    "transform.html_to_text": compileExpression({ "call.transform.html_to_text": { html: v("h") } }),
    "extract.urls": compileExpression({ "call.extract.urls": { html: v("h") } }),
    "extract.bullet_list": compileExpression({ "call.extract.bullet_list": { html: v("h") } }),
  };
  for (const kb of [100, 1024]) {
    const h = page.repeat(Math.ceil((kb * 1024) / page.length)).slice(0, kb * 1024);
    const parts: string[] = [];
    for (const [name, f] of Object.entries(helpers)) {
      parts.push(`${name} ${medianRun(5, () => f({ h }))}`);
    }
    console.log(`  ${String(kb).padStart(4)} KB: ${parts.join(", ")}`);
  }
}

// 6. The structured-extraction helpers on 100 KB, 1 MB and 4 MB against the 100 ms limit.
if (want("structured")) benchNewHelpers();
