/**
 * The suites `bun run bench` runs (tools/bench/report.ts): each one's quick-mode command line and a
 * parser from its printed output to figures with their targets. Parsers read the lines the tools
 * already print, so the tools stay usable by hand; a figure a parser cannot find is reported missing.
 */

/** One measured figure; `target` is text such as "≥ 500", `pass` null when there is no target. */
export interface Figure {
  suite: string;
  name: string;
  value: number | string;
  unit: string;
  target: string;
  pass: boolean | null;
  /** set for figures that compare us with a peer implementation */
  peer?: string;
}

/** A suite: its command line (quick mode) and how to read its output. */
export interface Suite {
  name: string;
  file: string;
  args: string[];
  /** over this, the run is killed and reported as a timeout */
  timeoutS: number;
  parse(out: string, exitCode: number): Figure[];
}

const num = (s: string | undefined): number => Number((s ?? "").replace(/,/g, ""));

/**
 * The structured-extraction helpers (tools/bench/mapper-helpers.ts): each on 100 KB, 1 MB and 4 MB, the
 * 1 MB figure against the 100 ms call limit, and how the cost per KB grows from 100 KB to 1 MB (1.0 is
 * linear) where the whole 1 MB is read (extract.dom reads 200,000 characters at most).
 */
function structuredHelperFigures(out: string): Figure[] {
  const f: Figure[] = [];
  const lines = out.matchAll(
    /^ {2}(extract\.\w+): 100 KB ([\d.]+) ms[^,]*, 1024 KB ([\d.]+) ms[^,]*, 4096 KB ([\d.]+) ms/gm,
  );
  for (const m of lines) {
    const [small, mb, four] = [num(m[2]), num(m[3]), num(m[4])];
    f.push(fig("mapper", `call.${m[1]} on 100 KB`, small, "ms"));
    f.push(fig("mapper", `call.${m[1]} on 1 MB`, mb, "ms", "< 100"));
    f.push(fig("mapper", `call.${m[1]} on 4 MB (cut to its cap)`, four, "ms", "< 100"));
    if (m[1] !== "extract.dom" && small > 0)
      f.push(
        fig(
          "mapper",
          `call.${m[1]} cost per KB, 1 MB ÷ 100 KB`,
          Number((mb / 10.24 / small).toFixed(2)),
          "×",
          "≤ 1.5",
        ),
      );
  }
  return f;
}

function fig(
  suite: string,
  name: string,
  value: number | string,
  unit: string,
  target = "",
  peer?: string,
): Figure {
  let pass: boolean | null = null;
  const m = /^([≥≤<>])\s*([\d.]+)/.exec(target);
  if (m && typeof value === "number" && Number.isFinite(value)) {
    const t = Number(m[2]);
    pass = m[1] === "≥" ? value >= t : m[1] === "≤" ? value <= t : m[1] === "<" ? value < t : value > t;
  }
  return { suite, name, value, unit, target, pass, ...(peer ? { peer } : {}) };
}

/** Figures of the other engineers' chaos suites: `  key   value` report lines plus the verdict. */
function chaosFigures(suite: string, out: string, code: number): Figure[] {
  const figures: Figure[] = [];
  for (const line of out.split("\n")) {
    const m = /^ {2}([a-z][\w /.-]*?)\s{2,}(\S.*)$/.exec(line);
    if (m?.[1] && m[2] && !line.startsWith("  class"))
      figures.push(fig(suite, m[1].trim(), m[2].trim().replace(/\s{2,}/g, " / "), ""));
  }
  const ok = code === 0 && /OK: every invariant held/.test(out);
  figures.push({
    ...fig(suite, "invariants", ok ? "held" : `violated (exit ${code})`, ""),
    target: "all hold",
    pass: ok,
  });
  return figures;
}

function fuzzFigures(suite: string, out: string, code: number, count: string, min: number): Figure[] {
  const line = out.split("\n").find((l) => l.startsWith("{"));
  if (!line) return [{ ...fig(suite, "run", `no JSON output (exit ${code})`, ""), pass: false }];
  const r = JSON.parse(line) as Record<string, unknown> & {
    failures: unknown[];
    durationMs: number;
    seed: number;
  };
  return [
    fig(suite, count, Number(r[count]), "", `≥ ${min}`),
    fig(suite, "invariant failures", r.failures.length, "", "≤ 0"),
    fig(suite, "duration", Math.round(r.durationMs / 100) / 10, "s", ""),
    fig(suite, "seed", String(r.seed), "", ""),
  ];
}

/** Every suite in report order. Sizes are the quick modes (a few minutes in total on 2 cores). */
export const SUITES: Suite[] = [
  {
    name: "ingest",
    file: "tools/bench/ingest.ts",
    args: ["--db", "postgres", "--small", "3000", "--large", "20"],
    timeoutS: 600,
    parse(out) {
      const f: Figure[] = [];
      for (const m of out.matchAll(/^(postgres|pglite)\s+(SMTP|HTTP) (2 KB|1 MB)\s+([\d.]+) msg\/s/gm)) {
        const target = m[1] === "postgres" && m[2] === "SMTP" && m[3] === "2 KB" ? "≥ 500" : "";
        f.push(fig("ingest", `${m[2]} ${m[3]} (${m[1]})`, num(m[4]), "msg/s", target));
      }
      // SMTP intake as a share of what the smtp-server library alone accepts, measured in the same run.
      for (const m of out.matchAll(
        /^(postgres|pglite)\s+SMTP 2 KB over (\d+) sessions: .* ratio ([\d.]+) x/gm,
      )) {
        const name = `SMTP 2 KB over ${m[2]} sessions, share of a bare smtp-server sink (${m[1]})`;
        f.push(fig("ingest", name, num(m[3]), "×", m[1] === "postgres" ? "≥ 0.25" : "", "smtp-server sink"));
      }
      const rss = /8 x 30 MB over SMTP: ([\d.]+) s;.*VmHWM (\d+) MiB/.exec(out);
      if (rss) f.push(fig("ingest", "peak RSS, 8 × 30 MB over SMTP (VmHWM)", num(rss[2]), "MiB", "< 1024"));
      // One 49 MB message ingested and delivered: the worst of HTTP and SMTP, per shape and database.
      for (const db of ["postgres", "pglite"]) {
        for (const [shape, label] of [
          ["attachments", "two large files"],
          ["text", "a plain-text body"],
        ]) {
          const one = [
            ...out.matchAll(
              new RegExp(
                `^${db}\\s+one 49 MB message \\(${shape}\\) over \\w+:.* = ([\\d.]+) x the message`,
                "gm",
              ),
            ),
          ];
          if (one.length === 0) continue;
          const worst = Math.max(...one.map((m) => num(m[1])));
          const name = `peak RSS growth, one 49 MB message of ${label}, ingested and delivered (${db})`;
          f.push(fig("ingest", name, worst, "× its size", "< 3"));
        }
      }
      // Sender authentication at SMTP intake, warm DNS cache (tools/bench/ingest-auth.ts).
      const authOn = /SMTP 2 KB authentication on\s+([\d.]+) msg\/s/.exec(out);
      const authOff = /SMTP 2 KB authentication off ([\d.]+) msg\/s/.exec(out);
      const authRatio = /SMTP 2 KB authentication on ÷ off = ([\d.]+)/.exec(out);
      const authP99 = /DATA p99 added by authentication \(warm\) (-?[\d.]+) ms/.exec(out);
      if (authOff)
        f.push(fig("ingest", "SMTP 2 KB, authentication off (postgres)", num(authOff[1]), "msg/s"));
      if (authOn) f.push(fig("ingest", "SMTP 2 KB, authentication on (postgres)", num(authOn[1]), "msg/s"));
      if (authRatio)
        f.push(
          fig("ingest", "authentication on ÷ off", num(authRatio[1]), "×", "≥ 0.8", "authentication off"),
        );
      if (authP99)
        f.push(fig("ingest", "DATA p99 added by authentication (warm)", num(authP99[1]), "ms", "< 20"));
      return f;
    },
  },
  {
    name: "delivery",
    file: "tools/bench/delivery.ts",
    // 4,000 events: at 2,000 a burst lasts ≈ 1.3 s, of which the first batches run before the JIT has
    // compiled either side's loop, and the ratio swung 0.88–1.33 between consecutive runs.
    args: ["--events", "4000", "--only", "postgres,graphile", "--rate", "300"],
    timeoutS: 600,
    parse(out) {
      const f: Figure[] = [];
      for (const line of out.split("\n")) {
        const cells = line.split("│").map((c) => c.trim().replace(/^"|"$/g, ""));
        if (cells.length < 8 || !/^\d+$/.test(cells[1] ?? "")) continue;
        const [, , target, phase, , perSec, p50, p99] = cells;
        const t = target === "postgres" && phase === "burst" ? "≥ 1000" : "";
        f.push(fig("delivery", `${target} ${phase} events/s`, num(perSec), "events/s", t));
        f.push(fig("delivery", `${target} ${phase} p50 / p99`, `${p50} / ${p99}`, ""));
      }
      const ratio = /ratio mailhook\/graphile-worker \(burst events\/s\): ([\d.]+)/.exec(out);
      if (ratio)
        f.push(
          fig(
            "delivery",
            "mailhook ÷ graphile-worker (burst)",
            num(ratio[1]),
            "×",
            "≥ 1.0",
            "graphile-worker",
          ),
        );
      return f;
    },
  },
  {
    name: "bulk replay",
    file: "tools/bench/bulk-replay.ts",
    // the full 100,000: the figure is about that size (the claim and the chunks once slowed with it)
    args: ["--events", "100000"],
    timeoutS: 1800,
    // the one JSON result line
    parse: (out, code) => {
      const line = /^BULK_REPLAY_RESULT (\{.*\})$/m.exec(out)?.[1];
      if (!line) return [{ ...fig("bulk replay", "run", `no result (exit ${code})`, ""), pass: false }];
      const r = JSON.parse(line) as Record<string, number>;
      const s = "bulk replay";
      const n = num(String(r.events)).toLocaleString("en-US");
      return [
        fig(
          s,
          `${n} dead events re-queued (enqueue rate)`,
          num(String(r.enqueuedPerSec)),
          "events/s",
          "≥ 1000",
        ),
        fig(s, `${n} dead events delivered again`, num(String(r.deliveredPerSec)), "events/s", "≥ 1000"),
        fig(s, "API p50 meanwhile (events list, job status)", num(String(r.apiP50Ms)), "ms"),
        fig(s, "API p99 meanwhile (events list, job status)", num(String(r.apiP99Ms)), "ms", "< 100"),
        fig(s, "duration, request to last delivery", num(String(r.durationMs)), "ms"),
      ];
    },
  },
  {
    name: "rate limit",
    file: "tools/bench/rate-limit.ts",
    args: ["--workers", "4", "--events", "4000", "--rate", "50", "--warmup", "5", "--window", "60"],
    timeoutS: 600,
    // the one JSON result line: the 60 s window's mean and its largest second against the limit + 5 %
    parse: (out, code) => {
      const line = /^RATE_LIMIT_RESULT (\{.*\})$/m.exec(out)?.[1];
      if (!line) return [{ ...fig("rate limit", "run", `no result (exit ${code})`, ""), pass: false }];
      const r = JSON.parse(line) as Record<string, number>;
      const s = "rate limit";
      const cap = (num(String(r.rate)) * 1.05).toFixed(1);
      return [
        fig(s, "rate_limit_per_s 50, 4 processes: 60 s mean", num(String(r.meanPerSec)), "/s", `≤ ${cap}`),
        fig(
          s,
          "rate_limit_per_s 50, 4 processes: largest second",
          num(String(r.maxPerSec)),
          "/s",
          `≤ ${cap}`,
        ),
        fig(s, "rate_limit_per_s 50, 4 processes: smallest second", num(String(r.minPerSec)), "/s"),
        fig(s, "requests repeating an idempotency key", num(String(r.repeats)), "requests", "≤ 0"),
      ];
    },
  },
  {
    name: "download",
    file: "tools/bench/download.ts",
    args: ["--size-mb", "25", "--rounds", "3", "--concurrency", "10"],
    timeoutS: 300,
    parse(out) {
      const f: Figure[] = [];
      const st = /static \(Bun\.file\)\s+([\d.]+) MB\/s/.exec(out);
      const px = /proxy\s+\(.*?\)\s+([\d.]+) MB\/s/.exec(out);
      const ratio = /ratio proxy\/static\s+([\d.]+)/.exec(out);
      const rss = /RSS growth, (\d+) at once\s+([\d.-]+) MB/.exec(out);
      if (st) f.push(fig("download", "Bun static serving", num(st[1]), "MB/s"));
      if (px) f.push(fig("download", "download proxy", num(px[1]), "MB/s"));
      if (ratio)
        f.push(fig("download", "proxy ÷ Bun static", num(ratio[1]), "×", "≥ 0.8", "Bun static serving"));
      if (rss) f.push(fig("download", `RSS growth, ${rss[1]} downloads at once`, num(rss[2]), "MB", "< 100"));
      return f;
    },
  },
  {
    name: "imap",
    file: "tools/bench/imap.ts",
    args: ["--messages", "5000", "--samples", "20", "--large", "50000"],
    timeoutS: 1500,
    parse(out) {
      const f: Figure[] = [];
      const bare = /bare imapflow fetch\s+([\d,]+) messages\/s/.exec(out);
      const taken = /mailhook poller\s+([\d,]+) messages\/s taken in/.exec(out);
      const ours = /mailhook poller\s+([\d,]+) messages\/s processed/.exec(out);
      const ratio = /poller ÷ bare = ([\d.]+)× \(taken in\)/.exec(out);
      const ratioProcessed = /poller ÷ bare = ([\d.]+)× \(processed\)/.exec(out);
      const direct = /poller ÷ direct ingest = ([\d.]+)×/.exec(out);
      const rss = /peak RSS during backfill ([\d.]+) MiB/.exec(out);
      const idle = /p50 ([\d.]+) s, p99 ([\d.]+) s/.exec(out);
      if (bare) f.push(fig("imap", "backfill 5,000: bare imapflow fetch", num(bare[1]), "msg/s"));
      if (taken) f.push(fig("imap", "backfill 5,000: mailhook poller, taken in", num(taken[1]), "msg/s"));
      if (ours) f.push(fig("imap", "backfill 5,000: mailhook poller, processed", num(ours[1]), "msg/s"));
      if (ratio)
        f.push(
          fig(
            "imap",
            "backfill: poller (taken in: fetched and stored) ÷ bare imapflow fetch",
            num(ratio[1]),
            "×",
            "≥ 0.5",
            "imapflow",
          ),
        );
      if (ratioProcessed)
        f.push(
          fig("imap", "backfill: poller (processed) ÷ bare imapflow fetch", num(ratioProcessed[1]), "×"),
        );
      if (direct) f.push(fig("imap", "backfill: poller (processed) ÷ direct ingest", num(direct[1]), "×"));
      if (rss) f.push(fig("imap", "peak RSS during the backfill", num(rss[1]), "MiB", "< 300"));
      if (idle) {
        f.push(fig("imap", "IDLE latency p50, landed → endpoint", num(idle[1]), "s"));
        f.push(fig("imap", "IDLE latency p99, landed → endpoint", num(idle[2]), "s", "≤ 5"));
      }
      const large = /large mailbox backfill of (\d+) messages/.exec(out);
      const largeTaken = /large: mailhook poller ([\d,]+) messages\/s taken in/.exec(out);
      const largeRate = /large: mailhook poller ([\d,]+) messages\/s processed/.exec(out);
      const largeRss = /large: peak RSS ([\d.]+) MiB/.exec(out);
      const progress = /large: backfill_remaining took (\d+) values, .*?, (decreasing|NOT decreasing)/.exec(
        out,
      );
      if (large && largeRate) {
        const n = Number(large[1]).toLocaleString("en-US");
        if (largeTaken) f.push(fig("imap", `large mailbox ${n}: taken in`, num(largeTaken[1]), "msg/s"));
        f.push(fig("imap", `large mailbox ${n}: processed`, num(largeRate[1]), "msg/s"));
        if (largeRss) f.push(fig("imap", `large mailbox ${n}: peak RSS`, num(largeRss[1]), "MiB", "< 300"));
        if (progress) {
          const falling = progress[2] === "decreasing";
          f.push({
            ...fig(
              "imap",
              `large mailbox ${n}: backfill_remaining`,
              `${progress[2]} (${progress[1]} values)`,
              "",
            ),
            target: "decreasing",
            pass: falling,
          });
        }
      }
      return f;
    },
  },
  {
    name: "search",
    file: "tools/bench/messages-search.ts",
    args: ["--messages", "100000", "--queries", "300", "--tail", "2000"],
    timeoutS: 900,
    parse(out) {
      const f: Figure[] = [];
      const rate = /search indexer: [\d,]+ messages in [\d.]+ s, ([\d,]+) messages\/s/.exec(out);
      const indexed = /search over ([\d,]+) messages: p50 ([\d.]+) ms, p99 ([\d.]+) ms/.exec(out);
      const tail =
        /search over [\d,]+ messages \+ ([\d,]+) not yet indexed: p50 ([\d.]+) ms, p99 ([\d.]+) ms/.exec(out);
      if (rate) f.push(fig("search", "background indexer rate", num(rate[1]), "msg/s"));
      if (indexed) {
        f.push(fig("search", `message search over ${indexed[1]} messages, p50`, num(indexed[2]), "ms"));
        f.push(
          fig("search", `message search over ${indexed[1]} messages, p99`, num(indexed[3]), "ms", "< 100"),
        );
      }
      if (tail)
        f.push(
          fig("search", `message search p99 with ${tail[1]} messages not yet indexed`, num(tail[3]), "ms"),
        );
      return f;
    },
  },
  {
    name: "mapper",
    file: "tools/bench/mapper.ts",
    args: ["--seconds", "0.05", "--rounds", "21", "--worst", "0"],
    timeoutS: 300,
    parse(out) {
      const f: Figure[] = [];
      for (const block of out.split(/\n(?=\S.*expressions per pass)/)) {
        const name = block.split(" (")[0]?.trim() ?? "";
        const ours = /mailhook mapper\s+([\d,]+)\/s/.exec(block);
        const eng = /mapper ÷ engine = ([\d.]+)×/.exec(block);
        const js = /mapper ÷ js\s+= ([\d.]+)×/.exec(block);
        if (!ours) continue;
        f.push(fig("mapper", `${name}: mailhook`, num(ours[1]), "evaluations/s"));
        if (eng)
          f.push(
            fig("mapper", `${name}: ÷ json-logic-engine`, num(eng[1]), "×", "≥ 1.0", "json-logic-engine"),
          );
        if (js) f.push(fig("mapper", `${name}: ÷ json-logic-js`, num(js[1]), "×", "≥ 8", "json-logic-js"));
      }
      const pool = /pool round trip .*?p50 ([\d.]+) ms, p99 ([\d.]+) ms/.exec(out);
      if (pool) {
        f.push(fig("mapper", "pool round trip p50", num(pool[1]), "ms", "< 0.3"));
        f.push(fig("mapper", "pool round trip p99", num(pool[2]), "ms"));
      }
      // regex.replace on 100 KB of prose, against its 50 ms limit (one line per pattern).
      for (const m of out.matchAll(/^ {2}(.+?): 20 KB [\d.]+ ms[^,]*, 100 KB ([\d.]+) ms/gm)) {
        f.push(fig("mapper", `regex.replace ${m[1]} on 100 KB`, num(m[2]), "ms", "< 50"));
      }
      // The call.* helpers on 1 MB of HTML, against their 100 ms limit.
      const helpers = /^ {2}1024 KB: (.*)$/m.exec(out)?.[1] ?? "";
      for (const m of helpers.matchAll(/([\w.]+) ([\d.]+) ms/g)) {
        f.push(fig("mapper", `call.${m[1]} on 1 MB of HTML`, num(m[2]), "ms", "< 100"));
      }
      f.push(...structuredHelperFigures(out));
      return f;
    },
  },
  {
    name: "steps",
    file: "tools/bench/steps.ts",
    args: ["--passes", "3"],
    timeoutS: 180,
    parse(out) {
      const f: Figure[] = [];
      const targets: Record<string, string> = { html_to_text: "≥ 50", "map.postmark_json": "≥ 500" };
      for (const m of out.matchAll(/^ {2}(\S+)\s+([\d,]+) messages\/s/gm)) {
        f.push(fig("steps", m[1] as string, num(m[2]), "messages/s", targets[m[1] as string] ?? "≥ 200"));
      }
      const big = /html_to_text on 1 MB of HTML: ([\d.]+) ms/.exec(out);
      if (big) f.push(fig("steps", "html_to_text on 1 MB of HTML", num(big[1]), "ms", "< 2000"));
      const raw = /raw body base64 round trip of 10 MB: ([\d.]+) ms/.exec(out);
      if (raw) f.push(fig("steps", "raw body base64 round trip, 10 MB", num(raw[1]), "ms", "< 500"));
      return f;
    },
  },
  {
    name: "understand",
    file: "tools/bench/understand.ts",
    args: ["--rounds", "31"],
    timeoutS: 300,
    parse(out) {
      const f: Figure[] = [];
      for (const m of out.matchAll(/^ {2}(mailhook|email-reply-parser|planer)\s+([\d.]+) % exact/gm)) {
        const ours = m[1] === "mailhook";
        f.push(
          fig(
            "understand",
            `reply accuracy: ${m[1]}`,
            num(m[2]),
            "% exact",
            ours ? "≥ 90" : "",
            ours ? undefined : m[1],
          ),
        );
      }
      const lead = /mailhook − best peer = (-?[\d.]+) points/.exec(out);
      if (lead)
        f.push(
          fig(
            "understand",
            "reply accuracy: mailhook − best peer",
            num(lead[1]),
            "points",
            "≥ 0",
            "email-reply-parser, planer",
          ),
        );
      for (const m of out.matchAll(
        /^ {2}(100 KB HTML reply|1 MB text reply|1 MB HTML reply)\s+median ([\d.]+) ms/gm,
      )) {
        f.push(
          fig(
            "understand",
            `analyzeMessage, ${m[1]} (median)`,
            num(m[2]),
            "ms",
            m[1] === "100 KB HTML reply" ? "< 5" : "< 100",
          ),
        );
      }
      return f;
    },
  },
  ...(["crash", "receiver", "scale"] as const).map(
    (name): Suite => ({
      name: `chaos ${name}`,
      file: `tools/chaos/${name}.ts`,
      args: ["--quick"],
      timeoutS: 480,
      parse: (out, code) => chaosFigures(`chaos ${name}`, out, code),
    }),
  ),
  {
    name: "chaos outage",
    file: "tools/chaos/outage.ts",
    args: ["--quick"],
    timeoutS: 480,
    // the drill's one JSON report line, and its verdict
    parse: (out, code) => {
      const line = /^outage report: (\{.*\})$/m.exec(out)?.[1];
      if (!line) return [{ ...fig("chaos outage", "run", `no report (exit ${code})`, ""), pass: false }];
      const r = JSON.parse(line) as Record<string, number>;
      const s = "chaos outage";
      return [
        fig(s, "messages during a 2 h outage", num(String(r.messages)), "messages"),
        fig(s, "dead", num(String(r.dead)), "events", "≤ 0"),
        fig(s, "lost", num(String(r.lost)), "events", "≤ 0"),
        fig(
          s,
          "attempts while down",
          num(String(r.attemptsWhileDown)),
          "attempts",
          `≤ ${num(String(r.threshold)) + num(String(r.probeBudget))}`,
        ),
        fig(s, "recovery to last delivery (simulated)", num(String(r.drainSimulatedMin)), "min", "≤ 30"),
        fig(s, "backlog drain after the first 2xx (real)", num(String(r.drainRealS)), "s"),
        {
          ...fig(s, "verdict", code === 0 ? "PASS" : `FAIL (exit ${code})`, ""),
          target: "PASS",
          pass: code === 0,
        },
      ];
    },
  },
  {
    name: "attacks",
    file: "tools/chaos/attacks.ts",
    args: ["--quick"],
    timeoutS: 300,
    // one figure per report line: the attack's name and its verdict (info lines are not judged)
    parse: (out, code) => {
      const lines = out.split("\n").filter((l) => / (safe|UNSAFE|info|ERROR)$/.test(l));
      if (lines.length === 0)
        return [{ ...fig("attacks", "run", `no report lines (exit ${code})`, ""), pass: false }];
      return lines.map((l) => {
        const verdict = l.slice(l.lastIndexOf(" ") + 1);
        const judged = verdict === "info" ? null : verdict === "safe";
        return { ...fig("attacks", l.slice(0, 34).trim(), verdict, ""), target: "safe", pass: judged };
      });
    },
  },
  {
    name: "fuzz MIME",
    file: "tools/chaos/fuzz-mime.ts",
    args: ["--quick", "--json"],
    timeoutS: 600,
    parse: (out, code) => fuzzFigures("fuzz MIME", out, code, "messages", 300),
  },
  {
    name: "fuzz API",
    file: "tools/chaos/fuzz-api.ts",
    args: ["--quick", "--json"],
    timeoutS: 600,
    parse: (out, code) => fuzzFigures("fuzz API", out, code, "requests", 500),
  },
  {
    name: "fuzz mapper",
    file: "tools/chaos/fuzz-mapper.ts",
    args: ["--quick", "--json"],
    timeoutS: 600,
    parse: (out, code) => fuzzFigures("fuzz mapper", out, code, "ran", 50),
  },
];
