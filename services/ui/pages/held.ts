/**
 * The hold queue (docs/dashboard.md, "Held"): the events the project's intake policy held, newest
 * first, each released or discarded alone or several at once. Every action asks for confirmation and
 * the page then reports what happened, including events someone else released or discarded meanwhile.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError } from "../../lib/errors.ts";
import { isUuid } from "../../lib/ids.ts";
import { discardHeldEvent, releaseHeldEvent } from "../../resources/hold-queue.ts";
import { listRoutes } from "../../resources/routes.ts";
import { eventPage, subjectsOf } from "../data.ts";
import { type UiRequest, uiHandler } from "../guard.ts";
import { html, type SafeHtml } from "../html.ts";
import { csrfField, page, time } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";

/** Events shown (and acted on) at once. */
const HELD_PAGE_SIZE = 100;

/** The outcome counts a redirect carries back (numbers only: nothing typed by a user is echoed). */
function report(query: Record<string, string | undefined>): SafeHtml {
  const n = (key: string) => {
    const v = Number.parseInt(query[key] ?? "", 10);
    return Number.isFinite(v) && v >= 0 ? v : 0;
  };
  const released = n("released");
  const discarded = n("discarded");
  const skipped = n("skipped");
  if (released + discarded + skipped === 0) return html``;
  const parts: string[] = [];
  if (released) parts.push(`Released ${released} event${released === 1 ? "" : "s"}: delivery follows.`);
  if (discarded) parts.push(`Discarded ${discarded} event${discarded === 1 ? "" : "s"}.`);
  if (skipped)
    parts.push(`${skipped} ${skipped === 1 ? "was" : "were"} no longer held and left as they are.`);
  return html`<p class="notice" role="status" id="held-report">${parts.join(" ")}</p>`;
}

async function heldPage(req: UiRequest): Promise<Response> {
  const { ctx, projectId } = req;
  const [result, routes] = await Promise.all([
    eventPage(ctx, projectId, { status: "held", limit: HELD_PAGE_SIZE }),
    listRoutes(ctx, projectId),
  ]);
  const subjects = await subjectsOf(
    ctx,
    projectId,
    result.items.map((e) => e.id),
  );
  const routeName = new Map(routes.map((r) => [r.id, r.name]));
  const rows = result.items.map(
    (e) => html`<tr>
  <td><input type="checkbox" name="event_id" value="${e.id}" aria-label="Select"></td>
  <td><a href="/ui/events/${e.id}" class="row-link">${subjects.get(e.id) || html`<span class="muted">(no subject)</span>`}</a>
    <div class="muted small mono">${e.id}</div></td>
  <td>${routeName.get(e.route_id) ?? html`<span class="mono small">${e.route_id}</span>`}</td>
  <td class="nowrap small">${time(e.created_at)}</td>
  <td class="nowrap right">
    <button type="submit" class="btn small" formaction="/ui/held/release?id=${e.id}">Release</button>
    <button type="submit" class="btn small danger" formaction="/ui/held/discard?id=${e.id}">Discard</button>
  </td>
</tr>`,
  );
  const body = html`<header class="page-header">
  <h1>Held</h1>
  <p class="muted">Messages your project's intake policy held. Nothing is sent until you release them; discarded events are never sent.</p>
</header>
${report(req.query)}
${
  result.items.length === 0
    ? html`<div class="empty">No held events.</div>`
    : html`<form method="post" action="/ui/held/release" id="held-form" data-confirm="Apply this to the chosen held events? Released events are delivered; discarded ones are not.">
  ${csrfField(req.csrf)}
  <div class="actions">
    <button type="submit" class="btn primary" formaction="/ui/held/release">Release selected</button>
    <button type="submit" class="btn danger" formaction="/ui/held/discard">Discard selected</button>
  </div>
  <table class="table" id="held">
    <thead><tr><th></th><th>Message</th><th>Route</th><th>Held since</th><th></th></tr></thead>
    <tbody>${rows}</tbody>
  </table>
</form>`
}`;
  return htmlResponse(page({ title: "Held", section: "held", project: req.project, csrf: req.csrf, body }));
}

/** The ids a form names: `?id=` (one row's button) or the checked `event_id` boxes. */
function chosen(req: UiRequest): string[] {
  const one = req.query.id;
  if (one) return [one];
  const raw = (req.body as Record<string, unknown> | null)?.event_id;
  const list = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw];
  return list.filter((v): v is string => typeof v === "string").slice(0, HELD_PAGE_SIZE);
}

function act(ctx: AppContext, action: "release" | "discard") {
  return uiHandler(ctx, async (req) => {
    let done = 0;
    let skipped = 0;
    for (const id of chosen(req)) {
      if (!isUuid(id)) {
        skipped++;
        continue;
      }
      try {
        await (action === "release" ? releaseHeldEvent : discardHeldEvent)(ctx, req.projectId, id);
        done++;
      } catch (err) {
        if (!(err instanceof AppError) || (err.code !== "events.not_held" && err.code !== "events.not_found"))
          throw err;
        skipped++;
      }
    }
    if (action === "release" && done > 0) ctx.ingest.wake.request();
    const key = action === "release" ? "released" : "discarded";
    return redirect(`/ui/held?${key}=${done}&skipped=${skipped}`);
  });
}

/** GET `/ui/held`, POST `/ui/held/release` and `/ui/held/discard`. */
export function heldPages(ctx: AppContext) {
  return new Elysia()
    .get("/held", uiHandler(ctx, heldPage))
    .post("/held/release", act(ctx, "release"))
    .post("/held/discard", act(ctx, "discard"));
}
