/**
 * Notifications settings: whether the project sends operational notifications, to which of its
 * endpoints, signed with which of its signing secrets (by kid, as the API names it), and for which
 * types — saved through `setNotifications`, the function behind `PATCH /v1/project`, so the checks
 * and messages are the API's, shown at the field their path points into. Turning notifications off
 * stores `null`, as the API does. Below the form: the notifications given up lately, with their
 * last error, so a notification endpoint that stopped answering is noticed.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError, type ErrorDetail } from "../../lib/errors.ts";
import { listEndpoints } from "../../resources/endpoints.ts";
import {
  listFailedNotifications,
  NOTIFICATION_TYPES,
  type NotificationType,
  setNotifications,
} from "../../resources/notifications.ts";
import { getProject } from "../../resources/projects.ts";
import { listSigningSecrets } from "../../resources/signing-secrets.ts";
import { field, type UiRequest, uiHandler } from "../guard.ts";
import { html } from "../html.ts";
import { csrfField, fieldErrors, noticeText, page, time } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";

/** What each type is about, as the form lists it. */
const TYPE_HINTS: Record<NotificationType, string> = {
  "event.dead": "an event was given up (its attempts ran out, or there was nothing or nowhere to send)",
  "endpoint.circuit_opened": "an endpoint kept failing: its deliveries are paused behind its circuit",
  "endpoint.circuit_closed": "the endpoint answered again: its waiting deliveries go out",
  "message.held": "the intake policy held a message until it is released",
  "message.rejected": "the intake policy refused a message",
  "route.silent": "a route with “expect mail within” matched no message for that long",
};

interface Values {
  enabled: boolean;
  endpoint_id: string;
  signing_secret_kid: string;
  types: string[];
}
type Field = "endpoint_id" | "signing_secret_kid" | "types" | "form";
type Errors = Partial<Record<Field, ErrorDetail[]>>;

/** `/notifications/types/2` → types; anything not under a field → form. */
function byField(details: ErrorDetail[]): Errors {
  const out: Errors = {};
  for (const d of details) {
    const head = d.path.split("/")[2] ?? "";
    const key: Field =
      head === "endpoint_id" || head === "signing_secret_kid" || head === "types" ? head : "form";
    const list = out[key] ?? [];
    list.push(d);
    out[key] = list;
  }
  return out;
}

/** The checked boxes of a form field (one value, a list, or none). */
function checked(body: unknown, name: string): string[] {
  if (typeof body !== "object" || body === null) return [];
  const value = (body as Record<string, unknown>)[name];
  if (typeof value === "string") return [value];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}

async function settingsPage(
  req: UiRequest,
  opts: { values?: Values; errors?: Errors; status?: number } = {},
): Promise<Response> {
  const ctx = req.ctx;
  const [project, endpoints, secrets, failed] = await Promise.all([
    getProject(ctx, req.projectId),
    listEndpoints(ctx, req.projectId),
    listSigningSecrets(ctx, req.projectId),
    listFailedNotifications(ctx, req.projectId),
  ]);
  const stored = project.notifications;
  const v: Values = opts.values ?? {
    enabled: stored !== null,
    endpoint_id: stored?.endpoint_id ?? "",
    signing_secret_kid: stored?.signing_secret_kid ?? "",
    types: stored?.types ?? [...NOTIFICATION_TYPES],
  };
  const e = opts.errors ?? {};
  const invalid = (k: Field) => (e[k]?.length ? html` aria-invalid="true"` : "");
  const body = html`<header class="page-header">
  <h1>Notifications</h1>
  <p class="muted">A notification is a signed POST of <code>{"id", "type", "created_at", "data"}</code> to one of your endpoints when something needs an operator's eye. It is signed like a delivery, with the signing secret chosen here.</p>
</header>
<p id="notifications-state" class="${stored ? "" : "muted"}">${
    stored
      ? html`Notifications are <strong>on</strong>: ${stored.types.length} of ${NOTIFICATION_TYPES.length} types.`
      : html`Notifications are <strong>off</strong>.`
  }</p>
<form method="post" action="/ui/notifications" class="form wide" id="notifications-form" novalidate>
  ${csrfField(req.csrf)}
  ${e.form?.length ? html`<div class="alert" role="alert">${fieldErrors(e.form)}</div>` : ""}
  <div class="checkbox-row">
    <label><input type="checkbox" name="enabled" id="enabled"${v.enabled ? " checked" : ""}> Send notifications</label>
  </div>
  <p class="muted small">Unchecked and saved, notifications are off and these settings are forgotten.</p>
  <div class="grid-2">
    <div>
      <label for="endpoint_id">Endpoint</label>
      <select id="endpoint_id" name="endpoint_id"${invalid("endpoint_id")}>
        <option value="">Choose an endpoint…</option>
        ${endpoints.map((ep) => html`<option value="${ep.id}"${ep.id === v.endpoint_id ? " selected" : ""}>${ep.url}</option>`)}
      </select>
      ${fieldErrors(e.endpoint_id ?? [])}
      ${endpoints.length === 0 ? html`<p class="muted small">No endpoints yet: <a class="inline" href="/ui/endpoints/new">create one</a>.</p>` : ""}
    </div>
    <div>
      <label for="signing_secret_kid">Signing secret (kid)</label>
      <select id="signing_secret_kid" name="signing_secret_kid"${invalid("signing_secret_kid")}>
        <option value="">Choose a signing secret…</option>
        ${secrets.map((s) => html`<option value="${s.kid}"${s.kid === v.signing_secret_kid ? " selected" : ""}>${s.kid}</option>`)}
      </select>
      ${fieldErrors(e.signing_secret_kid ?? [])}
      <p class="muted small">The secret itself is shown once, when it is created on <a class="inline" href="/ui/signing-secrets">Signing secrets</a>.</p>
    </div>
  </div>
  <fieldset class="source" id="types">
    <legend>Types</legend>
    ${NOTIFICATION_TYPES.map(
      (t) =>
        html`<div class="checkbox-row"><label><input type="checkbox" name="types" value="${t}"${v.types.includes(t) ? " checked" : ""}> <code>${t}</code> <span class="muted small">${TYPE_HINTS[t]}</span></label></div>`,
    )}
  </fieldset>
  ${fieldErrors(e.types ?? [])}
  <div class="actions"><button type="submit" class="btn primary">Save notifications</button></div>
</form>
<h2>Given up lately</h2>
${
  failed.length === 0
    ? html`<div class="empty" id="failed-notifications">No notification was given up lately.</div>`
    : html`<table class="table" id="failed-notifications">
  <thead><tr><th>Notification</th><th>Type</th><th>Last error</th><th>Given up</th></tr></thead>
  <tbody>${failed.map(
    (f) =>
      html`<tr><td class="mono small">${f.id}</td><td><code>${f.type}</code></td><td class="small">${f.last_error ?? ""}</td><td class="small">${time(f.finished_at)}</td></tr>`,
  )}</tbody>
</table>`
}`;
  return htmlResponse(
    page({
      title: "Notifications",
      section: "notifications",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(req.query.notice),
    }),
    opts.status ?? 200,
  );
}

async function save(req: UiRequest): Promise<Response> {
  const values: Values = {
    enabled: field(req.body, "enabled") === "on",
    endpoint_id: field(req.body, "endpoint_id"),
    signing_secret_kid: field(req.body, "signing_secret_kid"),
    types: checked(req.body, "types"),
  };
  try {
    await setNotifications(
      req.ctx,
      req.projectId,
      values.enabled
        ? {
            endpoint_id: values.endpoint_id,
            signing_secret_kid: values.signing_secret_kid,
            types: values.types,
          }
        : null,
    );
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 422) throw err;
    const details = err.details?.length ? err.details : [{ path: "/notifications", message: err.message }];
    return settingsPage(req, { values, errors: byField(details), status: 422 });
  }
  return redirect("/ui/notifications?notice=notifications-saved");
}

/** GET/POST `/ui/notifications`. */
export function notificationPages(ctx: AppContext) {
  return new Elysia()
    .get(
      "/notifications",
      uiHandler(ctx, (req) => settingsPage(req)),
    )
    .post("/notifications", uiHandler(ctx, save));
}
