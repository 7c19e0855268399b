/**
 * Request generation for the API fuzzer: the operations of an OpenAPI document, and per operation a
 * fast-check arbitrary of requests (path params from real ids, hostile strings or raw percent-escapes;
 * query values; a body shaped by the operation's schema or by valid examples, mutated; the auth header
 * valid, wrong or missing; varied content types).
 */
import fc from "fast-check";
import { TEST_SETUP_TOKEN } from "../../test/support/app.ts";
import { hostileJson, hostileString, likeExample } from "./fuzz-json.ts";

/** One operation of the OpenAPI document. */
export interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; schema: Record<string, unknown> }[];
  body: Record<string, unknown> | null;
  admin: boolean;
}

/** One generated request (path + query in `url`, relative to the API root). */
export interface FuzzRequest {
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

/** Every operation in an OpenAPI document. */
export function operations(doc: {
  paths: Record<string, Record<string, Record<string, unknown>>>;
}): Operation[] {
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

/** Requests for one operation; `real` maps path-param names to ids of existing resources. */
export function arbForRequest(
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
        {
          arbitrary: hostileString.map((s) => encodeURIComponent(s.replace(/[\ud800-\udfff]/g, "\ufffd"))),
          weight: 2,
        },
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
