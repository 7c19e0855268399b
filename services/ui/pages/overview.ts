/**
 * The Overview, the dashboard's home: the last 24 hours at a glance — messages in, delivery attempts by
 * outcome, p50/p99 delivery latency, and the endpoints that are failing. The numbers are in the page
 * as tables (readable without script, and by screen readers); `overview.js` draws the same numbers as
 * charts with uPlot, served by the dashboard itself.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { projectOverview } from "../../resources/overview.ts";
import { type UiRequest, uiHandler } from "../guard.ts";
import { html, unsafeRaw } from "../html.ts";
import { page, time } from "../layout.ts";
import { htmlResponse } from "../respond.ts";

const percent = (x: number) => `${Math.round(x * 1000) / 10} %`;
const ms = (x: number | null) => (x === null ? "—" : `${x} ms`);

async function overviewPage(req: UiRequest): Promise<Response> {
  const o = await projectOverview(req.ctx, req.projectId, req.ctx.clock.now());
  const rate = o.totals.attempts ? percent(o.totals.delivered / o.totals.attempts) : "—";
  // The chart data travels as JSON in a non-executed script element (the page's CSP allows no inline script).
  const data = JSON.stringify({
    hours: o.hours.map((h) => Date.parse(h.hour) / 1000),
    messages: o.hours.map((h) => h.messages),
    delivered: o.hours.map((h) => h.delivered),
    failed: o.hours.map((h) => h.failed),
  }).replace(/</g, "\\u003c");
  const body = html`<header class="page-header">
  <h1>Overview</h1>
  <p class="muted">The last 24 hours, from ${time(o.since)} to ${time(o.until)}.</p>
</header>
<section class="tiles" aria-label="Totals">
  <div class="tile"><div class="tile-label">Messages in</div><div class="tile-value">${o.totals.messages}</div></div>
  <div class="tile"><div class="tile-label">Attempts delivered</div><div class="tile-value">${o.totals.delivered}</div></div>
  <div class="tile"><div class="tile-label">Attempts failed</div><div class="tile-value${o.totals.failed ? " bad" : ""}">${o.totals.failed}</div></div>
  <div class="tile"><div class="tile-label">Success rate</div><div class="tile-value">${rate}</div></div>
  <div class="tile"><div class="tile-label">Latency p50 / p99</div><div class="tile-value">${ms(o.latency_ms.p50)} / ${ms(o.latency_ms.p99)}</div></div>
  <div class="tile"><div class="tile-label">Events dead</div><div class="tile-value${o.totals.dead_events ? " bad" : ""}"><a href="/ui/events?status=dead">${o.totals.dead_events}</a></div></div>
</section>
<script type="application/json" id="overview-data">${unsafeRaw(data)}</script>
<section class="charts">
  <figure class="chart-card">
    <figcaption>Messages in, per hour</figcaption>
    <div class="chart" data-chart="messages" role="img" aria-label="Messages received per hour over the last 24 hours"></div>
  </figure>
  <figure class="chart-card">
    <figcaption>Delivery attempts by outcome, per hour</figcaption>
    <div class="chart" data-chart="deliveries" role="img" aria-label="Delivery attempts per hour, delivered and failed"></div>
  </figure>
</section>
<section>
  <h2>Failing endpoints</h2>
  ${
    o.failing_endpoints.length === 0
      ? html`<div class="empty">No failed attempts in the last 24 hours.</div>`
      : html`<div class="table-wrap"><table class="table">
  <thead><tr><th>Endpoint</th><th class="num">Attempts</th><th class="num">Failed</th><th class="num">Success rate</th><th>Last error</th></tr></thead>
  <tbody>${o.failing_endpoints.map(
    (e) => html`<tr>
    <td><a href="/ui/endpoints/${e.endpoint_id}">${e.url}</a><div class="muted small mono">${e.endpoint_id}</div></td>
    <td class="num">${e.attempts}</td><td class="num">${e.failures}</td><td class="num">${percent(e.success_rate)}</td>
    <td class="small mono">${e.last_error ?? ""}</td>
  </tr>`,
  )}</tbody>
</table></div>`
  }
</section>
<details class="hourly">
  <summary>Hourly numbers</summary>
  <div class="table-wrap"><table class="table">
    <thead><tr><th>Hour (UTC)</th><th class="num">Messages</th><th class="num">Delivered</th><th class="num">Failed</th></tr></thead>
    <tbody>${o.hours.map((h) => html`<tr><td>${time(h.hour)}</td><td class="num">${h.messages}</td><td class="num">${h.delivered}</td><td class="num">${h.failed}</td></tr>`)}</tbody>
  </table></div>
</details>`;
  return htmlResponse(
    page({
      title: "Overview",
      section: "overview",
      project: req.project,
      csrf: req.csrf,
      body,
      scripts: ["/ui/assets/uplot.js", "/ui/assets/overview.js"],
      styles: ["/ui/assets/uplot.css"],
    }),
  );
}

/** GET `/ui/overview`. */
export function overviewPages(ctx: AppContext) {
  return new Elysia().get("/overview", uiHandler(ctx, overviewPage));
}
