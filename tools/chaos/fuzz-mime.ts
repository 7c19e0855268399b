/**
 * MIME fuzzing: corpus messages (`$MAILHOOK_CORPUS_DIR/emails`), mutated, into both
 * intakes — `POST /v1/messages` on the in-process API and the SMTP listener over a real socket — on a
 * fresh database. Mutations live in `mime-mutations.ts`; the seed makes a run repeatable.
 *
 *   bun tools/chaos/fuzz-mime.ts [--quick] [--messages 10000] [--seed N] [--db postgres|pglite] [--json]
 *
 * Invariants: never a 500 (nor a 503/451 "unavailable", which for a healthy database means an
 * exception in the pipeline), never a hang (per-message deadline), every rejection carries an
 * `ingest.*` code (HTTP) or a 5xx reply (SMTP), and every accepted message is stored.
 */
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { startSmtpServer } from "../../services/ingest/smtp.ts";
import { createTestApp, type TestApp } from "../../test/support/app.ts";
import { runEndOfRun } from "../../test/support/run-end.ts";
import { RawSmtp } from "../../test/support/smtp.ts";
import { loadCorpus, mutateMessage, prng } from "./mime-mutations.ts";

/** Options of {@link run}. */
export interface MimeFuzzOptions {
  messages: number;
  seed: number;
  db: "postgres" | "pglite";
  /** per-message deadline; an intake still busy after it is a hang */
  deadlineMs?: number;
  /** corpus files larger than this are skipped (default 600 KB) to keep a run's time bounded */
  maxSourceBytes?: number;
  log?: (line: string) => void;
}

/** One broken invariant with the input that broke it. */
export interface MimeFuzzFailure {
  kind: "status_500" | "unavailable" | "hang" | "bad_rejection" | "not_stored" | "threw";
  intake: "http" | "smtp";
  index: number;
  mutations: string[];
  detail: string;
  raw: Uint8Array;
}

/** What {@link run} found. */
export interface MimeFuzzResult {
  seed: number;
  messages: number;
  accepted: number;
  rejected: Record<string, number>;
  byIntake: { http: number; smtp: number };
  durationMs: number;
  failures: MimeFuzzFailure[];
}

type Outcome =
  | { ok: true; stored: "ok" | "missing" }
  | { ok: false; code: string; bad: MimeFuzzFailure["kind"] | null };

async function stored(app: TestApp, where: ReturnType<typeof sql>): Promise<"ok" | "missing"> {
  const rows = await app.ctx.database.rows<{ n: number }>(
    sql`select count(*)::int as n from messages where ${where}`,
  );
  return Number(rows[0]?.n ?? 0) > 0 ? "ok" : "missing";
}

async function viaHttp(app: TestApp, apiKey: string, projectId: string, raw: Uint8Array): Promise<Outcome> {
  const res = await app.api.handle(
    new Request("http://localhost/v1/messages", {
      method: "POST",
      headers: { "x-api-key": apiKey, "content-type": "message/rfc822" },
      body: raw as Uint8Array<ArrayBuffer>,
    }),
  );
  const text = await res.text();
  if (res.status === 202) {
    const id = (JSON.parse(text) as { message_id: string }).message_id;
    return { ok: true, stored: await stored(app, sql`project_id = ${projectId} and message_id = ${id}`) };
  }
  let code = `http_${res.status}`;
  try {
    code = (JSON.parse(text) as { error: { code: string } }).error.code;
  } catch {}
  const bad =
    res.status >= 500 && code !== "ingest.unavailable" && code !== "ingest.quota_exceeded"
      ? "status_500"
      : code === "ingest.unavailable"
        ? "unavailable"
        : code.startsWith("ingest.")
          ? null
          : "bad_rejection";
  return { ok: false, code, bad };
}

/** One SMTP session per call keeps a broken session from hiding later results. */
async function viaSmtp(app: TestApp, port: number, rcpt: string, raw: Uint8Array): Promise<Outcome> {
  const client = await RawSmtp.connect(port);
  try {
    const [r] = await client.envelope("fuzz@example.net", [rcpt]);
    if (r?.code !== 250) return { ok: false, code: `smtp_rcpt_${r?.code}`, bad: "bad_rejection" };
    const reply = await client.data(raw);
    if (reply.code === 250) {
      const pk = reply.raw.match(/accepted as (\S+)/)?.[1] ?? "";
      return { ok: true, stored: await stored(app, sql`id = ${pk}`) };
    }
    const code = `smtp_${reply.code}`;
    if (reply.code === 451 || reply.code === 452) return { ok: false, code, bad: "unavailable" };
    return { ok: false, code, bad: reply.code === 552 || reply.code === 554 ? null : "bad_rejection" };
  } finally {
    client.destroy();
  }
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T | "hang"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<"hang">((resolve) => {
    timer = setTimeout(() => resolve("hang"), ms);
  });
  return Promise.race([p, hang]).finally(() => clearTimeout(timer));
}

/** Runs the fuzzer; problems are returned in `failures`, never thrown. */
export async function run(options: MimeFuzzOptions): Promise<MimeFuzzResult> {
  const log = options.log ?? (() => {});
  const deadline = options.deadlineMs ?? 30_000;
  const started = performance.now();
  const corpus = loadCorpus(options.maxSourceBytes ?? 600_000);
  const rand = prng(options.seed);
  const app = await createTestApp(options.db);
  const smtp = await startSmtpServer(app.ctx, { host: "127.0.0.1", port: 0 });
  const result: MimeFuzzResult = {
    seed: options.seed,
    messages: 0,
    accepted: 0,
    rejected: {},
    byIntake: { http: 0, smtp: 0 },
    durationMs: 0,
    failures: [],
  };
  try {
    const project = await app.newProject("fuzz-mime");
    const ep = await app.request("POST", "/v1/endpoints", {
      apiKey: project.apiKey,
      body: { url: "http://127.0.0.1:9/hook" },
    });
    const ss = await app.request("POST", "/v1/signing-secrets", { apiKey: project.apiKey });
    for (const rule of [{}, { subject_regex: "(a|b)+c", attachments_mime: ["image/*", "application/pdf"] }]) {
      await app.request("POST", "/v1/routes", {
        apiKey: project.apiKey,
        body: { name: "fuzz", endpoint_id: ep.body.id, signing_secret_kid: ss.body.kid, rule },
      });
    }
    log(
      `fuzz-mime: seed=${options.seed} corpus=${corpus.length} messages=${options.messages} db=${options.db}`,
    );
    for (let i = 0; i < options.messages; i++) {
      const { raw, mutations } = mutateMessage(corpus, rand);
      const intake = i % 2 === 0 ? "http" : "smtp";
      result.messages++;
      result.byIntake[intake]++;
      let failure: Omit<MimeFuzzFailure, "intake" | "index" | "mutations" | "raw"> | null = null;
      try {
        const out = await withDeadline(
          intake === "http"
            ? viaHttp(app, project.apiKey, project.id, raw)
            : viaSmtp(app, smtp.port, project.inbound, raw),
          deadline,
        );
        if (out === "hang") failure = { kind: "hang", detail: `no answer in ${deadline} ms` };
        else if (out.ok) {
          result.accepted++;
          if (out.stored === "missing")
            failure = { kind: "not_stored", detail: "accepted but no message row" };
        } else {
          result.rejected[out.code] = (result.rejected[out.code] ?? 0) + 1;
          if (out.bad) failure = { kind: out.bad, detail: out.code };
        }
      } catch (err) {
        failure = { kind: "threw", detail: String(err) };
      }
      if (failure) {
        result.failures.push({ ...failure, intake, index: i, mutations, raw });
        log(`FAIL #${i} ${intake} ${failure.kind} ${failure.detail} [${mutations.join(", ")}]`);
      }
      if ((i + 1) % 500 === 0) log(`  ${i + 1} messages, ${result.failures.length} failures`);
    }
    return result;
  } finally {
    await smtp.close();
    await app.close();
    result.durationMs = Math.round(performance.now() - started);
    log(
      `fuzz-mime: ${result.messages} messages in ${result.durationMs} ms, ${result.failures.length} failures`,
    );
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      messages: { type: "string" },
      seed: { type: "string" },
      db: { type: "string", default: "postgres" },
      json: { type: "boolean", default: false },
      "save-failures": { type: "string" },
    },
  });
  const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  const messages = Number(values.messages ?? (values.quick ? 300 : 10_000));
  const log = values.json ? () => {} : (l: string) => console.log(l);
  const result = await run({ messages, seed, db: values.db === "pglite" ? "pglite" : "postgres", log });
  if (values["save-failures"]) {
    for (const f of result.failures)
      await Bun.write(`${values["save-failures"]}/mime-${seed}-${f.index}.eml`, f.raw);
  }
  const summary = { ...result, failures: result.failures.map(({ raw: _r, ...f }) => f) };
  console.log(
    values.json
      ? JSON.stringify(summary)
      : `RESULT ${JSON.stringify({ ...summary, failures: summary.failures.length })}`,
  );
  await runEndOfRun(); // drops the Postgres template the test support created
  process.exit(result.failures.length > 0 ? 1 : 0);
}
