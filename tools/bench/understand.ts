/**
 * Message understanding: reply accuracy on a labelled set, side by side with two peers, and the cost of
 * analysing a message.
 *
 *   bun tools/bench/understand.ts [--rounds 31] [--misses]
 *
 * Accuracy: the share of the labelled bodies (tools/bench/understand-cases.ts) whose new content comes
 * out exactly as labelled (line ends and trailing spaces normalised), for our segmenter, npm
 * `email-reply-parser` (crisp-oss, `getVisibleText()`) and npm `planer` (a port of mailgun/talon,
 * `extractFrom(text, "text/plain")`; it removes quotes, not signatures). Cost: the median time of
 * `analyzeMessage` on a 100 KB HTML reply and on 1 MB bodies (text and HTML).
 */
import { parseArgs } from "node:util";
import EmailReplyParser from "email-reply-parser";
import planer from "planer";
import { segmentText } from "../../mapper/functions/reply/index.ts";
import { analyzeMessage } from "../../services/mail/understand/index.ts";
import { REPLY_CASES } from "./understand-cases.ts";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "31" }, misses: { type: "boolean", default: false } },
});
const rounds = Math.max(3, Number(values.rounds));

const normalise = (s: string) =>
  s
    .replace(/\r\n?/g, "\n")
    .replace(/[ \t]+$/gm, "")
    .replace(/\n{3,}/g, "\n\n")
    .trim();

const peers: Record<string, (text: string) => string> = {
  mailhook: (text) => segmentText(text).reply_content,
  "email-reply-parser": (text) => new EmailReplyParser().read(text).getVisibleText(),
  planer: (text) => planer.extractFrom(text, "text/plain"),
};

console.log(`reply accuracy on ${REPLY_CASES.length} labelled bodies (exact new content)`);
const scores: Record<string, number> = {};
for (const [name, extract] of Object.entries(peers)) {
  let exact = 0;
  const misses: string[] = [];
  for (const c of REPLY_CASES) {
    let got: string;
    try {
      got = extract(c.text);
    } catch (error) {
      got = `<threw ${String(error)}>`;
    }
    if (normalise(got) === normalise(c.expected)) exact++;
    else misses.push(`    ${c.name}: ${JSON.stringify(normalise(got)).slice(0, 120)}`);
  }
  scores[name] = (100 * exact) / REPLY_CASES.length;
  console.log(`  ${name.padEnd(20)} ${scores[name]?.toFixed(1)} % exact (${exact}/${REPLY_CASES.length})`);
  if (values.misses) for (const m of misses) console.log(m);
}
const best = Math.max(scores["email-reply-parser"] ?? 0, scores.planer ?? 0);
console.log(`  mailhook − best peer = ${((scores.mailhook ?? 0) - best).toFixed(1)} points`);

// --- cost ------------------------------------------------------------------------------------------

const prose =
  "Thanks for the detailed write-up. I went through the numbers again and the totals match what finance sent on Friday, except for the travel line. ";

function gmailHtmlReply(bytes: number): string {
  let quoted = "";
  let depth = 0;
  while (quoted.length < bytes) {
    depth++;
    quoted += `<div class="gmail_quote"><div class="gmail_attr">On Mon, Jan ${depth}, 2024 at 10:15 AM Bob &lt;bob@example.com&gt; wrote:<br></div><blockquote class="gmail_quote" style="margin:0 0 0 .8ex;border-left:1px #ccc solid;padding-left:1ex"><div dir="ltr">${`<p>${prose}</p>`.repeat(6)}`;
  }
  return `<div dir="ltr"><p>Looks right to me, ship it.</p><div>Best,</div><div>Alice</div></div>${quoted}${"</blockquote></div>".repeat(depth)}`;
}

function textReply(bytes: number): string {
  let out =
    "Looks right to me, ship it.\n\nBest,\nAlice\n\nOn Mon, Jan 8, 2024 at 10:15 AM Bob <bob@example.com> wrote:\n";
  let level = 1;
  while (out.length < bytes) {
    out += `${">".repeat(level)} ${prose}\n`;
    if (out.length % 7 === 0) level = (level % 8) + 1;
  }
  return out;
}

function message(text: string, html: string) {
  return {
    message_id: "<m@example.com>",
    subject: "Re: numbers",
    headers: { references: "<root@example.com>" },
    from: [{ email: "alice@example.com", name: "Alice" }],
    text,
    html,
  };
}

async function median(label: string, msg: ReturnType<typeof message>, n: number): Promise<number> {
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < 3; i++) await analyzeMessage(msg);
  for (let i = 0; i < n; i++) {
    const c = process.cpuUsage();
    const t = performance.now();
    await analyzeMessage(msg);
    times.push(performance.now() - t);
    const used = process.cpuUsage(c);
    cpu.push((used.user + used.system) / 1000);
  }
  const mid = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const m = mid(times);
  // CPU time beside wall time: on a shared machine the wall time includes waiting for a core.
  console.log(
    `  ${label.padEnd(34)} median ${m.toFixed(2)} ms (p90 ${times[Math.floor(n * 0.9)]?.toFixed(2)} ms, CPU median ${mid(cpu).toFixed(2)} ms, ${n} runs)`,
  );
  return m;
}

console.log("analyzeMessage cost");
await median("100 KB HTML reply", message("", gmailHtmlReply(100 * 1024)), rounds);
await median("1 MB text reply", message(textReply(1024 * 1024), ""), Math.ceil(rounds / 3));
await median("1 MB HTML reply", message("", gmailHtmlReply(1024 * 1024)), Math.ceil(rounds / 3));
