/**
 * Pipeline step throughput over the shared email corpus: `bun tools/bench/steps.ts [--passes 3]`.
 * Each step runs on every corpus message (html_to_text on those with an HTML body), timed over whole
 * passes; the best pass is reported as messages per second. Then html_to_text on 1 MB of link-dense
 * HTML, and the base64 round trip of a 10 MB raw message (how `map.raw_mime` bodies are stored and
 * read back for each attempt).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { NormalizedMessage } from "../../services/lib/message.ts";
import { applyTransforms } from "../../services/routing/pipeline.ts";
import { postmarkJsonStep } from "../../services/routing/steps/postmark-json.ts";
import { slackSimpleStep } from "../../services/routing/steps/slack-simple.ts";
import { telegramSimpleStep } from "../../services/routing/steps/telegram-simple.ts";
import type { MapDeps, MapInput } from "../../services/routing/steps/types.ts";
import { sharedDataDir } from "../../test/support/paths.ts";
import { parseEmlBytes } from "../mapper-repl-input.ts";

const arg = (name: string, fallback: number): number => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const PASSES = arg("--passes", 3);

const files = readdirSync(join(sharedDataDir("corpus"), "emails"), { recursive: true, withFileTypes: true })
  .filter((d) => d.isFile() && !d.name.endsWith(".md"))
  .map((d) => join(d.parentPath, d.name));
const messages: NormalizedMessage[] = [];
for (const f of files) {
  try {
    messages.push(await parseEmlBytes(new Uint8Array(readFileSync(f))));
  } catch {
    // a corpus file the parser refuses is not a step's concern
  }
}
const withHtml = messages.filter((m) => m.html.trim() !== "");
const ctx = { routeId: "rte_bench", projectId: "prj_bench", sourceType: "smtp" as const, rawSizeBytes: 1000 };
const input = (message: NormalizedMessage): MapInput => ({
  message,
  projectId: "prj_bench",
  event: { id: "0190b3a0-0000-7000-8000-000000000001", routeId: "rte_bench", createdAt: new Date() },
  rawSizeBytes: 1000,
  sourceType: "smtp",
  envelope: { mail_from: "a@example.com", rcpt_to: ["in+tag@in.localhost"] },
  now: new Date().toISOString(),
});
const deps: MapDeps = {
  runMapper: async () => null,
  readRaw: async () => new Uint8Array(1000),
  readAttachment: async () => new Uint8Array(1024),
};

/** Best of PASSES passes of `fn` over `list`: messages per second. */
async function rate(list: NormalizedMessage[], fn: (m: NormalizedMessage) => unknown): Promise<number> {
  let best = 0;
  for (let p = 0; p < PASSES; p++) {
    const start = performance.now();
    for (const m of list) await fn(m);
    best = Math.max(best, (list.length / (performance.now() - start)) * 1000);
  }
  return best;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");
console.log(
  `pipeline steps over ${messages.length} corpus messages (${withHtml.length} with HTML), best of ${PASSES}`,
);
const rows: [string, number, number][] = [
  [
    "html_to_text",
    withHtml.length,
    await rate(withHtml, (m) => applyTransforms([{ name: "html_to_text", args: { width: 0 } }], m)),
  ],
  [
    "replace_values",
    messages.length,
    await rate(messages, (m) =>
      applyTransforms(
        [
          {
            name: "replace_values",
            args: { set: { subject: "[{{ ctx.route_id }}] {{ subject }} {{ from[0].email }}" } },
          },
        ],
        m,
        ctx,
      ),
    ),
  ],
  [
    "map.slack_simple",
    messages.length,
    await rate(messages, (m) => slackSimpleStep.build({ channel: "C1" }, input(m))),
  ],
  [
    "map.telegram_simple",
    messages.length,
    await rate(messages, (m) =>
      telegramSimpleStep.build({ chat_id: "1", parse_mode: "MarkdownV2" }, input(m)),
    ),
  ],
  [
    "map.postmark_json",
    messages.length,
    await rate(messages, async (m) =>
      JSON.stringify((await postmarkJsonStep.build({}, input(m), deps)).value),
    ),
  ],
];
for (const [name, n, r] of rows)
  console.log(`  ${name.padEnd(20)} ${fmt(r).padStart(9)} messages/s  (${n} messages)`);

// 1 MB of link-dense HTML through html_to_text.
const chunk = '<p>Order <a href="https://shop.example/o/1234">#1234</a> shipped &amp; <b>on its way</b>.</p>';
const bigHtml = chunk.repeat(Math.ceil((1024 * 1024) / chunk.length));
const big = { ...messages[0]!, html: bigHtml };
let bestBig = Number.POSITIVE_INFINITY;
for (let p = 0; p < PASSES; p++) {
  const start = performance.now();
  applyTransforms([{ name: "html_to_text", args: {} }], big);
  bestBig = Math.min(bestBig, performance.now() - start);
}
console.log(`  html_to_text on 1 MB of HTML: ${bestBig.toFixed(1)} ms`);

// A 10 MB raw body: base64 for storage, and back to bytes for each attempt.
const raw = new Uint8Array(10 * 1024 * 1024).map((_, i) => (i * 31) & 0xff);
let bestRaw = Number.POSITIVE_INFINITY;
for (let p = 0; p < PASSES; p++) {
  const start = performance.now();
  const stored = Buffer.from(raw).toString("base64");
  const back = Buffer.from(stored, "base64");
  if (back.byteLength !== raw.byteLength) throw new Error("round trip lost bytes");
  bestRaw = Math.min(bestRaw, performance.now() - start);
}
console.log(`  raw body base64 round trip of 10 MB: ${bestRaw.toFixed(1)} ms`);
