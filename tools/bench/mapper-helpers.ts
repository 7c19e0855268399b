/**
 * The structured-extraction helpers (`call.extract.key_value_pairs`, `call.extract.tables`,
 * `call.extract.dom`) on 100 KB, 1 MB and 4 MB inputs against the 100 ms call limit: HTML with 2,000
 * table rows per MB (tables of 50 rows) and text with 10,000 `Key: value` lines per MB. Inputs longer than
 * the helpers' cap (1 M characters; 200,000 for extract.dom) are cut to it, so the 4 MB figure shows
 * the cap holding. Printed as `  <helper>: 100 KB x ms, 1024 KB y ms, 4096 KB z ms`; run alone with
 * `bun tools/bench/mapper-helpers.ts`, or as the last section of tools/bench/mapper.ts.
 */
import { compileExpression } from "../../mapper/index.ts";

type CpuUsage = { user: number; system: number };
const threadCpu = (process as unknown as { threadCpuUsage?: (p?: CpuUsage) => CpuUsage }).threadCpuUsage;
const cpuUsage = (previous?: CpuUsage): CpuUsage =>
  typeof threadCpu === "function" ? threadCpu.call(process, previous) : process.cpuUsage(previous);

/**
 * "12.3 ms" — the median of `runs` timed calls, each charged as the call limit charges it: the smaller of
 * wall-clock and this thread's CPU time (on a busy host a call can wait for a core) — plus " (code)" when
 * any of them failed.
 */
export function medianRun(runs: number, fn: () => void): string {
  const times: number[] = [];
  let failure = "";
  for (let i = 0; i < runs; i++) {
    const cpu = cpuUsage();
    const started = performance.now();
    try {
      fn();
    } catch (err) {
      failure = (err as { code?: string }).code ?? String(err);
    }
    const wall = performance.now() - started;
    const used = cpuUsage(cpu);
    times.push(Math.min(wall, (used.user + used.system) / 1000));
  }
  times.sort((a, b) => a - b);
  return `${(times[runs >> 1] as number).toFixed(1)} ms${failure ? ` (${failure})` : ""}`;
}

const MB = 1024 * 1024;

/** `bytes` of HTML: tables of 50 rows, about 2,000 rows per MB. */
export function tableHtml(bytes: number): string {
  const row = (i: number) =>
    `<tr><td class="item">Widget ${i}</td><td class="qty">${i % 17}</td><td class="price">$${(i % 97) + 0.99}</td><td>${"a plain description of the line ".repeat(12)}</td></tr>\n`;
  const parts: string[] = ["<html><body><p>Your order</p>"];
  let size = parts[0]!.length;
  let i = 0;
  while (size < bytes) {
    let t = "<table><thead><tr><th>Item</th><th>Qty</th><th>Price</th><th>Notes</th></tr></thead><tbody>\n";
    for (let r = 0; r < 50; r++) t += row(i++);
    t += "</tbody></table>\n";
    parts.push(t);
    size += t.length;
  }
  return parts.join("").slice(0, bytes);
}

/** `bytes` of text: about 10,000 `Key: value` lines per MB. */
export function keyValueText(bytes: number): string {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const line =
      `Order Field ${i % 500}: value number ${i} for the order, shipped by carrier ${i % 7}.`.padEnd(
        104,
        " ",
      );
    lines.push(line);
    size += line.length + 1;
  }
  return lines.join("\n").slice(0, bytes);
}

export function benchNewHelpers(sizesKb = [100, 1024, 4096], runs = 5): void {
  console.log(
    "\nstructured helpers (median of 5 runs, charged as the limit charges: min of wall and thread CPU time; limit 100 ms per call; input cut at 1 M characters, extract.dom at 200,000)",
  );
  const v = (name: string) => ({ var: name });
  const helpers: [string, (d: unknown) => unknown, (bytes: number) => unknown][] = [
    [
      "extract.key_value_pairs",
      compileExpression({ "call.extract.key_value_pairs": { mode: "text", text: v("t") } }),
      (b) => ({ t: keyValueText(b) }),
    ],
    [
      "extract.tables",
      compileExpression({ "call.extract.tables": { mode: "html", html: v("h") } }),
      (b) => ({ h: tableHtml(b) }),
    ],
    [
      "extract.dom",
      compileExpression({
        "call.extract.dom": {
          html: v("h"),
          selector_type: "css",
          selector: "td.price",
          value: "text",
          many: true,
        },
      }),
      (b) => ({ h: tableHtml(b) }),
    ],
  ];
  for (const [name, run, input] of helpers) {
    const parts: string[] = [];
    for (const kb of sizesKb) {
      const data = input((kb * MB) / 1024);
      run(data); // warm-up
      parts.push(`${kb} KB ${medianRun(runs, () => run(data))}`);
    }
    console.log(`  ${name}: ${parts.join(", ")}`);
  }
}

if (import.meta.main) benchNewHelpers();
