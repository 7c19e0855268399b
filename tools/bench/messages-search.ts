/**
 * Message search benchmark: `GET /v1/messages?q=` over a project holding `--messages` stored messages
 * (default 100,000) on Postgres (or PGlite with `--db pglite`).
 *
 * 1. Seeds the messages in SQL (bulk inserts; each has a subject, a sender and a text body of 60 words
 *    drawn from a 5,000-word vocabulary with a Zipf-like skew, so some words are in most messages
 *    and most words in few) and lists them in the search queue, as the intake does.
 * 2. Indexes them with the search indexer (services/resources/message-search-index.ts): the rate.
 * 3. Runs `--queries` searches through the API handler, one at a time, mixing rare, middling and
 *    common words, two-word queries, a phrase and a sender address; p50/p99 for each kind and all.
 * 4. Queues `--tail` more messages without indexing them (a burst the indexer has not caught up
 *    with yet) and runs the same searches again: what a search costs while the index trails.
 *
 *   bun tools/bench/messages-search.ts [--messages 100000] [--queries 300] [--tail 2000] [--db postgres]
 */
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { drainSearchQueue } from "../../services/resources/message-search-index.ts";
import { createTestApp, type TestApp } from "../../test/support/app.ts";
import { runEndOfRun } from "../../test/support/run-end.ts";

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "100000" },
    queries: { type: "string", default: "300" },
    tail: { type: "string", default: "2000" },
    db: { type: "string", default: "postgres" },
  },
});
const N = Number(values.messages);
const QUERIES = Number(values.queries);
const TAIL = Number(values.tail);
const kind = values.db === "pglite" ? "pglite" : "postgres";

/** The vocabulary's k-th word (k from 1): pronounceable, distinct, never a stop word. */
function word(k: number): string {
  const c = "bdfgklmnprstvz";
  const v = "aeiou";
  let s = "";
  let x = k;
  do {
    s += (c[x % c.length] as string) + (v[Math.floor(x / c.length) % v.length] as string);
    x = Math.floor(x / (c.length * v.length));
  } while (x > 0);
  return `${s}x`;
}
const VOCAB = 5000;

/**
 * Inserts messages `from`..`to` (1-based) of the project in SQL, and queues them for the indexer.
 * Word k of the vocabulary is drawn with a probability falling like 1/k (exp of a uniform log).
 */
async function seed(app: TestApp, projectId: string, from: number, to: number): Promise<void> {
  const words = Array.from({ length: VOCAB }, (_, i) => word(i + 1));
  const db = app.ctx.database;
  const step = 5000;
  for (let lo = from; lo <= to; lo += step) {
    const hi = Math.min(to, lo + step - 1);
    await db.rows(sql`
      with v as (select ${`{${words.join(",")}}`}::text[] as w),
      g as (
        select i,
          (select string_agg(v.w[1 + least(${VOCAB - 1}, floor(exp(random() * ln(${VOCAB})))::int - 1 + 0 * j)], ' ')
             from generate_series(1, 60) j where j > 0 * i) as body, -- (correlated: drawn per message)
          (select string_agg(v.w[1 + least(${VOCAB - 1}, floor(exp(random() * ln(${VOCAB})))::int - 1 + 0 * j)], ' ')
             from generate_series(1, 4) j where j > 0 * i) as subj
        from generate_series(${lo}::int, ${hi}::int) i, v
      ), ins as (
        insert into messages (id, project_id, message_id, raw_sha256, raw_bytes, raw_size_bytes, stored_bytes,
          source_type, envelope, parsed, received_at)
        select 'msg_bench' || lpad(i::text, 8, '0'), ${projectId}, '<bench-' || i || '@example.com>',
          md5(i::text), convert_to('raw', 'UTF8'), 2048, 2048, 'api', null,
          jsonb_build_object(
            'subject', subj,
            'from', jsonb_build_array(jsonb_build_object('email', 'sender' || (i % 997) || '@example.com',
              'name', 'Sender ' || (i % 997))),
            'to', jsonb_build_array(jsonb_build_object('email', 'inbox@example.net', 'name', '')),
            'cc', '[]'::jsonb, 'text', body, 'html', null, 'headers', '{}'::jsonb, 'attachments', '[]'::jsonb),
          now() - make_interval(secs => ${N + TAIL} - i)
        from g
        returning id
      )
      insert into message_search_queue (message_pk) select id from ins`);
  }
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number;
}

/** The query mix: each kind's queries, cycled through. */
function queries(): { kind: string; q: string }[] {
  const pick = (lo: number, hi: number, i: number) => word(lo + ((i * 7919) % (hi - lo + 1)));
  const out: { kind: string; q: string }[] = [];
  for (let i = 0; out.length < QUERIES; i++) {
    out.push({ kind: "rare word", q: pick(2000, 5000, i) });
    out.push({ kind: "middling word", q: pick(50, 500, i) });
    out.push({ kind: "common word", q: pick(1, 10, i) });
    out.push({ kind: "two words", q: `${pick(1, 30, i)} ${pick(100, 2000, i + 1)}` });
    out.push({ kind: "phrase", q: `"${pick(1, 5, i)} ${pick(1, 5, i + 2)}"` });
    out.push({ kind: "sender address", q: `sender${(i * 31) % 997}@example.com` });
  }
  return out.slice(0, QUERIES);
}

async function run(app: TestApp, apiKey: string, label: string): Promise<void> {
  const mix = queries();
  const byKind = new Map<string, number[]>();
  const all: number[] = [];
  let found = 0;
  // warm-up: plans, caches
  for (const { q } of mix.slice(0, 12))
    await app.request("GET", `/v1/messages?q=${encodeURIComponent(q)}`, { apiKey });
  for (const { kind: k, q } of mix) {
    const t = performance.now();
    const r = await app.request("GET", `/v1/messages?q=${encodeURIComponent(q)}`, { apiKey });
    const ms = performance.now() - t;
    if (r.status !== 200) throw new Error(`search ${q}: ${r.status} ${r.text}`);
    if ((r.body as { items: unknown[] }).items.length > 0) found++;
    all.push(ms);
    const list = byKind.get(k) ?? [];
    list.push(ms);
    byKind.set(k, list);
  }
  all.sort((a, b) => a - b);
  for (const [k, list] of byKind) {
    list.sort((a, b) => a - b);
    console.log(
      `  ${label} ${k}: p50 ${percentile(list, 0.5).toFixed(1)} ms, p99 ${percentile(list, 0.99).toFixed(1)} ms`,
    );
  }
  console.log(
    `${kind} search over ${N.toLocaleString("en-US")} messages${label === "indexed" ? "" : ` + ${TAIL.toLocaleString("en-US")} not yet indexed`}: p50 ${percentile(all, 0.5).toFixed(1)} ms, p99 ${percentile(all, 0.99).toFixed(1)} ms (${mix.length} queries, ${found} with results)`,
  );
}

const app = await createTestApp(kind);
try {
  const p = await app.newProject();
  let t = performance.now();
  await seed(app, p.id, 1, N);
  console.log(
    `  seeded ${N.toLocaleString("en-US")} messages in ${((performance.now() - t) / 1000).toFixed(1)} s`,
  );
  t = performance.now();
  const indexed = await drainSearchQueue(app.ctx.database);
  const s = (performance.now() - t) / 1000;
  console.log(
    `${kind} search indexer: ${indexed.toLocaleString("en-US")} messages in ${s.toFixed(1)} s, ${Math.round(indexed / s)} messages/s`,
  );
  await app.ctx.database.rows(sql`analyze`);
  await run(app, p.apiKey, "indexed");
  if (TAIL > 0) {
    await seed(app, p.id, N + 1, N + TAIL);
    await run(app, p.apiKey, "tail");
  }
} finally {
  await app.close();
  await runEndOfRun();
}
process.exit(0);
