/**
 * The OpenAPI 3.1 document served at `/v1/openapi.json`: generated from the operations' TypeBox schemas
 * by `@elysiajs/openapi`, then made into a document the standard tools accept (`@redocly/cli lint`
 * with its recommended rules and `@apidevtools/swagger-parser`, both run by the test suite):
 *
 * - shared shapes live once in `components.schemas`: a schema declared with
 *   `$id: "#/components/schemas/<Name>"` (see `named` in schemas.ts) is moved there and referenced;
 * - integers are integers (Elysia widens every integer to `string | integer` for its query coercion);
 * - OpenAPI 3.0's `nullable` becomes a JSON Schema `null` type; a 204 has no content;
 * - every operation states its security (`[]` for the public ones) and a readable camelCase
 *   operationId derived from its method and path (`listEvents`, `replayEvent`; OPERATION_IDS overrides);
 * - `webhooks` describes what the service POSTs to endpoints (WEBHOOKS).
 *
 * Adding an operation needs nothing here unless its derived name reads badly: then add it to
 * OPERATION_IDS. A new delivered body is one entry in WEBHOOKS.
 */
import { toOpenAPISchema } from "@elysiajs/openapi";
import type { AnyElysia } from "elysia";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** What the document says besides its operations. */
export interface DocumentBase {
  info: JsonObject;
  servers: JsonObject[];
  securitySchemes: JsonObject;
  tags?: JsonObject[];
  /** what the service POSTs to endpoints: name → request body schema and a description */
  webhooks?: WebhookDoc[];
  /** schemas declared with a `#/components/schemas/…` `$id` to publish even where no operation names them */
  schemas?: JsonObject[];
  /** request/response examples by operationId */
  examples?: Record<string, OperationExamples>;
}

/** One delivered body, described under the document's `webhooks`. */
export interface WebhookDoc {
  name: string;
  summary: string;
  description: string;
  contentType: string;
  schema: JsonObject;
}

export interface OperationExamples {
  request?: Json;
  /** status → example body */
  responses?: Record<string, Json>;
}

/** Operation ids that the derivation would name badly, by `METHOD path`. */
const OPERATION_IDS: Record<string, string> = {
  "POST /v1/admin/projects": "createProject",
  "GET /v1/admin/projects": "listProjects",
  "POST /v1/messages": "uploadMessage",
  "POST /v1/mapper/validate": "validateMapperConfig",
  "POST /v1/mapper/preview": "previewMapper",
  "GET /v1/attachments/{token}": "downloadAttachment",
  "GET /v1/messages/{message_id}/attachments/{attachment_id}/url": "createAttachmentUrl",
  "GET /v1/schemas/transform/{name}": "getTransformSchema",
  "POST /v1/events/replay": "bulkReplayEvents",
  "GET /v1/messages/{message_id}/raw": "getMessageRaw",
};

const PASCAL_WORDS: Record<string, string> = { api: "Api" };

function pascal(segment: string): string {
  return segment
    .split(/[-_]/)
    .filter(Boolean)
    .map((w) => PASCAL_WORDS[w] ?? w.charAt(0).toUpperCase() + w.slice(1))
    .join("");
}

/** "signing-secrets" → "SigningSecret", "mailboxes" → "Mailbox", "addresses" → "Address". */
function singular(segment: string): string {
  const word = pascal(segment);
  if (/(ss|x|sh|ch)es$/.test(word)) return word.slice(0, -2);
  if (word.endsWith("ies")) return `${word.slice(0, -3)}y`;
  if (word.endsWith("s") && !word.endsWith("ss")) return word.slice(0, -1);
  return word;
}

const isParam = (s: string) => s.startsWith("{");

/** "replay" → "replay", "send-test" → "sendTest". */
function camel(segment: string): string {
  const p = pascal(segment);
  return p.charAt(0).toLowerCase() + p.slice(1);
}

/**
 * A camelCase operationId from the method and the path: `GET /v1/events` → `listEvents`,
 * `GET /v1/events/{event_id}` → `getEvent`, `POST /v1/events/{event_id}/replay` → `replayEvent`,
 * `GET /v1/events/{event_id}/attempts` → `listEventAttempts`, `GET /v1/project` → `getProject`,
 * `DELETE /v1/project/api-keys/{id}` → `deleteApiKey`. A named segment counts as a resource (and is
 * made singular) only when an id follows it.
 */
export function operationIdOf(method: string, path: string): string {
  const fixed = OPERATION_IDS[`${method.toUpperCase()} ${path}`];
  if (fixed) return fixed;
  const segments = path
    .replace(/^\/v1\//, "")
    .split("/")
    .filter(Boolean);
  const m = method.toLowerCase();
  const n = segments.length;
  const last = segments[n - 1] ?? "";
  /** the singular names of the resources (segments followed by an id) among the first `upTo` segments */
  const owners = (upTo: number) =>
    segments
      .slice(0, upTo)
      .filter((s, i) => !isParam(s) && isParam(segments[i + 1] ?? ""))
      .map(singular)
      .join("");
  if (n >= 2 && !isParam(last) && isParam(segments[n - 2] ?? "")) {
    // an action or a sub-resource of one item: POST …/{id}/replay, GET …/{id}/attempts
    const owner = owners(n - 1);
    if (m === "post") return `${camel(last)}${owner}`;
    if (m === "get") return last.endsWith("s") ? `list${owner}${pascal(last)}` : `get${owner}${pascal(last)}`;
    return `${m}${owner}${pascal(last)}`;
  }
  if (isParam(last)) {
    const one = owners(n);
    const verb = { get: "get", patch: "update", put: "replace", delete: "delete", post: "create" }[m] ?? m;
    return `${verb}${one}`;
  }
  const owner = owners(n - 1);
  switch (m) {
    case "get":
      return last.endsWith("s") ? `list${owner}${pascal(last)}` : `get${owner}${pascal(last)}`;
    case "post":
      return `create${owner}${singular(last)}`;
    case "patch":
    case "put":
      return `update${owner}${singular(last)}`;
    case "delete":
      return `delete${owner}${singular(last)}`;
    default:
      return `${m}${owner}${pascal(last)}`;
  }
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** `string | integer` (Elysia's coercion form) → the integer variant with the outer bounds. */
function integerOfCoercion(schema: JsonObject): JsonObject | null {
  const anyOf = schema.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return null;
  const str = anyOf.find((o) => isObject(o) && o.type === "string" && o.format === "integer");
  const int = anyOf.find((o) => isObject(o) && (o.type === "integer" || o.type === "number"));
  if (!str || !isObject(int)) return null;
  const out: JsonObject = { ...schema, ...int };
  delete out.anyOf;
  return out;
}

const isNullType = (o: Json) => isObject(o) && o.type === "null" && Object.keys(o).length === 1;

/**
 * One spelling for two common shapes, whichever way TypeBox or Elysia wrote them, so equal shapes are
 * recognised as equal: a choice of string constants is `{type: "string", enum}`, and "a simple type
 * or null" is `{type: [t, "null"], …}`.
 */
function simplifyAnyOf(out: JsonObject): void {
  const anyOf = out.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length === 0) return;
  if (
    anyOf.every(
      (o) =>
        isObject(o) &&
        typeof o.const === "string" &&
        Object.keys(o).every((k) => k === "const" || k === "type"),
    )
  ) {
    delete out.anyOf;
    out.type = "string";
    out.enum = anyOf.map((o) => (o as JsonObject).const as string);
    return;
  }
  const others = anyOf.filter((o) => !isNullType(o));
  if (others.length === 1 && others.length < anyOf.length) {
    const only = others[0] as JsonObject;
    if (isObject(only) && typeof only.type === "string" && !("$ref" in only) && !("$id" in only)) {
      delete out.anyOf;
      Object.assign(out, only, { type: [only.type, "null"] });
    }
  }
}

/** Rewrites one schema tree into plain JSON Schema 2020-12, hoisting named shapes into `named`. */
function normaliseSchema(node: Json, named: Map<string, JsonObject>): Json {
  if (Array.isArray(node)) return node.map((n) => normaliseSchema(n, named));
  if (!isObject(node)) return node;
  let schema: JsonObject = node;
  const integer = integerOfCoercion(schema);
  if (integer) schema = integer;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(schema)) out[k] = normaliseSchema(v, named);
  if (out.nullable === true) {
    delete out.nullable;
    if (typeof out.type === "string") out.type = [out.type, "null"];
    else if (Array.isArray(out.anyOf) && !out.anyOf.some(isNullType))
      out.anyOf = [...out.anyOf, { type: "null" }];
  } else if (out.nullable === false) {
    delete out.nullable;
  }
  simplifyAnyOf(out);
  const id = out.$id;
  if (typeof id === "string" && id.startsWith("#/components/schemas/")) {
    const name = id.slice("#/components/schemas/".length);
    delete out.$id;
    if (!named.has(name)) named.set(name, out);
    return { $ref: id };
  }
  return out;
}

/** Rewrites the schemas found under an operation (parameters, bodies, responses). */
function normaliseOperation(op: JsonObject, named: Map<string, JsonObject>): void {
  for (const p of Array.isArray(op.parameters) ? op.parameters : []) {
    if (isObject(p) && isObject(p.schema)) p.schema = normaliseSchema(p.schema, named);
  }
  const bodies: JsonObject[] = [];
  if (isObject(op.requestBody) && isObject(op.requestBody.content)) bodies.push(op.requestBody.content);
  if (isObject(op.responses)) {
    for (const [status, response] of Object.entries(op.responses)) {
      if (!isObject(response)) continue;
      // a 204 has no content (Elysia writes `content: {type: "void"}`, which is not a media type map)
      if (status === "204" || (isObject(response.content) && typeof response.content.type === "string")) {
        delete response.content;
        continue;
      }
      if (isObject(response.content)) bodies.push(response.content);
    }
  }
  for (const content of bodies) {
    for (const media of Object.values(content)) {
      if (isObject(media) && isObject(media.schema)) media.schema = normaliseSchema(media.schema, named);
    }
  }
}

function webhookItems(hooks: WebhookDoc[], named: Map<string, JsonObject>): JsonObject {
  const out: JsonObject = {};
  for (const hook of hooks) {
    out[hook.name] = {
      post: {
        operationId: `deliver${pascal(hook.name.replace(/[@.]/g, "-"))}`,
        summary: hook.summary,
        description: hook.description,
        security: [],
        parameters: [
          { name: "X-Service-Signature", in: "header", required: true, schema: { type: "string" } },
          { name: "X-Idempotency-Key", in: "header", required: true, schema: { type: "string" } },
          { name: "webhook-id", in: "header", required: true, schema: { type: "string" } },
          { name: "webhook-timestamp", in: "header", required: true, schema: { type: "string" } },
          { name: "webhook-signature", in: "header", required: true, schema: { type: "string" } },
        ],
        requestBody: {
          required: true,
          content: { [hook.contentType]: { schema: normaliseSchema(hook.schema, named) } },
        },
        responses: {
          "200": { description: "accepted: any 2xx marks the event delivered" },
          "503": { description: "try again later: 408, 409, 425, 429 and 5xx are retried" },
        },
      },
    };
  }
  return out;
}

/** Builds the document from the API's routes (only `/v1/` operations; hidden routes excluded). */
export function buildOpenApiDocument(app: AnyElysia, base: DocumentBase): JsonObject {
  const generated = toOpenAPISchema(
    app,
    { paths: [/^\/ui(\/|$)/] },
    undefined,
    undefined,
    "3.1.0",
  ) as unknown as {
    paths: Record<string, Record<string, JsonObject>>;
  };
  const named = new Map<string, JsonObject>();
  const paths: JsonObject = {};
  const seenIds = new Map<string, string>();
  for (const [path, item] of Object.entries(generated.paths)) {
    if (!path.startsWith("/v1/")) continue;
    const outItem: JsonObject = {};
    for (const [method, op] of Object.entries(item)) {
      if (!isObject(op)) continue;
      normaliseOperation(op, named);
      const id = operationIdOf(method, path);
      const clash = seenIds.get(id);
      if (clash)
        throw new Error(`operationId ${id} of ${method} ${path} is also ${clash}: add one to OPERATION_IDS`);
      seenIds.set(id, `${method} ${path}`);
      op.operationId = id;
      if (!Array.isArray(op.security)) op.security = [];
      const examples = base.examples?.[id];
      if (examples) addExamples(op, examples);
      outItem[method] = op;
    }
    paths[path] = outItem;
  }
  const webhooks = webhookItems(base.webhooks ?? [], named);
  for (const schema of base.schemas ?? []) normaliseSchema(schema, named);
  // A named shape also appears inside others (an event inside a page of events): refer to it there too.
  const byShape = new Map<string, string>();
  for (const [name, schema] of named) byShape.set(canonical(schema), name);
  const share = (node: Json, self: string | null): Json => {
    if (Array.isArray(node)) return node.map((n) => share(n, null));
    if (!isObject(node)) return node;
    const name = byShape.get(canonical(node));
    if (name && name !== self) return { $ref: `#/components/schemas/${name}` };
    const out: JsonObject = {};
    for (const [k, v] of Object.entries(node)) out[k] = share(v, null);
    return out;
  };
  const schemas: JsonObject = {};
  for (const name of [...named.keys()].sort()) schemas[name] = share(named.get(name) as JsonObject, name);
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item as JsonObject)) {
      if (isObject(op))
        for (const k of ["parameters", "requestBody", "responses"])
          if (k in op) op[k] = share(op[k] as Json, null);
    }
  }
  const doc: JsonObject = {
    openapi: "3.1.0",
    info: base.info,
    servers: base.servers,
    ...(base.tags ? { tags: base.tags } : {}),
    paths,
    webhooks,
    components: { securitySchemes: base.securitySchemes, schemas },
  };
  return doc;
}

/** A key for structural equality: JSON with object keys sorted. */
function canonical(node: Json): string {
  if (Array.isArray(node)) return `[${node.map(canonical).join(",")}]`;
  if (!isObject(node)) return JSON.stringify(node);
  return `{${Object.keys(node)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(node[k] as Json)}`)
    .join(",")}}`;
}

function addExamples(op: JsonObject, examples: OperationExamples): void {
  if (examples.request !== undefined && isObject(op.requestBody) && isObject(op.requestBody.content)) {
    const media = op.requestBody.content["application/json"];
    if (isObject(media)) media.example = examples.request;
  }
  for (const [status, body] of Object.entries(examples.responses ?? {})) {
    const response = isObject(op.responses) ? op.responses[status] : undefined;
    if (!isObject(response) || !isObject(response.content)) continue;
    const media = response.content["application/json"];
    if (isObject(media)) media.example = body;
  }
}
