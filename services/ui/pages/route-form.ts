/**
 * The route editor form: name, endpoint, signing secret, enabled, the rule and pipeline as JSON
 * textareas, the route's own retry policy (a schedule of delays and a number of attempts; both empty:
 * the global `RETRY_SCHEDULE`) and `expect_mail_within` (empty: off). Validation errors from `createRoute`/`updateRoute` (`AppError.details`) are shown next to
 * the field their JSON-pointer path points into.
 */
import type { ErrorDetail } from "../../lib/errors.ts";
import { parseJsonText } from "../../lib/json-text.ts";
import type { EndpointView } from "../../resources/endpoints.ts";
import { pipelineMapperWarnings } from "../../resources/mapper-warnings.ts";
import type { RouteInput, RouteView } from "../../resources/routes.ts";
import type { SigningSecretView } from "../../resources/signing-secrets.ts";
import { DEFAULT_PIPELINE } from "../../routing/pipeline.ts";
import { HEADER_LEAF_KEYS, STRING_LEAF_KEYS } from "../../routing/rules.ts";
import { STEP_NAMES, STEPS } from "../../routing/steps/index.ts";
import { field } from "../guard.ts";
import { html, type SafeHtml, unsafeRaw } from "../html.ts";
import { csrfField, fieldErrors } from "../layout.ts";

/** The editable fields, as text (what the user typed is re-shown after an error). */
export interface RouteFormValues {
  name: string;
  endpoint_id: string;
  signing_secret_kid: string;
  enabled: boolean;
  rule: string;
  pipeline: string;
  /** the retry policy's delays, comma-separated (`10s, 1m, 1h`) */
  retry_schedule: string;
  /** the retry policy's `max_attempts`; empty with a schedule: one more than its delays */
  retry_max_attempts: string;
  expect_mail_within: string;
}

/** Field → its errors; `form` holds errors that belong to no single field. */
export type FormErrors = Partial<Record<keyof RouteFormValues | "form", ErrorDetail[]>>;

const FIELDS: (keyof RouteFormValues)[] = [
  "name",
  "endpoint_id",
  "signing_secret_kid",
  "enabled",
  "rule",
  "pipeline",
  "retry_schedule",
  "retry_max_attempts",
  "expect_mail_within",
];

/** Form values of a stored route, or of a new one. */
export function routeValues(route?: RouteView): RouteFormValues {
  return {
    name: route?.name ?? "",
    endpoint_id: route?.endpoint_id ?? "",
    signing_secret_kid: route?.signing_secret_kid ?? "",
    enabled: route?.enabled ?? true,
    rule: JSON.stringify(route?.rule ?? {}, null, 2),
    pipeline: JSON.stringify(route?.pipeline ?? DEFAULT_PIPELINE, null, 2),
    retry_schedule: route?.retry_policy?.schedule.join(", ") ?? "",
    retry_max_attempts: route?.retry_policy ? String(route.retry_policy.max_attempts) : "",
    expect_mail_within: route?.expect_mail_within ?? "",
  };
}

/** Form values from a posted body. */
export function postedValues(body: unknown): RouteFormValues {
  return {
    name: field(body, "name"),
    endpoint_id: field(body, "endpoint_id"),
    signing_secret_kid: field(body, "signing_secret_kid"),
    enabled: field(body, "enabled") === "on",
    rule: field(body, "rule"),
    pipeline: field(body, "pipeline"),
    retry_schedule: field(body, "retry_schedule"),
    retry_max_attempts: field(body, "retry_max_attempts"),
    expect_mail_within: field(body, "expect_mail_within"),
  };
}

/**
 * The retry policy of the two form fields: null when both are empty; otherwise the delays split at
 * commas and `max_attempts` as typed (one more than the delays when left empty), for `parseRetryPolicy`
 * to judge — a number that does not parse is passed on as the text, and refused there at its path.
 */
function retryPolicyOf(v: RouteFormValues): unknown {
  const scheduleText = v.retry_schedule.trim();
  const maxText = v.retry_max_attempts.trim();
  if (scheduleText === "" && maxText === "") return null;
  const schedule = scheduleText === "" ? [] : scheduleText.split(",").map((s) => s.trim());
  const max = maxText === "" ? schedule.length + 1 : /^\d+$/.test(maxText) ? Number(maxText) : maxText;
  return { schedule, max_attempts: max };
}

function parseJson(text: string, path: string, errors: ErrorDetail[]): unknown {
  const parsed = parseJsonText(text);
  if (parsed.ok) return parsed.value;
  errors.push({ path, message: `not valid JSON: ${parsed.message}` });
  return undefined;
}

/** Turns form values into a route input; JSON syntax and required-field problems come back as errors. */
export function toRouteInput(v: RouteFormValues): { input: RouteInput; errors: FormErrors } {
  const errors: FormErrors = {};
  const name = v.name.trim();
  if (!name || name.length > 200) errors.name = [{ path: "/name", message: "1 to 200 characters" }];
  if (!v.endpoint_id) errors.endpoint_id = [{ path: "/endpoint_id", message: "choose an endpoint" }];
  if (!v.signing_secret_kid)
    errors.signing_secret_kid = [{ path: "/signing_secret_kid", message: "choose a signing secret" }];
  const ruleErrors: ErrorDetail[] = [];
  const pipelineErrors: ErrorDetail[] = [];
  const rule = v.rule.trim() === "" ? {} : parseJson(v.rule, "/rule", ruleErrors);
  const pipeline =
    v.pipeline.trim() === "" ? DEFAULT_PIPELINE : parseJson(v.pipeline, "/pipeline", pipelineErrors);
  if (ruleErrors.length) errors.rule = ruleErrors;
  if (pipelineErrors.length) errors.pipeline = pipelineErrors;
  return {
    input: {
      name,
      endpoint_id: v.endpoint_id,
      signing_secret_kid: v.signing_secret_kid,
      enabled: v.enabled,
      rule,
      pipeline,
      retry_policy: retryPolicyOf(v),
      expect_mail_within: v.expect_mail_within.trim() === "" ? null : v.expect_mail_within.trim(),
    },
    errors,
  };
}

/** Where an error under `/retry_policy` is shown: the attempts field or the schedule field. */
function retryField(path: string): keyof RouteFormValues {
  return path.startsWith("/retry_policy/max_attempts") ? "retry_max_attempts" : "retry_schedule";
}

/** Sorts error details onto the fields their paths point into (`/pipeline/steps/0/…` → pipeline). */
export function errorsByField(details: ErrorDetail[]): FormErrors {
  const out: FormErrors = {};
  for (const d of details) {
    const head = d.path.split("/")[1] ?? "";
    const key =
      head === "retry_policy"
        ? retryField(d.path)
        : (FIELDS as string[]).includes(head)
          ? (head as keyof RouteFormValues)
          : "form";
    const list = out[key] ?? [];
    list.push(d);
    out[key] = list;
  }
  return out;
}

/** True when there is at least one error. */
export function hasErrors(errors: FormErrors): boolean {
  return Object.values(errors).some((list) => (list?.length ?? 0) > 0);
}

/**
 * Near-miss warnings ("did you mean …") of the `map.custom_json` steps in the pipeline text, at their
 * paths: shown whenever the form is, so a saved route keeps showing them until they are fixed.
 */
function pipelineWarnings(text: string): SafeHtml {
  let pipeline: unknown;
  try {
    pipeline = JSON.parse(text);
  } catch {
    return html``;
  }
  const warnings = pipelineMapperWarnings(pipeline);
  if (warnings.length === 0) return html``;
  return html`<ul class="field-warnings" id="pipeline-warnings">${warnings.map(
    (w) => html`<li><code class="path">${w.path}</code> ${w.message}</li>`,
  )}</ul>`;
}

/** The editor form; `action` is where it posts. */
export function routeForm(opts: {
  action: string;
  csrf: string;
  values: RouteFormValues;
  errors: FormErrors;
  endpoints: EndpointView[];
  secrets: SigningSecretView[];
  submitLabel: string;
}): SafeHtml {
  const { values: v, errors: e } = opts;
  const invalid = (k: keyof RouteFormValues) => (e[k]?.length ? html` aria-invalid="true"` : "");
  return html`<form method="post" action="${opts.action}" class="form wide" id="route-form" novalidate>
  ${csrfField(opts.csrf)}
  ${e.form?.length ? html`<div class="alert" role="alert">${fieldErrors(e.form)}</div>` : ""}
  <div class="grid-2">
    <div>
      <label for="name">Name</label>
      <input id="name" name="name" value="${v.name}" maxlength="200" required${invalid("name")}>
      ${fieldErrors(e.name ?? [])}
    </div>
    <div class="checkbox-row">
      <label><input type="checkbox" name="enabled"${v.enabled ? " checked" : ""}> Enabled</label>
    </div>
    <div>
      <label for="endpoint_id">Endpoint</label>
      <select id="endpoint_id" name="endpoint_id"${invalid("endpoint_id")}>
        <option value="">Choose an endpoint…</option>
        ${opts.endpoints.map((ep) => html`<option value="${ep.id}"${ep.id === v.endpoint_id ? " selected" : ""}>${ep.url}</option>`)}
      </select>
      ${fieldErrors(e.endpoint_id ?? [])}
    </div>
    <div>
      <label for="signing_secret_kid">Signing secret (kid)</label>
      <select id="signing_secret_kid" name="signing_secret_kid"${invalid("signing_secret_kid")}>
        <option value="">Choose a signing secret…</option>
        ${opts.secrets.map((s) => html`<option value="${s.kid}"${s.kid === v.signing_secret_kid ? " selected" : ""}>${s.kid}</option>`)}
      </select>
      ${fieldErrors(e.signing_secret_kid ?? [])}
    </div>
  </div>
  <label for="rule">Rule <span class="muted small">(JSON; <code>{}</code> matches every message)</span></label>
  <textarea id="rule" name="rule" class="code" rows="6" spellcheck="false"${invalid("rule")}>${v.rule}</textarea>
  ${fieldErrors(e.rule ?? [])}
  <label for="pipeline">Pipeline <span class="muted small">(JSON: <code>{"steps": [{"name", "args"}]}</code>)</span></label>
  <textarea id="pipeline" name="pipeline" class="code" rows="16" spellcheck="false"${invalid("pipeline")}>${v.pipeline}</textarea>
  ${fieldErrors(e.pipeline ?? [])}
  ${pipelineWarnings(v.pipeline)}
  ${stepReference()}
  ${editorCatalogue()}
  <div class="grid-2">
    <div>
      <label for="retry_schedule">Retry schedule <span class="muted small">(delays before attempts 2, 3, …: <code>10s, 1m, 1h</code>; empty: the service's schedule)</span></label>
      <input id="retry_schedule" name="retry_schedule" value="${v.retry_schedule}" class="mono" placeholder="10s, 1m, 1h"${invalid("retry_schedule")}>
      ${fieldErrors(e.retry_schedule ?? [])}
    </div>
    <div>
      <label for="retry_max_attempts">Max attempts <span class="muted small">(1–50; empty: one more than the delays)</span></label>
      <input id="retry_max_attempts" name="retry_max_attempts" value="${v.retry_max_attempts}" inputmode="numeric"${invalid("retry_max_attempts")}>
      ${fieldErrors(e.retry_max_attempts ?? [])}
    </div>
  </div>
  <label for="expect_mail_within">Expect mail within <span class="muted small">(a duration such as <code>6h</code>: a <code>route.silent</code> notification when no message matched for that long; empty: off)</span></label>
  <input id="expect_mail_within" name="expect_mail_within" value="${v.expect_mail_within}" class="mono" placeholder="6h"${invalid("expect_mail_within")}>
  ${fieldErrors(e.expect_mail_within ?? [])}
  <div class="actions"><button type="submit" class="btn primary">${opts.submitLabel}</button>
  <a class="btn link" href="/ui/routes">Cancel</a></div>
</form>`;
}

/**
 * Every registered pipeline step, under the pipeline field (the transforms, then the final steps): its
 * name, kind, summary and one example
 * step object to copy (the first of its published examples), so the editor lists each step this
 * version knows without a separate list to keep in step.
 */
function stepReference(): SafeHtml {
  const item = (name: (typeof STEP_NAMES)[number]) => {
    const step = STEPS[name];
    const example = (step.args as { examples?: unknown[] }).examples?.[0] ?? {};
    return html`<dt><code>${name}</code> <span class="muted small">${step.kind === "map" ? "final step" : "transform"}</span></dt>
    <dd>${step.summary}<br><code class="small">${JSON.stringify({ name, args: example })}</code></dd>`;
  };
  return html`<details class="step-reference">
  <summary>Pipeline steps <span class="muted small">(transforms first, then exactly one final step)</span></summary>
  <dl>${[...STEP_NAMES].sort((a, b) => Number(STEPS[a].kind === "map") - Number(STEPS[b].kind === "map")).map(item)}</dl>
</details>`;
}

/** What each rule leaf key tests, as the rule builder offers it. */
const RULE_KEY_HINTS: Record<string, string> = {
  subject_contains: "the subject contains one of these",
  subject_regex: "the subject matches one of these RE2 patterns",
  to_contains: "a To address contains one of these",
  to_emails: "a To address is one of these",
  from_contains: "the From address contains one of these",
  from_emails: "the From address is one of these",
  from_domains: "the From address is at one of these domains",
  attachments_mime: "an attachment's type matches one of these globs (image/*)",
  headers_equals: "these headers equal these values",
  headers_contains: "these headers contain these values",
};

/**
 * The structured editor's catalogue (route-editor.js): every rule leaf key with the schema of its
 * value, and every pipeline step with its argument schema and an example. A JSON script element, which
 * the page's CSP does not run.
 */
function editorCatalogue(): SafeHtml {
  const strings = { type: "array", items: { type: "string" } };
  const headers = {
    type: "object",
    description: 'header name → value or list of values, e.g. {"x-priority": "1"}',
  };
  const catalogue = {
    rule_keys: [
      ...STRING_LEAF_KEYS.map((key) => ({
        key,
        description: RULE_KEY_HINTS[key] ?? key,
        schema: strings,
        initial: [],
      })),
      ...HEADER_LEAF_KEYS.map((key) => ({
        key,
        description: RULE_KEY_HINTS[key] ?? key,
        schema: headers,
        initial: {},
      })),
    ],
    steps: [...STEP_NAMES].map((name) => {
      const step = STEPS[name];
      return {
        name,
        kind: step.kind,
        summary: step.summary,
        args: step.args,
        example: (step.args as { examples?: unknown[] }).examples?.[0] ?? {},
      };
    }),
  };
  const json = JSON.stringify(catalogue).replace(/</g, "\\u003c");
  return html`<script type="application/json" id="route-editor-catalogue">${unsafeRaw(json)}</script>`;
}
