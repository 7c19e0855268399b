/**
 * The event list (search, status, route and day-range filters, cursor paging, newest first). A list
 * filtered by status, route or days offers "Replay all matching" with the dry run's count
 * (resources/bulk-replay.ts).
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import type { EventStatus } from "../../db/schema/index.ts";
import { startBulkReplay } from "../../resources/bulk-replay.ts";
import { listRoutes } from "../../resources/routes.ts";
import { EVENT_STATUSES, eventPage, isEventStatus, subjectsOf } from "../data.ts";
import { field, type UiRequest, uiHandler } from "../guard.ts";
import { html } from "../html.ts";
import { badge, csrfField, noticeText, page, time } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";

const PAGE_SIZE = 25;

interface Filter {
  status?: string;
  routeId?: string;
  q?: string;
  /** YYYY-MM-DD (UTC days, both included) */
  from?: string;
  to?: string;
  cursor?: string;
}

function listQuery(filter: Filter): string {
  const q = new URLSearchParams();
  if (filter.q) q.set("q", filter.q);
  if (filter.status) q.set("status", filter.status);
  if (filter.routeId) q.set("route_id", filter.routeId);
  if (filter.from) q.set("from", filter.from);
  if (filter.to) q.set("to", filter.to);
  if (filter.cursor) q.set("cursor", filter.cursor);
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A `YYYY-MM-DD` date field, or undefined when empty or not a date. */
function dayOf(value: string | undefined): string | undefined {
  return value && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value)) ? value : undefined;
}

/** The day after `day`, as the exclusive end of a range of whole days. */
function nextDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString();
}

async function eventsPage(req: UiRequest): Promise<Response> {
  const { ctx, projectId, query } = req;
  const status: EventStatus | undefined = isEventStatus(query.status) ? query.status : undefined;
  const routeId = query.route_id?.slice(0, 200) || undefined;
  const cursor = query.cursor?.slice(0, 500) || undefined;
  const search = query.q?.trim().slice(0, 500) || undefined;
  const from = dayOf(query.from);
  const to = dayOf(query.to);
  const [result, routes] = await Promise.all([
    eventPage(ctx, projectId, {
      ...(status ? { status } : {}),
      ...(routeId ? { routeId } : {}),
      ...(cursor ? { cursor } : {}),
      ...(search ? { q: search } : {}),
      ...(from ? { since: `${from}T00:00:00Z` } : {}),
      ...(to ? { until: nextDay(to) } : {}),
      limit: PAGE_SIZE,
    }),
    listRoutes(ctx, projectId),
  ]);
  const filter: Filter = {
    ...(status ? { status } : {}),
    ...(routeId ? { routeId } : {}),
    ...(search ? { q: search } : {}),
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  };
  const subjects = await subjectsOf(
    ctx,
    projectId,
    result.items.map((e) => e.id),
  );
  const routeName = new Map(routes.map((r) => [r.id, r.name]));
  const filtered = Boolean(status || routeId || search || from || to);
  // A bulk replay takes status, route and time; a word search narrows only the list, so it is not offered then.
  const bulkFilter = {
    ...(status ? { status: [status] } : {}),
    ...(routeId ? { route_id: routeId } : {}),
    ...(from ? { since: `${from}T00:00:00Z` } : {}),
    ...(to ? { until: nextDay(to) } : {}),
  };
  const bulkable = !search && Object.keys(bulkFilter).length > 0;
  const count = bulkable
    ? await startBulkReplay(ctx, projectId, { filter: bulkFilter, dry_run: true })
    : null;
  const replayable = count && "replayable" in count ? count.replayable : 0;
  const matched = count && "matched" in count ? count.matched : 0;

  const rows = result.items.map(
    (e) => html`<tr>
  <td>${badge(e.status)}</td>
  <td><a href="/ui/events/${e.id}" class="row-link">${subjects.get(e.id) || html`<span class="muted">(no subject)</span>`}</a>
    <div class="muted small mono">${e.id}</div></td>
  <td>${routeName.get(e.route_id) ?? html`<span class="mono small">${e.route_id}</span>`}</td>
  <td class="num">${e.attempts}</td>
  <td class="error-cell">${e.last_error ? html`<span class="small mono" title="${e.last_error}">${e.last_error}</span>` : html`<span class="muted">—</span>`}</td>
  <td class="nowrap small">${time(e.created_at)}</td>
</tr>`,
  );

  const body = html`<header class="page-header">
  <h1>Events</h1>
  <p class="muted">One event per message per matching route, newest first.</p>
</header>
<form method="get" action="/ui/events" class="filters" role="search">
  <label>Search
    <input type="search" name="q" value="${search ?? ""}" placeholder="subject, sender or Message-ID" maxlength="500">
  </label>
  <label>Status
    <select name="status">
      <option value="">All statuses</option>
      ${EVENT_STATUSES.map((s) => html`<option value="${s}"${s === status ? " selected" : ""}>${s}</option>`)}
    </select>
  </label>
  <label>Route
    <select name="route_id">
      <option value="">All routes</option>
      ${routes.map((r) => html`<option value="${r.id}"${r.id === routeId ? " selected" : ""}>${r.name}</option>`)}
    </select>
  </label>
  <label>From day
    <input type="date" name="from" value="${from ?? ""}">
  </label>
  <label>To day
    <input type="date" name="to" value="${to ?? ""}">
  </label>
  <button type="submit" class="btn">Filter</button>
  ${filtered ? html`<a href="/ui/events" class="btn link">Clear</a>` : ""}
</form>
${
  bulkable && replayable > 0
    ? html`<form method="post" action="/ui/events/replay" class="filters" id="bulk-replay" data-confirm="Replay ${replayable} events? Each is sent again with a fresh attempt budget.">
  ${csrfField(req.csrf)}
  ${status ? html`<input type="hidden" name="status" value="${status}">` : ""}
  ${routeId ? html`<input type="hidden" name="route_id" value="${routeId}">` : ""}
  ${from ? html`<input type="hidden" name="from" value="${from}">` : ""}
  ${to ? html`<input type="hidden" name="to" value="${to}">` : ""}
  <span class="muted small" data-replayable="${replayable}">${replayable} of the ${matched} matching events can be replayed (delivered, dead or discarded).</span>
  <button type="submit" class="btn">Replay all matching</button>
</form>`
    : ""
}
${
  result.items.length === 0
    ? html`<div class="empty">${filtered || cursor ? "No events match." : "No events yet. Send a message to your project's inbound address or POST it to /v1/messages."}</div>`
    : html`<table class="table" id="events">
  <thead><tr><th>Status</th><th>Message</th><th>Route</th><th class="num">Attempts</th><th>Last error</th><th>Created</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`
}
<nav class="pager" aria-label="Pages">
  ${cursor ? html`<a class="btn" href="/ui/events${listQuery(filter)}">← First page</a>` : ""}
  ${result.next_cursor ? html`<a class="btn" rel="next" href="/ui/events${listQuery({ ...filter, cursor: result.next_cursor })}">Older events →</a>` : ""}
</nav>`;
  return htmlResponse(
    page({
      title: "Events",
      section: "events",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(query.notice),
    }),
  );
}

/** "Replay all matching": queues a bulk replay of the list's filter and returns to the list. */
async function replayMatching(req: UiRequest): Promise<Response> {
  const status = field(req.body, "status");
  const routeId = field(req.body, "route_id").slice(0, 200);
  const from = dayOf(field(req.body, "from"));
  const to = dayOf(field(req.body, "to"));
  const filter = {
    ...(isEventStatus(status) ? { status: [status] } : {}),
    ...(routeId ? { route_id: routeId } : {}),
    ...(from ? { since: `${from}T00:00:00Z` } : {}),
    ...(to ? { until: nextDay(to) } : {}),
  };
  const back = listQuery({
    ...(isEventStatus(status) ? { status } : {}),
    ...(routeId ? { routeId } : {}),
    ...(from ? { from } : {}),
    ...(to ? { to } : {}),
  });
  if (Object.keys(filter).length === 0) return redirect(`/ui/events${back}`);
  await startBulkReplay(req.ctx, req.projectId, { filter });
  return redirect(`/ui/events${back}${back ? "&" : "?"}notice=bulk-replay-queued`);
}

/** GET `/ui/events`, POST `/ui/events/replay`. */
export function eventListPages(ctx: AppContext) {
  return new Elysia()
    .get("/events", uiHandler(ctx, eventsPage))
    .post("/events/replay", uiHandler(ctx, replayMatching));
}
