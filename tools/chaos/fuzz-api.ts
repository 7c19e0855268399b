/**
 * API fuzzing (issue 8 point 4): random JSON into every operation of `/v1/openapi.json` — path params,
 * query and body — with a valid API key, a wrong one and none, against the in-process API on a fresh
 * database. Bodies are JSON *text* built by fast-check arbitraries (so `__proto__` stays an own key and
 * `1e309`, `-0`, duplicate keys and deep nesting reach the parser as sent), guided by each operation's
 * schema and by valid examples (rules, pipelines, mapper configs) whose leaves are then mutated.
 *
 *   bun tools/chaos/fuzz-api.ts [--quick] [--requests 20000] [--seed N] [--db postgres|pglite] [--json]
 *
 * Invariants (contract §2): never a 500, never a hang (per-request deadline), and every `/v1` error
 * body is `{error: {code, message, details?}}` with a code from `ERROR_STATUS` and its status.
 */
import { parseArgs } from "node:util";
import fc from "fast-check";
import { ERROR_STATUS } from "../../services/lib/errors.ts";
import { createTestApp, TEST_SETUP_TOKEN } from "../../test/support/app.ts";
import { buildMail } from "../../test/support/ingest.ts";
import { hostileJson, hostileString, likeExample } from "./fuzz-json.ts";

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

interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; schema: Record<string, unknown> }[];
  body: Record<string, unknown> | null;
  admin: boolean;
}

interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | null;
}

/** Valid examples per body property; the generator mutates their leaves. */
const EXAMPLES: Record<string, unknown[]> = {
  rule: [
    {},
    { subject_contains: ["invoice"], from_domains: ["example.com"] },
    { any: [{ subject_regex: "^re:" }, { negate: { to_emails: ["a@b.c"] } }], attachments_mime: ["image/*"] },
    { headers_equals: { "x-tag": "1" }, all: [{ none: [{ headers_contains: { x: "y" } }] }] },
  ],
  pipeline: [
    { steps: [{ name: "map.generic_json", args: {} }] },
    {
      steps: [
        {
          name: "map.custom_json",
          args: {
            config: {
              version: "v1",
              vars: [{ name: "s", expr: { var: "message.subject" } }],
              output: { s: { var: "vars.s" }, n: { "string.upper": [{ var: "message.text" }] } },
            },
          },
        },
      ],
    },
  ],
  config: [
    { version: "v1", output: { a: { var: "message.subject" } } },
    {
      version: "v1",
      vars: [{ name: "x", expr: { cat: ["a", { var: "meta.k" }] } }],
      output: { var: "vars.x" },
    },
    {
      version: "v1",
      output: { m: { map: { over: { var: "message.to" }, as: "p", do: { var: "p.email" } } } },
    },
  ],
  message: [{ subject: "s", from: [{ email: "a@b.c", name: "A" }], headers: { a: "b" }, attachments: [] }],
  meta: [{ k: "v" }],
  headers: [{ "x-a": "b" }, [{ name: "x-a", value: "b", secret: true }]],
};

function operations(doc: { paths: Record<string, Record<string, Record<string, unknown>>> }): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const content = (op.requestBody as { content?: Record<string, { schema?: Record<string, unknown> }> })
        ?.content;
      ops.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters as Operation["params"]) ?? [],
        body: content ? (content["application/json"]?.schema ?? {}) : null,
        admin: path.startsWith("/v1/admin"),
      });
    }
  }
  return ops;
}

/** JSON text for a schema node: mostly shaped like it, sometimes anything. */
function arbForSchema(schema: Record<string, unknown>, name: string, depth: number): fc.Arbitrary<string> {
  const examples = EXAMPLES[name];
  let shaped: fc.Arbitrary<string>;
  const props = schema.properties as Record<string, Record<string, unknown>> | undefined;
  if (examples) shaped = fc.oneof(...examples.map((e) => likeExample(e)));
  else if (Array.isArray(schema.enum)) shaped = fc.constantFrom(...schema.enum.map((v) => JSON.stringify(v)));
  else if (props && depth < 4) {
    const entries = Object.entries(props).map(([k, s]) =>
      fc.option(
        arbForSchema(s, k, depth + 1).map((v) => `${JSON.stringify(k)}:${v}`),
        { freq: 4 },
      ),
    );
    shaped = fc
      .tuple(fc.tuple(...entries), fc.array(fc.tuple(hostileString, hostileJson), { maxLength: 2 }))
      .map(([known, extra]) => {
        const parts = known.filter((p): p is string => p !== null);
        for (const [k, v] of extra) parts.push(`${JSON.stringify(k)}:${v}`);
        return `{${parts.join(",")}}`;
      });
  } else if (schema.type === "string") shaped = hostileString.map((s) => JSON.stringify(s));
  else if (schema.type === "integer" || schema.type === "number")
    shaped = fc.oneof(
      fc.integer({ min: -2, max: 3700 }).map(String),
      fc.constantFrom("60", "61", "0", "-0", "1e309", "1.5", "9007199254740993"),
    );
  else if (schema.type === "boolean") shaped = fc.constantFrom("true", "false");
  else shaped = hostileJson;
  return fc.oneof({ arbitrary: shaped, weight: 5 }, { arbitrary: hostileJson, weight: 1 });
}

const RAW_SEGMENTS = ["%", "%E0%A4%A", "%00", "..%2F..", "%C0%AE", "%2F", "a%20b", "%uD800", "%FF%FE"];

function arbForRequest(
  op: Operation,
  real: Record<string, string[]>,
  apiKey: string,
): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.params.filter((p) => p.in === "path");
  const queryParams = op.params.filter((p) => p.in === "query");
  const pathArb = fc.tuple(
    ...pathParams.map((p) =>
      fc.oneof(
        { arbitrary: fc.constantFrom(...(real[p.name] ?? ["x"])), weight: 3 },
        { arbitrary: hostileString.map((s) => encodeURIComponent(s.toWellFormed())), weight: 2 },
        { arbitrary: fc.constantFrom(...RAW_SEGMENTS), weight: 1 },
      ),
    ),
  );
  const queryArb = fc.tuple(
    ...queryParams.map((p) =>
      fc.option(
        fc.oneof(
          arbForSchema(p.schema, p.name, 9).map((t) => t.replace(/^"|"$/g, "")),
          hostileString,
        ),
        { freq: 2 },
      ),
    ),
    fc.option(fc.tuple(hostileString, hostileString), { freq: 4 }),
  );
  const authArb = fc.constantFrom<"valid" | "none" | "wrong">(
    "valid",
    "valid",
    "valid",
    "valid",
    "none",
    "wrong",
  );
  const bodyArb: fc.Arbitrary<string | null> = op.body
    ? fc.oneof(
        { arbitrary: arbForSchema(op.body, "", 0), weight: 8 },
        { arbitrary: hostileJson, weight: 2 },
        { arbitrary: fc.string({ maxLength: 30 }).map((s) => `{"a":${s}`), weight: 1 },
        { arbitrary: fc.constant(null), weight: 1 },
      )
    : fc.option(hostileJson, { freq: 6 });
  const typeArb = fc.constantFrom(
    "application/json",
    "application/json",
    "application/json",
    "application/json; charset=latin1",
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "message/rfc822",
    "",
  );
  return fc
    .record({ path: pathArb, query: queryArb, auth: authArb, body: bodyArb, type: typeArb })
    .map((r) => {
      let i = 0;
      let url = op.path.replace(/\{[^}]+\}/g, () => r.path[i++] ?? "x");
      const q = new URLSearchParams();
      queryParams.forEach((p, j) => {
        const v = r.query[j];
        if (typeof v === "string") q.append(p.name, v);
      });
      const extra = r.query[queryParams.length];
      if (Array.isArray(extra)) q.append(extra[0], extra[1]);
      if (q.size > 0) url += `?${q}`;
      const headers: Record<string, string> = {};
      const header = op.admin ? "x-setup-token" : "x-api-key";
      if (r.auth === "valid") headers[header] = op.admin ? TEST_SETUP_TOKEN : apiKey;
      if (r.auth === "wrong") headers[header] = "mh_wrong_\u00e9";
      if (r.body !== null && r.type) headers["content-type"] = r.type;
      return { method: op.method, url, headers, body: r.body };
    });
}

function checkResponse(req: FuzzRequest, status: number, text: string): ApiFuzzFailure["kind"] | null {
  if (status >= 500 && status !== 503 && status !== 507) return "status_500";
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
  const ev = await req("GET", `/v1/events/${msg.body.events?.[0]?.id}`);
  const attId: string = ev.body?.message?.attachments?.[0]?.id ?? "att_x";
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
  process.exit(result.failures.length > 0 ? 1 : 0);
}
