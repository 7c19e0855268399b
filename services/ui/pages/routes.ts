/** Routes: the list, the editor (new and existing) and delete. */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError } from "../../lib/errors.ts";
import { listEndpoints } from "../../resources/endpoints.ts";
import { createRoute, deleteRoute, getRoute, listRoutes, updateRoute } from "../../resources/routes.ts";
import { listSigningSecrets } from "../../resources/signing-secrets.ts";
import { type UiRequest, uiHandler } from "../guard.ts";
import { html, type SafeHtml } from "../html.ts";
import { badge, csrfField, noticeText, page } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";
import {
  errorsByField,
  type FormErrors,
  hasErrors,
  postedValues,
  type RouteFormValues,
  routeForm,
  routeValues,
  toRouteInput,
} from "./route-form.ts";

function compact(value: unknown, max = 80): string {
  const text = JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

async function listPage(req: UiRequest): Promise<Response> {
  const [routes, endpoints] = await Promise.all([
    listRoutes(req.ctx, req.projectId),
    listEndpoints(req.ctx, req.projectId),
  ]);
  const url = new Map(endpoints.map((e) => [e.id, e.url]));
  const body = html`<header class="page-header with-actions">
  <div><h1>Routes</h1><p class="muted">A rule picks messages; the pipeline shapes the webhook body sent to the endpoint.</p></div>
  <a class="btn primary" href="/ui/routes/new">New route</a>
</header>
${
  routes.length === 0
    ? html`<div class="empty">No routes yet.</div>`
    : html`<table class="table" id="routes">
  <thead><tr><th>Name</th><th>Endpoint</th><th>Rule</th><th>Pipeline</th><th>Status</th></tr></thead>
  <tbody>${routes.map(
    (r) => html`<tr>
    <td><a href="/ui/routes/${r.id}" class="row-link">${r.name}</a><div class="muted small mono">${r.id}</div></td>
    <td class="mono small break">${url.get(r.endpoint_id) ?? r.endpoint_id}</td>
    <td class="mono small">${compact(r.rule)}</td>
    <td class="small">${r.pipeline.steps.map((s) => html`<span class="tag">${s.name}</span> `)}</td>
    <td>${badge(r.enabled ? "enabled" : "disabled")}</td>
  </tr>`,
  )}</tbody>
</table>`
}`;
  return htmlResponse(
    page({
      title: "Routes",
      section: "routes",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(req.query.notice),
    }),
  );
}

async function editorPage(
  req: UiRequest,
  opts: { routeId?: string; values: RouteFormValues; errors: FormErrors; status?: number },
): Promise<Response> {
  const [endpoints, secrets] = await Promise.all([
    listEndpoints(req.ctx, req.projectId),
    listSigningSecrets(req.ctx, req.projectId),
  ]);
  const title = opts.routeId ? `Route ${opts.values.name}` : "New route";
  const missing =
    endpoints.length === 0 || secrets.length === 0
      ? html`<div class="alert">A route needs an <a href="/ui/endpoints">endpoint</a> and a <a href="/ui/signing-secrets">signing secret</a>; create them first.</div>`
      : "";
  const del: SafeHtml | "" = opts.routeId
    ? html`<form method="post" action="/ui/routes/${opts.routeId}/delete" class="danger-zone" data-confirm="Delete this route? Its events keep their route snapshot.">
  ${csrfField(req.csrf)}
  <button type="submit" class="btn danger">Delete route</button>
</form>`
    : "";
  const body = html`<header class="page-header">
  <p class="crumbs"><a href="/ui/routes">Routes</a> /</p>
  <h1>${opts.routeId ? opts.values.name || "Route" : "New route"}</h1>
  ${opts.routeId ? html`<p class="muted mono small">${opts.routeId}</p>` : ""}
</header>
${missing}
${routeForm({
  action: opts.routeId ? `/ui/routes/${opts.routeId}` : "/ui/routes",
  csrf: req.csrf,
  values: opts.values,
  errors: opts.errors,
  endpoints,
  secrets,
  submitLabel: opts.routeId ? "Save route" : "Create route",
})}
${del}`;
  return htmlResponse(
    page({
      title,
      section: "routes",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(req.query.notice),
      scripts: ["/ui/assets/route-editor.js"],
    }),
    opts.status ?? 200,
  );
}

/** Saves a posted form through `createRoute`/`updateRoute`; errors re-render the form at their paths. */
async function save(req: UiRequest, routeId?: string): Promise<Response> {
  const values = postedValues(req.body);
  const { input, errors } = toRouteInput(values);
  const base = { values, ...(routeId ? { routeId } : {}) };
  if (hasErrors(errors)) return editorPage(req, { ...base, errors, status: 422 });
  try {
    const route = routeId
      ? await updateRoute(req.ctx, req.projectId, routeId, input)
      : await createRoute(req.ctx, req.projectId, input);
    return redirect(`/ui/routes/${route.id}?notice=route-saved`);
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 422) throw err;
    const details = err.details?.length ? err.details : [{ path: "/", message: err.message }];
    return editorPage(req, { ...base, errors: errorsByField(details), status: 422 });
  }
}

/** `/ui/routes`, `/ui/routes/new`, `/ui/routes/:id` (GET/POST), POST `/ui/routes/:id/delete`. */
export function routePages(ctx: AppContext) {
  return new Elysia()
    .get("/routes", uiHandler(ctx, listPage))
    .get(
      "/routes/new",
      uiHandler(ctx, (req) => editorPage(req, { values: routeValues(), errors: {} })),
    )
    .post(
      "/routes",
      uiHandler(ctx, (req) => save(req)),
    )
    .get(
      "/routes/:id",
      uiHandler(ctx, async (req) => {
        const route = await getRoute(ctx, req.projectId, req.params.id ?? "");
        return editorPage(req, { routeId: route.id, values: routeValues(route), errors: {} });
      }),
    )
    .post(
      "/routes/:id",
      uiHandler(ctx, async (req) => {
        const route = await getRoute(ctx, req.projectId, req.params.id ?? "");
        return save(req, route.id);
      }),
    )
    .post(
      "/routes/:id/delete",
      uiHandler(ctx, async (req) => {
        await deleteRoute(ctx, req.projectId, req.params.id ?? "");
        return redirect("/ui/routes?notice=route-deleted");
      }),
    );
}
