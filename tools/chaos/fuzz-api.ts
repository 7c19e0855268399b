/**
 * API fuzzing: random JSON into every operation of `/v1/openapi.json` — path params,
 * query and body — with a valid API key, a wrong one and none, against the in-process API on a fresh
 * database. Bodies are JSON *text* built by fast-check arbitraries (so `__proto__` stays an own key and
 * `1e309`, `-0`, duplicate keys and deep nesting reach the parser as sent), guided by each operation's
 * schema and by valid examples (rules, pipelines, mapper configs) whose leaves are then mutated.
 *
 *   bun tools/chaos/fuzz-api.ts [--quick] [--requests 20000] [--seed N] [--db postgres|pglite] [--json]
 *
 * Invariants (docs/api.md): never a 500, never a hang (per-request deadline), and every `/v1` error
 * body is `{error: {code, message, details?}}` with a code from `ERROR_STATUS` and its status.
 */
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import fc from "fast-check";
import { ERROR_STATUS } from "../../services/lib/errors.ts";
import { createTestApp } from "../../test/support/app.ts";
import { buildMail } from "../../test/support/raw-mail.ts";
import { runEndOfRun } from "../../test/support/run-end.ts";
import { arbForRequest, type FuzzRequest, operations } from "./fuzz-api-requests.ts";

/** Options of {@link run}. */
export interface ApiFuzzOptions {
  requests: number;
  seed: number;
  db: "postgres" | "pglite";
  /** per-request deadline; a request still open after it is a hang */
  deadlineMs?: number;
  log?: (line: string) => void;
}

/** One broken invariant with the request that broke it. */
export interface ApiFuzzFailure {
  kind: "status_500" | "hang" | "threw" | "bad_error_shape" | "status_mismatch";
  method: string;
  url: string;
  contentType: string | null;
  body: string | null;
  status: number;
  response: string;
}

/** What {@link run} found. */
export interface ApiFuzzResult {
  seed: number;
  requests: number;
  operations: number;
  durationMs: number;
  byStatus: Record<string, number>;
  failures: ApiFuzzFailure[];
}

function checkResponse(req: FuzzRequest, status: number, text: string): ApiFuzzFailure["kind"] | null {
  // 503 ingest.unavailable on a healthy database means an exception inside the pipeline: a bug too.
  if (status >= 500 && status !== 507) return "status_500";
  if (status < 400 || !req.url.startsWith("/v1/")) return null;
  let body: { error?: { code?: unknown; message?: unknown; details?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    return "bad_error_shape";
  }
  const e = body?.error;
  if (!e || typeof e.code !== "string" || typeof e.message !== "string") return "bad_error_shape";
  if (e.details !== undefined && !Array.isArray(e.details)) return "bad_error_shape";
  if (!(e.code in ERROR_STATUS)) return "bad_error_shape";
  const expected = ERROR_STATUS[e.code as keyof typeof ERROR_STATUS];
  if (expected !== status && !(e.code === "request.invalid" && status === 400)) return "status_mismatch";
  return null;
}

/** Creates one of each resource so path params can name real ones. */
async function seedResources(app: Awaited<ReturnType<typeof createTestApp>>, apiKey: string) {
  const req = (m: string, p: string, body?: unknown) =>
    app.request(m, p, { apiKey, ...(body ? { body } : {}) });
  const ep = await req("POST", "/v1/endpoints", { url: "http://127.0.0.1:9/hook" });
  const ss = await req("POST", "/v1/signing-secrets");
  const rt = await req("POST", "/v1/routes", {
    name: "all",
    endpoint_id: ep.body.id,
    signing_secret_kid: ss.body.kid,
  });
  const key2 = await req("POST", "/v1/project/api-keys", { name: "victim" });
  const raw = buildMail({
    attachments: [{ filename: "a.txt", contentType: "text/plain", content: "hello" }],
  });
  const msg = await app.request("POST", "/v1/messages", {
    apiKey,
    rawBody: raw,
    headers: { "content-type": "message/rfc822" },
  });
  // Clients learn attachment ids from webhook bodies; the fuzzer reads the stored one.
  const atts = await app.ctx.database.rows<{ attachment_id: string }>(
    sql`select attachment_id from attachments`,
  );
  const attId = atts[0]?.attachment_id ?? "att_x";
  const messageId = encodeURIComponent(msg.body.message_id ?? "x");
  const url = await req("GET", `/v1/messages/${messageId}/attachments/${attId}/url?multi_use=true`);
  const token =
    String(url.body?.url ?? "x")
      .split("/")
      .pop() ?? "x";
  const ids = [ep.body.id, rt.body.id, key2.body.id, msg.body.events?.[0]?.id].filter(Boolean);
  return {
    id: ids.map(String),
    kid: [String(ss.body.kid)],
    message_id: [messageId],
    attachment_id: [attId],
    token: [token],
    name: ["generic@1", "custom_json_mapper@1", "custom_json_output@1", "app.css"],
  };
}

/** Runs the fuzzer; never throws for a found problem (they are in `failures`). */
export async function run(options: ApiFuzzOptions): Promise<ApiFuzzResult> {
  const log = options.log ?? (() => {});
  const deadline = options.deadlineMs ?? 15_000;
  const started = performance.now();
  const app = await createTestApp(options.db);
  const byStatus: Record<string, number> = {};
  const failures: ApiFuzzFailure[] = [];
  let sent = 0;
  try {
    const project = await app.newProject("fuzz");
    const real = await seedResources(app, project.apiKey);
    const doc = (await app.request("GET", "/v1/openapi.json")).body;
    const ops = operations(doc);
    const perOp = Math.max(1, Math.ceil(options.requests / ops.length));
    log(`fuzz-api: seed=${options.seed} operations=${ops.length} requests/op=${perOp} db=${options.db}`);
    for (const [n, op] of ops.entries()) {
      const reqs = fc.sample(arbForRequest(op, real, project.apiKey), {
        seed: options.seed + n,
        numRuns: perOp,
      });
      for (const req of reqs) {
        sent++;
        let status = 0;
        let text = "";
        let kind: ApiFuzzFailure["kind"] | null;
        let timer: ReturnType<typeof setTimeout> | undefined;
        try {
          const hang = new Promise<"hang">((resolve) => {
            timer = setTimeout(() => resolve("hang"), deadline);
          });
          const res = await Promise.race([
            app.api.handle(
              new Request(`http://localhost${req.url}`, {
                method: req.method,
                headers: req.headers,
                ...(req.body !== null && req.method !== "GET" ? { body: req.body } : {}),
              }),
            ),
            hang,
          ]);
          if (res === "hang") kind = "hang";
          else {
            status = res.status;
            text = await res.text();
            kind = checkResponse(req, status, text);
          }
        } catch (err) {
          kind = "threw";
          text = String(err);
        } finally {
          clearTimeout(timer);
        }
        byStatus[status] = (byStatus[status] ?? 0) + 1;
        if (kind) {
          const body = req.body === null ? null : req.body.slice(0, 2_000_000);
          const f = {
            kind,
            method: req.method,
            url: req.url.slice(0, 2000),
            body,
            status,
            response: text.slice(0, 500),
          };
          failures.push({ ...f, contentType: req.headers["content-type"] ?? null });
          log(`FAIL ${kind} ${req.method} ${f.url.slice(0, 200)} → ${status} ${f.response.slice(0, 200)}`);
        }
      }
    }
    const durationMs = Math.round(performance.now() - started);
    return { seed: options.seed, requests: sent, operations: ops.length, durationMs, byStatus, failures };
  } finally {
    await app.close();
    const ms = Math.round(performance.now() - started);
    log(`fuzz-api: ${sent} requests in ${ms} ms, ${failures.length} failures`);
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean", default: false },
      requests: { type: "string" },
      seed: { type: "string" },
      db: { type: "string", default: "postgres" },
      json: { type: "boolean", default: false },
    },
  });
  const seed = values.seed ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  const requests = Number(values.requests ?? (values.quick ? 500 : 20_000));
  const t0 = performance.now();
  const log = values.json ? () => {} : (l: string) => console.log(l);
  const result = await run({ requests, seed, db: values.db === "pglite" ? "pglite" : "postgres", log });
  result.durationMs = Math.round(performance.now() - t0);
  if (values.json) console.log(JSON.stringify(result));
  else console.log(`RESULT ${JSON.stringify({ ...result, failures: result.failures.length })}`);
  await runEndOfRun(); // drops the Postgres template the test support created
  process.exit(result.failures.length > 0 ? 1 : 0);
}
