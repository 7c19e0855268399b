/**
 * `bun run bench`: runs the benchmarks (tools/bench/{ingest,delivery,download,mapper}.ts) and the chaos
 * and fuzz suites (tools/chaos/*) in their quick modes, one after another, captures their printed
 * figures (see report-suites.ts) and writes docs/benchmarks.md: machine, versions, every figure with
 * its target and pass/miss, the ratios against the peers, and the soak series when given.
 *
 *   bun tools/bench/report.ts [--only ingest,mapper,…] [--out docs/benchmarks.md] [--soak <soak log>]
 *                             [--full-logs <fuzzer log>,…]
 *
 * `--soak` takes the output of `bun tools/chaos/soak.ts` (the soak runs an hour in full mode, so it is
 * not run here). Each suite runs as a child process with a deadline and is killed if it overruns.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";
import { type Figure, SUITES, type Suite } from "./report-suites.ts";

const ROOT = join(import.meta.dir, "../..");
const PACKAGES = [
  "elysia",
  "postal-mime",
  "smtp-server",
  "drizzle-orm",
  "postgres",
  "@electric-sql/pglite",
  "json-logic-engine",
  "json-logic-js",
  "graphile-worker",
  "fast-check",
];

interface SuiteRun {
  suite: Suite;
  exitCode: number;
  seconds: number;
  figures: Figure[];
  tail: string;
}

async function runSuite(suite: Suite): Promise<SuiteRun> {
  const started = performance.now();
  const child = Bun.spawn(["bun", suite.file, ...suite.args], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => child.kill("SIGKILL"), suite.timeoutS * 1000);
  try {
    const [out, err] = await Promise.all([
      new Response(child.stdout).text(),
      new Response(child.stderr).text(),
    ]);
    const exitCode = await child.exited;
    const seconds = Math.round((performance.now() - started) / 100) / 10;
    let figures: Figure[];
    try {
      figures = suite.parse(out, exitCode);
    } catch (e) {
      figures = [
        { suite: suite.name, name: "output", value: `unparseable: ${e}`, unit: "", target: "", pass: false },
      ];
    }
    const tail = `${out}\n${err}`.trim().split("\n").slice(-12).join("\n");
    return { suite, exitCode, seconds, figures, tail };
  } finally {
    clearTimeout(timer);
    if (child.exitCode === null) child.kill("SIGKILL");
  }
}

async function versions(): Promise<[string, string][]> {
  const rows: [string, string][] = [["Bun", Bun.version]];
  const sql = postgres(process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres", { max: 1 });
  try {
    const [v] = await sql<{ version: string }[]>`select version()`;
    rows.push(["Postgres", v?.version.split(" on ")[0] ?? "?"]);
  } catch {
    rows.push(["Postgres", "unreachable"]);
  } finally {
    await sql.end();
  }
  for (const p of PACKAGES) {
    const file = join(ROOT, "node_modules", p, "package.json");
    if (existsSync(file))
      rows.push([p, (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version]);
  }
  return rows;
}

function machine(loadBefore: number[], loadAfter: number[]): [string, string][] {
  const os = existsSync("/etc/os-release")
    ? (/PRETTY_NAME="?([^"\n]+)"?/.exec(readFileSync("/etc/os-release", "utf8"))?.[1] ?? "Linux")
    : "?";
  const fmt = (l: number[]) => l.map((x) => x.toFixed(2)).join(" / ");
  return [
    ["CPU", `${cpus().length} × ${cpus()[0]?.model.trim() ?? "?"}`],
    ["RAM", `${(totalmem() / 1024 ** 3).toFixed(1)} GiB`],
    ["OS", `${os} (kernel ${release()})`],
    ["load average (1/5/15 min) before", fmt(loadBefore)],
    ["load average (1/5/15 min) after", fmt(loadAfter)],
  ];
}

const cell = (v: Figure["value"], unit: string) =>
  `${typeof v === "number" ? v.toLocaleString("en-US", { maximumFractionDigits: 2 }) : v}${unit ? ` ${unit}` : ""}`;
/** A figure's name in a Markdown table cell: a `|` (a regex alternation) would end the cell. */
const escapeCell = (s: string) => s.replaceAll("|", "\\|");
const verdict = (p: boolean | null) => (p === null ? "" : p ? "pass" : "**miss**");

function soakSection(path: string): string[] {
  const text = readFileSync(path, "utf8");
  const series = [...text.matchAll(/^t=(\d+)s rss=([\d.]+)MiB fds=(\d+)/gm)].map(
    (m) => `${m[1]}\t${m[2]}\t${m[3]}`,
  );
  const result = /^RESULT (.*)$/m.exec(text)?.[1];
  const r = result ? (JSON.parse(result) as Record<string, unknown>) : null;
  const q = (v: unknown) => v as { q2: number; q4: number };
  const lines = ["## Soak", ""];
  if (r) {
    lines.push(
      `${r.minutes} minutes of mixed load (\`bun tools/chaos/soak.ts --minutes ${r.minutes}\`): **${r.pass ? "pass" : "fail"}**` +
        `${(r.reasons as string[]).length ? ` (${(r.reasons as string[]).join("; ")})` : ""}.` +
        `${Number(r.minutes) < 60 ? " Shorter than the full mode's hour: the slope is extrapolated from this window." : ""}`,
      "",
      `- RSS: mean ${q(r.rssGrowth).q2.toFixed(1)} MiB in the second quarter → ${q(r.rssGrowth).q4.toFixed(1)} MiB in the last; least-squares slope ${r.rssSlopeMiBPerHour} MiB/h`,
      `- open fds: mean ${q(r.fdGrowth).q2.toFixed(1)} → ${q(r.fdGrowth).q4.toFixed(1)}; slope ${r.fdSlopePerHour} /h`,
      `- work done: ${JSON.stringify(r.counts)}`,
      "",
    );
  }
  lines.push("Samples (seconds, RSS MiB, open fds):", "", "```", "t\trss\tfds", ...series, "```", "");
  return lines;
}

/** The inputs the fuzzers found breaking an invariant, kept as regression fixtures (test/fixtures/fuzz). */
function fuzzFindings(): string[] {
  const dir = join(ROOT, "test/fixtures/fuzz");
  if (!existsSync(dir)) return [];
  const lines = ["## Fuzz findings kept as regression tests", "", "| fixture | what broke |", "|---|---|"];
  for (const file of (readdirSync(dir, { recursive: true }) as string[]).sort()) {
    const path = join(dir, file);
    if (file.endsWith(".json")) {
      const found = (JSON.parse(readFileSync(path, "utf8")) as { found?: string }).found ?? "";
      lines.push(`| \`${file}\` | ${found.replaceAll("|", "\\|")} |`);
    } else if (file.endsWith(".eml")) {
      const first = /found by ([^\r\n]*)/.exec(readFileSync(path, "latin1"))?.[0] ?? "";
      lines.push(`| \`${file}\` | ${first} |`);
    }
  }
  return [...lines, ""];
}

/** Full-mode fuzz runs (their `RESULT {…}` lines), which take too long for `bun run bench` itself. */
function fullRuns(paths: string): string[] {
  const lines = [
    "## Full-mode fuzz runs",
    "",
    "| run | seed | inputs | failures | duration |",
    "|---|---|---|---|---|",
  ];
  for (const path of paths.split(",")) {
    const text = readFileSync(path, "utf8");
    const result = /^RESULT (.*)$/m.exec(text)?.[1];
    if (!result) continue;
    const r = JSON.parse(result) as Record<string, number>;
    const inputs = r.messages ?? r.requests ?? r.ran ?? 0;
    const what = r.messages ? "messages" : r.requests ? "requests" : "mapper runs";
    const name = text.split(":")[0] ?? path;
    const secs = Math.round((r.durationMs ?? 0) / 1000);
    lines.push(
      `| ${name} | ${r.seed} | ${inputs.toLocaleString("en-US")} ${what} | ${r.failures} | ${secs} s |`,
    );
  }
  return [...lines, ""];
}

function render(
  runs: SuiteRun[],
  mach: [string, string][],
  vers: [string, string][],
  soak: string | undefined,
  fullLogs: string | undefined,
) {
  const all = runs.flatMap((r) => r.figures);
  const targeted = all.filter((f) => f.pass !== null);
  const lines = [
    "# Benchmarks and reliability suites",
    "",
    `Generated by \`bun run bench\` (tools/bench/report.ts) on ${new Date().toISOString().slice(0, 19)}Z. Every suite ran`,
    "in its **quick mode**, one after another, on a machine shared with other work (see the load average):",
    "treat throughput figures as a floor; on this box consecutive runs have differed by up to 3× (delivery",
    "burst between about 700 and 2,100 events/s). Full modes and their flags are in each tool's header comment.",
    "",
    `**${targeted.filter((f) => f.pass).length} of ${targeted.length} targeted figures pass.**`,
    "",
    "## Machine",
    "",
    "| | |",
    "|---|---|",
    ...mach.map(([k, v]) => `| ${k} | ${v} |`),
    "",
    "## Versions",
    "",
    "| component | version |",
    "|---|---|",
    ...vers.map(([k, v]) => `| ${k} | ${v} |`),
    "",
    "## Ratios against the peers",
    "",
    "| comparison | ratio | target | |",
    "|---|---|---|---|",
    ...all
      .filter((f) => f.peer)
      .map(
        (f) =>
          `| ${f.suite}: ${escapeCell(f.name)} | ${cell(f.value, f.unit)} | ${f.target} | ${verdict(f.pass)} |`,
      ),
    "",
    "## Figures",
    "",
  ];
  for (const r of runs) {
    lines.push(
      `### ${r.suite.name}`,
      "",
      `\`bun ${r.suite.file} ${r.suite.args.join(" ")}\` — exit ${r.exitCode}, ${r.seconds} s`,
      "",
    );
    if (r.figures.length === 0)
      lines.push("No figures found in the output; its last lines:", "", "```", r.tail, "```", "");
    else {
      lines.push("| figure | value | target | |", "|---|---|---|---|");
      for (const f of r.figures)
        lines.push(`| ${escapeCell(f.name)} | ${cell(f.value, f.unit)} | ${f.target} | ${verdict(f.pass)} |`);
      lines.push("");
    }
  }
  if (fullLogs) lines.push(...fullRuns(fullLogs));
  if (soak) lines.push(...soakSection(soak));
  lines.push(...fuzzFindings());
  return `${lines.join("\n")}\n`;
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      only: { type: "string" },
      out: { type: "string", default: join(ROOT, "docs/benchmarks.md") },
      soak: { type: "string" },
      "full-logs": { type: "string" },
    },
  });
  const only = values.only ? new Set(values.only.split(",").map((s) => s.trim())) : null;
  const loadBefore = loadavg();
  const runs: SuiteRun[] = [];
  for (const suite of SUITES) {
    if (only && !only.has(suite.name) && !only.has(suite.name.split(" ").pop() ?? "")) continue;
    if (!existsSync(join(ROOT, suite.file))) continue;
    console.log(`▶ ${suite.name}: bun ${suite.file} ${suite.args.join(" ")}`);
    const r = await runSuite(suite);
    runs.push(r);
    for (const f of r.figures)
      console.log(`  ${f.name}: ${cell(f.value, f.unit)} ${f.target} ${verdict(f.pass)}`);
    console.log(`  (exit ${r.exitCode}, ${r.seconds} s)`);
  }
  const doc = render(
    runs,
    machine(loadBefore, loadavg()),
    await versions(),
    values.soak,
    values["full-logs"],
  );
  writeFileSync(values.out, doc);
  console.log(`wrote ${values.out}`);
}
