/**
 * Endpoints: list (with each endpoint's circuit, last-hour health and a pause/resume button), create,
 * edit, delete. Custom headers are edited as a JSON object; values of secret headers are shown as
 * `***`, and a `***` left unchanged keeps the stored value. Empty limits mean unlimited.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError, type ErrorDetail } from "../../lib/errors.ts";
import { parseJsonText } from "../../lib/json-text.ts";
import {
  createEndpoint,
  deleteEndpoint,
  type EndpointInput,
  type EndpointView,
  endpointSecrets,
  endpointsHealth,
  findEndpointRow,
  getEndpoint,
  listEndpointRows,
  listEndpoints,
  MASK,
  updateEndpoint,
} from "../../resources/endpoints.ts";
import { field, type UiRequest, uiHandler } from "../guard.ts";
import { html } from "../html.ts";
import { csrfField, fieldErrors, noticeText, page } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";

interface Values {
  url: string;
  headers: string;
  secret_headers: string;
  timeout_s: string;
  rate_limit_per_s: string;
  max_in_flight: string;
}
type Errors = Partial<Record<keyof Values | "form", ErrorDetail[]>>;

function valuesOf(ep?: EndpointView): Values {
  return {
    url: ep?.url ?? "",
    headers: JSON.stringify(ep?.headers ?? {}, null, 2),
    secret_headers: (ep?.secret_headers ?? []).join(", "),
    timeout_s: String(ep?.timeout_s ?? 10),
    rate_limit_per_s: ep?.rate_limit_per_s == null ? "" : String(ep.rate_limit_per_s),
    max_in_flight: ep?.max_in_flight == null ? "" : String(ep.max_in_flight),
  };
}

function parse(v: Values): { input: EndpointInput; errors: Errors } {
  const errors: Errors = {};
  let headers: Record<string, string> = {};
  const parsed = v.headers.trim() ? parseJsonText(v.headers) : ({ ok: true, value: {} } as const);
  if (!parsed.ok) {
    errors.headers = [{ path: "/headers", message: `not valid JSON: ${parsed.message}` }];
  } else if (typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value)) {
    errors.headers = [{ path: "/headers", message: "not a JSON object: expected an object" }];
  } else {
    headers = parsed.value as Record<string, string>;
  }
  const timeout = Number(v.timeout_s);
  const secret = v.secret_headers
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  const limit = (text: string) => (text.trim() === "" ? null : Number(text));
  return {
    input: {
      url: v.url.trim(),
      headers,
      secret_headers: secret,
      timeout_s: timeout,
      rate_limit_per_s: limit(v.rate_limit_per_s),
      max_in_flight: limit(v.max_in_flight),
    },
    errors,
  };
}

function byField(details: ErrorDetail[]): Errors {
  const out: Errors = {};
  for (const d of details) {
    const head = d.path.split("/")[1] ?? "";
    const key = [
      "url",
      "headers",
      "secret_headers",
      "timeout_s",
      "rate_limit_per_s",
      "max_in_flight",
    ].includes(head)
      ? (head as keyof Values)
      : "form";
    const list = out[key] ?? [];
    list.push(d);
    out[key] = list;
  }
  return out;
}

const CIRCUIT_LABEL = { closed: "closed", open: "open", half_open: "probing" } as const;
const STATE_BADGE = {
  closed: "badge-ok",
  open: "badge-dead",
  probing: "badge-retry",
  paused: "badge-disabled",
};

function percent(rate: number | null): string {
  return rate === null ? "—" : `${Math.round(rate * 1000) / 10}%`;
}

async function listPage(req: UiRequest): Promise<Response> {
  const endpoints = await listEndpoints(req.ctx, req.projectId);
  // One query for every endpoint's health (an index range scan each).
  const health = await endpointsHealth(req.ctx, await listEndpointRows(req.ctx, req.projectId));
  const body = html`<header class="page-header with-actions">
  <div><h1>Endpoints</h1><p class="muted">Where routes deliver webhooks. Secret header values are stored encrypted and shown as ***.</p></div>
  <a class="btn primary" href="/ui/endpoints/new">New endpoint</a>
</header>
${
  endpoints.length === 0
    ? html`<div class="empty">No endpoints yet.</div>`
    : html`<table class="table" id="endpoints">
  <thead><tr><th>URL</th><th>Headers</th><th class="num">Timeout</th><th>Delivery</th><th>Last hour</th><th></th></tr></thead>
  <tbody>${endpoints.map((e) => {
    const h = health.get(e.id);
    const state = e.paused ? "paused" : CIRCUIT_LABEL[e.circuit.state];
    return html`<tr data-endpoint="${e.id}">
    <td><a class="row-link mono break" href="/ui/endpoints/${e.id}">${e.url}</a><div class="muted small mono">${e.id}</div></td>
    <td class="small">${Object.keys(e.headers).length ? Object.keys(e.headers).map((h) => html`<span class="tag">${h}</span> `) : html`<span class="muted">—</span>`}</td>
    <td class="num">${e.timeout_s} s</td>
    <td class="small"><span class="badge ${STATE_BADGE[state]}" data-circuit="${state}">${state}</span>
      ${e.circuit.consecutive_failures > 0 ? html`<div class="muted">${e.circuit.consecutive_failures} failures in a row</div>` : ""}
      ${e.rate_limit_per_s !== null ? html`<div class="muted">≤ ${e.rate_limit_per_s}/s</div>` : ""}
      ${e.max_in_flight !== null ? html`<div class="muted">≤ ${e.max_in_flight} in flight</div>` : ""}</td>
    <td class="small" data-health>${
      h && h.attempts > 0
        ? html`<div>${percent(h.success_rate)} of ${h.attempts} ok</div>
      <div class="muted">p50 ${h.latency_ms.p50} ms · p99 ${h.latency_ms.p99} ms</div>
      ${h.last_error ? html`<div class="muted break" title="${h.last_error}">last error: ${h.last_error.slice(0, 80)}</div>` : ""}`
        : html`<span class="muted">no attempts</span>`
    }</td>
    <td><form method="post" action="/ui/endpoints/${e.id}/${e.paused ? "resume" : "pause"}" data-confirm="${
      e.paused
        ? "Resume deliveries to this endpoint? Events waiting behind the pause are sent at once."
        : "Pause deliveries to this endpoint? Due events wait (endpoint_paused) until you resume; no attempts are spent."
    }">${csrfField(req.csrf)}<button type="submit" class="btn small">${e.paused ? "Resume" : "Pause"}</button></form></td>
  </tr>`;
  })}</tbody>
</table>`
}`;
  return htmlResponse(
    page({
      title: "Endpoints",
      section: "endpoints",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(req.query.notice),
    }),
  );
}

function editor(
  req: UiRequest,
  opts: { id?: string; values: Values; errors: Errors; status?: number },
): Response {
  const { values: v, errors: e } = opts;
  const body = html`<header class="page-header">
  <p class="crumbs"><a href="/ui/endpoints">Endpoints</a> /</p>
  <h1>${opts.id ? "Edit endpoint" : "New endpoint"}</h1>
  ${opts.id ? html`<p class="muted mono small">${opts.id}</p>` : ""}
</header>
<form method="post" action="${opts.id ? `/ui/endpoints/${opts.id}` : "/ui/endpoints"}" class="form wide" novalidate>
  ${csrfField(req.csrf)}
  ${e.form?.length ? html`<div class="alert" role="alert">${fieldErrors(e.form)}</div>` : ""}
  <label for="url">URL</label>
  <input id="url" name="url" value="${v.url}" placeholder="https://example.com/webhooks/mail" class="mono" required>
  ${fieldErrors(e.url ?? [])}
  <label for="headers">Custom headers <span class="muted small">(JSON object, name → value)</span></label>
  <textarea id="headers" name="headers" rows="5" class="code" spellcheck="false">${v.headers}</textarea>
  ${fieldErrors(e.headers ?? [])}
  <div class="grid-2">
    <div>
      <label for="secret_headers">Secret headers <span class="muted small">(comma-separated names; masked everywhere)</span></label>
      <input id="secret_headers" name="secret_headers" value="${v.secret_headers}" class="mono">
      ${fieldErrors(e.secret_headers ?? [])}
    </div>
    <div>
      <label for="timeout_s">Timeout (seconds, 1–60)</label>
      <input id="timeout_s" name="timeout_s" type="number" min="1" max="60" value="${v.timeout_s}">
      ${fieldErrors(e.timeout_s ?? [])}
    </div>
  </div>
  <div class="grid-2">
    <div>
      <label for="rate_limit_per_s">Rate limit <span class="muted small">(attempts per second over all workers; empty = unlimited)</span></label>
      <input id="rate_limit_per_s" name="rate_limit_per_s" type="number" min="0" step="any" value="${v.rate_limit_per_s}">
      ${fieldErrors(e.rate_limit_per_s ?? [])}
    </div>
    <div>
      <label for="max_in_flight">Max in flight <span class="muted small">(attempts open at once; empty = unlimited)</span></label>
      <input id="max_in_flight" name="max_in_flight" type="number" min="1" value="${v.max_in_flight}">
      ${fieldErrors(e.max_in_flight ?? [])}
    </div>
  </div>
  <div class="actions"><button type="submit" class="btn primary">${opts.id ? "Save endpoint" : "Create endpoint"}</button>
  <a class="btn link" href="/ui/endpoints">Cancel</a></div>
</form>
${
  opts.id
    ? html`<form method="post" action="/ui/endpoints/${opts.id}/delete" class="danger-zone" data-confirm="Delete this endpoint?">
  ${csrfField(req.csrf)}<button type="submit" class="btn danger">Delete endpoint</button></form>`
    : ""
}`;
  return htmlResponse(
    page({
      title: opts.id ? "Edit endpoint" : "New endpoint",
      section: "endpoints",
      project: req.project,
      csrf: req.csrf,
      body,
    }),
    opts.status ?? 200,
  );
}

async function save(req: UiRequest, id?: string): Promise<Response> {
  const values: Values = {
    url: field(req.body, "url"),
    headers: field(req.body, "headers"),
    secret_headers: field(req.body, "secret_headers"),
    timeout_s: field(req.body, "timeout_s"),
    rate_limit_per_s: field(req.body, "rate_limit_per_s"),
    max_in_flight: field(req.body, "max_in_flight"),
  };
  const { input, errors } = parse(values);
  const base = { values, ...(id ? { id } : {}) };
  if (Object.keys(errors).length) return editor(req, { ...base, errors, status: 422 });
  try {
    if (id) {
      // A masked value the user left alone means "keep the stored secret".
      const stored = endpointSecrets(req.ctx, await findEndpointRow(req.ctx, req.projectId, id)).headers;
      for (const [name, value] of Object.entries(input.headers ?? {})) {
        const kept = stored[name];
        if (value === MASK && kept !== undefined && input.headers) input.headers[name] = kept;
      }
      await updateEndpoint(req.ctx, req.projectId, id, input);
    } else {
      await createEndpoint(req.ctx, req.projectId, input);
    }
    return redirect("/ui/endpoints?notice=endpoint-saved");
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 422) throw err;
    return editor(req, {
      ...base,
      errors: byField(err.details ?? [{ path: "/", message: err.message }]),
      status: 422,
    });
  }
}

/**
 * `/ui/endpoints`, `/ui/endpoints/new`, `/ui/endpoints/:id` (GET/POST), POST `/ui/endpoints/:id/delete`,
 * `/ui/endpoints/:id/pause` and `/ui/endpoints/:id/resume`.
 */
export function endpointPages(ctx: AppContext) {
  const setPaused = (paused: boolean) =>
    uiHandler(ctx, async (req) => {
      await updateEndpoint(ctx, req.projectId, req.params.id ?? "", { paused });
      return redirect(`/ui/endpoints?notice=${paused ? "endpoint-paused" : "endpoint-resumed"}`);
    });
  return new Elysia()
    .post("/endpoints/:id/pause", setPaused(true))
    .post("/endpoints/:id/resume", setPaused(false))
    .get("/endpoints", uiHandler(ctx, listPage))
    .get(
      "/endpoints/new",
      uiHandler(ctx, (req) => editor(req, { values: valuesOf(), errors: {} })),
    )
    .post(
      "/endpoints",
      uiHandler(ctx, (req) => save(req)),
    )
    .get(
      "/endpoints/:id",
      uiHandler(ctx, async (req) => {
        const ep = await getEndpoint(ctx, req.projectId, req.params.id ?? "");
        return editor(req, { id: ep.id, values: valuesOf(ep), errors: {} });
      }),
    )
    .post(
      "/endpoints/:id",
      uiHandler(ctx, (req) => save(req, req.params.id ?? "")),
    )
    .post(
      "/endpoints/:id/delete",
      uiHandler(ctx, async (req) => {
        const id = req.params.id ?? "";
        try {
          await deleteEndpoint(ctx, req.projectId, id);
        } catch (err) {
          if (!(err instanceof AppError) || err.code !== "endpoints.in_use") throw err;
          const ep = await getEndpoint(ctx, req.projectId, id);
          return editor(req, {
            id,
            values: valuesOf(ep),
            errors: { form: [{ path: "/", message: err.message }] },
            status: 409,
          });
        }
        return redirect("/ui/endpoints?notice=endpoint-deleted");
      }),
    );
}
