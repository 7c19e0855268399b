/**
 * Domains: the project's own receiving domains and their addresses (docs/ingest.md, "Your own
 * domains"). List, add with the DNS records to set (the MX, and the TXT record proving the domain is
 * this project's), verify (the result of the check is shown: what was found when it fails),
 * catch-all on/off, add and delete addresses, delete a domain. Every action asks before it acts where it
 * takes something away, and the page that answers says what happened.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError } from "../../lib/errors.ts";
import {
  createAddress,
  createDomain,
  type DomainView,
  deleteAddress,
  deleteDomain,
  listAddresses,
  listDomains,
  updateDomain,
  verifyDomain,
} from "../../resources/domains.ts";
import { field, type UiRequest, uiHandler } from "../guard.ts";
import { html, type SafeHtml } from "../html.ts";
import { csrfField, noticeText, page, time } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";

/** What the page answering an action reports: a success line, or an error with its details. */
interface Report {
  notice?: string;
  error?: { message: string; details?: string[] };
  status?: number;
}

function statusBadge(d: DomainView): SafeHtml {
  return d.verified
    ? html`<span class="badge badge-ok">verified</span>`
    : html`<span class="badge badge-pending">not verified</span>`;
}

function lastCheck(d: DomainView): SafeHtml | "" {
  if (!d.last_check) return html`<span class="muted small">not checked yet</span>`;
  const c = d.last_check;
  return html`<div class="small break">${c.ok ? "MX and TXT records found" : (c.problem ?? "failed")}
  <span class="muted">(${time(c.checked_at)})</span></div>`;
}

async function domainsPage(req: UiRequest, report: Report = {}): Promise<Response> {
  const { ctx, projectId, csrf } = req;
  const [domains, addresses] = await Promise.all([
    listDomains(ctx, projectId),
    listAddresses(ctx, projectId),
  ]);
  const verified = domains.filter((d) => d.verified);
  const csrfInput = csrfField(csrf);
  const domainRows = domains.map(
    (d) => html`<tr data-domain="${d.domain}">
    <td class="mono">${d.domain}</td>
    <td>${statusBadge(d)}${d.catch_all ? html` <span class="tag">catch-all</span>` : ""}</td>
    <td class="mono small">${d.dns.map(
      (r) =>
        html`<div data-record="${r.type}">${r.type === "MX" ? html`MX ${r.name} → ${r.value}` : html`TXT ${r.name} <span class="break">"${r.value}"</span>`}</div>`,
    )}</td>
    <td>${lastCheck(d)}</td>
    <td class="right nowrap">
      <form method="post" action="/ui/domains/${d.id}/verify" class="inline">${csrfInput}<button type="submit" class="btn small">Verify</button></form>
      <form method="post" action="/ui/domains/${d.id}/catch-all" class="inline" data-confirm="${
        d.catch_all
          ? `Turn catch-all off for ${d.domain}? Only its addresses will receive mail.`
          : `Turn catch-all on for ${d.domain}? Mail to any address at it will be accepted.`
      }">${csrfInput}<input type="hidden" name="catch_all" value="${d.catch_all ? "off" : "on"}"><button type="submit" class="btn small">${d.catch_all ? "Catch-all off" : "Catch-all on"}</button></form>
      <form method="post" action="/ui/domains/${d.id}/delete" class="inline" data-confirm="Delete ${d.domain} and its addresses? Their mail will be refused.">${csrfInput}<button type="submit" class="btn danger small">Delete</button></form>
    </td>
  </tr>`,
  );
  const addressRows = addresses.map(
    (a) => html`<tr data-address="${a.address}">
    <td class="mono">${a.address}</td>
    <td class="small">${time(a.created_at)}</td>
    <td class="right"><form method="post" action="/ui/addresses/${a.id}/delete" data-confirm="Delete ${a.address}? Its mail will be refused.">${csrfInput}<button type="submit" class="btn danger small">Delete</button></form></td>
  </tr>`,
  );
  const body = html`<header class="page-header">
  <h1>Domains</h1>
  <p class="muted">Receive mail at your own domains. Set an MX record of the domain pointing at <code>${ctx.config.inboundDomain}</code> and the TXT record shown for it (it proves the domain is yours: the first project to verify a domain owns it), then verify it. Any <code>+tag</code> is accepted on every address.</p>
</header>
${report.error ? html`<div class="alert" role="alert">${report.error.message}${report.error.details?.length ? html`<ul class="field-errors">${report.error.details.map((d) => html`<li>${d}</li>`)}</ul>` : ""}</div>` : ""}
<section>
<h2>Domains</h2>
${
  domains.length === 0
    ? html`<div class="empty">No domains yet.</div>`
    : html`<div class="table-wrap"><table class="table" id="domains">
  <thead><tr><th>Domain</th><th>Status</th><th>DNS records to set</th><th>Last check</th><th></th></tr></thead>
  <tbody>${domainRows}</tbody>
</table></div>`
}
<form method="post" action="/ui/domains" class="form" id="add-domain">${csrfInput}
  <label>Domain <input name="domain" required placeholder="example.com" autocomplete="off"></label>
  <div class="checkbox-row"><label><input type="checkbox" name="catch_all" value="on"> Catch-all (accept any address at the domain once verified)</label></div>
  <button type="submit" class="btn primary">Add domain</button>
</form>
</section>
<section>
<h2>Addresses</h2>
${
  addresses.length === 0
    ? html`<div class="empty">No addresses yet.</div>`
    : html`<div class="table-wrap"><table class="table" id="addresses">
  <thead><tr><th>Address</th><th>Created</th><th></th></tr></thead>
  <tbody>${addressRows}</tbody>
</table></div>`
}
${
  verified.length === 0
    ? html`<p class="muted">Addresses can be added once a domain is verified.</p>`
    : html`<form method="post" action="/ui/addresses" class="form" id="add-address">${csrfInput}
  <label>Address <input name="address" required placeholder="support@${verified[0]?.domain ?? "example.com"}" autocomplete="off"></label>
  <button type="submit" class="btn primary">Add address</button>
</form>`
}
</section>`;
  return htmlResponse(
    page({
      title: "Domains",
      section: "domains",
      project: req.project,
      csrf,
      body,
      notice: report.notice ?? noticeText(req.query.notice),
    }),
    report.status ?? 200,
  );
}

/** Runs a resource action; a refusal (an AppError) is shown on the page with its status. */
async function act(req: UiRequest, action: () => Promise<string | Response>): Promise<Response> {
  try {
    const done = await action();
    return typeof done === "string" ? domainsPage(req, { notice: done }) : done;
  } catch (err) {
    if (!(err instanceof AppError) || (err.status >= 500 && err.code !== "domains.dns_failed")) throw err;
    return domainsPage(req, {
      error: { message: err.message, details: (err.details ?? []).map((d) => d.message) },
      status: err.status,
    });
  }
}

/** GET/POST `/ui/domains`, POST `/ui/domains/:id/{verify,catch-all,delete}`, POST `/ui/addresses[/:id/delete]`. */
export function domainPages(ctx: AppContext) {
  return new Elysia()
    .get(
      "/domains",
      uiHandler(ctx, (req) => domainsPage(req)),
    )
    .post(
      "/domains",
      uiHandler(ctx, (req) =>
        act(req, async () => {
          const d = await createDomain(ctx, req.projectId, {
            domain: field(req.body, "domain"),
            catch_all: field(req.body, "catch_all") === "on",
          });
          const txt = d.dns.find((r) => r.type === "TXT");
          return `Domain ${d.domain} added. Set its MX record to ${ctx.config.inboundDomain} and the TXT record ${txt?.name} to "${txt?.value}", then verify it.`;
        }),
      ),
    )
    .post(
      "/domains/:id/verify",
      uiHandler(ctx, (req) =>
        act(req, async () => {
          const d = await verifyDomain(ctx, req.projectId, req.params.id ?? "");
          return `${d.domain} is verified: its MX points at ${ctx.config.inboundDomain} and its TXT record proves it is this project's.`;
        }),
      ),
    )
    .post(
      "/domains/:id/catch-all",
      uiHandler(ctx, (req) =>
        act(req, async () => {
          const on = field(req.body, "catch_all") === "on";
          const d = await updateDomain(ctx, req.projectId, req.params.id ?? "", { catch_all: on });
          return on
            ? `Catch-all is on for ${d.domain}${d.verified ? "" : " (it takes mail once verified)"}.`
            : `Catch-all is off for ${d.domain}: only its addresses receive mail.`;
        }),
      ),
    )
    .post(
      "/domains/:id/delete",
      uiHandler(ctx, (req) =>
        act(req, async () => {
          await deleteDomain(ctx, req.projectId, req.params.id ?? "");
          return redirect("/ui/domains?notice=domain-deleted");
        }),
      ),
    )
    .post(
      "/addresses",
      uiHandler(ctx, (req) =>
        act(req, async () => {
          const a = await createAddress(ctx, req.projectId, { address: field(req.body, "address") });
          return `Address ${a.address} added.`;
        }),
      ),
    )
    .post(
      "/addresses/:id/delete",
      uiHandler(ctx, (req) =>
        act(req, async () => {
          await deleteAddress(ctx, req.projectId, req.params.id ?? "");
          return redirect("/ui/domains?notice=address-deleted");
        }),
      ),
    );
}
