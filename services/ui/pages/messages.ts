/**
 * The stored messages: a searchable list (full-text `q`, sender, recipient, subject, a range of days,
 * cursor paging) and one message — headers, text, a sandboxed HTML preview, attachments with download
 * links, the raw source, its events — with the Erase button (`DELETE /v1/messages/{message_id}`).
 *
 * The HTML preview is an `<iframe sandbox srcdoc>`: no `allow-scripts`, no `allow-same-origin`, so the
 * mail's HTML runs no script, submits no form and reads nothing of the dashboard. The srcdoc inherits the
 * dashboard's CSP and carries its own (`<meta http-equiv>`): no script, no fetch, images only from `data:`,
 * so remote content (tracking pixels, fonts, style sheets) is never loaded.
 */
import { Elysia } from "elysia";
import { issueDownloadUrl } from "../../attachments/tokens.ts";
import type { AppContext } from "../../context.ts";
import {
  getMessage,
  type ListMessagesQuery,
  listMessages,
  rawMessageOf,
} from "../../resources/message-archive.ts";
import { eraseMessage } from "../../resources/message-erasure.ts";
import { type UiRequest, uiHandler } from "../guard.ts";
import { escapeHtml, html, type SafeHtml } from "../html.ts";
import { badge, csrfField, noticeText, page, time } from "../layout.ts";
import { htmlResponse, redirect, securityHeaders } from "../respond.ts";

const PAGE_SIZE = 25;

/** The CSP inside the preview's srcdoc: nothing may load or run but inline styles and `data:` images. */
const PREVIEW_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'";

interface Filter {
  q?: string;
  sender?: string;
  recipient?: string;
  subject?: string;
  /** YYYY-MM-DD (UTC days, both included) */
  since?: string;
  until?: string;
  cursor?: string;
}

function listQuery(filter: Filter): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A `YYYY-MM-DD` date field, or undefined when empty or not a date. */
function dayOf(value: string | undefined): string | undefined {
  return value && /^\d{4}-\d{2}-\d{2}$/.test(value) && !Number.isNaN(Date.parse(value)) ? value : undefined;
}

function text(value: string | undefined, max: number): string | undefined {
  return value?.trim().slice(0, max) || undefined;
}

function people(list: { email: string; name: string }[]): SafeHtml {
  if (list.length === 0) return html`<span class="muted">—</span>`;
  return html`${list.map((p, i) => html`${i > 0 ? ", " : ""}${p.name ? html`${p.name} <span class="muted">&lt;${p.email}&gt;</span>` : p.email}`)}`;
}

function kib(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`;
}

async function listPage(req: UiRequest): Promise<Response> {
  const { ctx, projectId, query } = req;
  const filter: Filter = {};
  const q = text(query.q, 500);
  const sender = text(query.sender, 320);
  const recipient = text(query.recipient, 320);
  const subject = text(query.subject, 500);
  const since = dayOf(query.since);
  const until = dayOf(query.until);
  const cursor = text(query.cursor, 500);
  if (q) filter.q = q;
  if (sender) filter.sender = sender;
  if (recipient) filter.recipient = recipient;
  if (subject) filter.subject = subject;
  if (since) filter.since = since;
  if (until) filter.until = until;
  const asked: ListMessagesQuery = { limit: PAGE_SIZE };
  if (q) asked.q = q;
  if (sender) asked.from = sender;
  if (recipient) asked.to = recipient;
  if (subject) asked.subject = subject;
  if (since) asked.since = `${since}T00:00:00.000Z`;
  if (until) asked.until = `${until}T23:59:59.999Z`;
  if (cursor) asked.cursor = cursor;
  const result = await listMessages(ctx, projectId, asked);
  const filtered = Object.keys(filter).length > 0;

  const rows = result.items.map(
    (m) => html`<tr>
  <td><a href="/ui/messages/${m.id}" class="row-link">${m.subject || html`<span class="muted">(no subject)</span>`}</a>
    <div class="muted small mono">${m.message_id}</div></td>
  <td>${people(m.from)}</td>
  <td>${people(m.to)}</td>
  <td class="num">${m.attachments_count}</td>
  <td>${m.events.map((e) => html`<a href="/ui/events/${e.id}" title="event ${e.id}">${badge(e.status)}</a> `)}</td>
  <td class="nowrap small">${time(m.received_at)}</td>
</tr>`,
  );

  const body = html`<header class="page-header">
  <h1>Messages</h1>
  <p class="muted">Stored mail, newest first. Open one to see it, download it or erase it.</p>
</header>
<form method="get" action="/ui/messages" class="filters" role="search">
  <label>Search
    <input type="search" name="q" value="${q ?? ""}" placeholder="words in subject, addresses, text" maxlength="500">
  </label>
  <label>From
    <input type="text" name="sender" value="${sender ?? ""}" maxlength="320">
  </label>
  <label>To
    <input type="text" name="recipient" value="${recipient ?? ""}" maxlength="320">
  </label>
  <label>Subject
    <input type="text" name="subject" value="${subject ?? ""}" maxlength="500">
  </label>
  <label>From day
    <input type="date" name="since" value="${since ?? ""}">
  </label>
  <label>To day
    <input type="date" name="until" value="${until ?? ""}">
  </label>
  <button type="submit" class="btn">Search</button>
  ${filtered ? html`<a href="/ui/messages" class="btn link">Clear</a>` : ""}
</form>
${
  result.items.length === 0
    ? html`<div class="empty">${filtered || cursor ? "No messages match." : "No messages yet. Send one to your project's inbound address or POST it to /v1/messages."}</div>`
    : html`<table class="table" id="messages">
  <thead><tr><th>Message</th><th>From</th><th>To</th><th class="num">Attachments</th><th>Events</th><th>Received</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`
}
<nav class="pager" aria-label="Pages">
  ${cursor ? html`<a class="btn" href="/ui/messages${listQuery(filter)}">← First page</a>` : ""}
  ${result.next_cursor ? html`<a class="btn" rel="next" href="/ui/messages${listQuery({ ...filter, cursor: result.next_cursor })}">Older messages →</a>` : ""}
</nav>`;
  return htmlResponse(
    page({
      title: "Messages",
      section: "messages",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(query.notice),
    }),
  );
}

/** The srcdoc of the HTML preview: the mail's HTML under its own CSP (see the module comment). */
function previewDocument(mailHtml: string): string {
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${escapeHtml(PREVIEW_CSP)}"><meta name="referrer" content="no-referrer"></head><body>${mailHtml}</body></html>`;
}

interface AttachmentDescriptor {
  id: string;
  filename?: string | null;
  content_type?: string;
  size?: number;
}

async function detailPage(req: UiRequest): Promise<Response> {
  const m = await getMessage(req.ctx, req.projectId, req.params.id ?? "");
  const atts = m.attachments as AttachmentDescriptor[];
  const headers = Object.entries(m.headers);
  const body = html`<header class="page-header with-actions">
  <div>
    <p class="crumbs"><a href="/ui/messages">Messages</a> /</p>
    <h1>${m.subject || "(no subject)"}</h1>
    <p class="muted mono small break">${m.id} · ${m.message_id}</p>
  </div>
  <form method="post" action="/ui/messages/${m.id}/erase" data-confirm="Erase this message for good? Its content, raw source, attachments, webhook bodies and attempt captures are deleted; its events remain without it. This cannot be undone.">
    ${csrfField(req.csrf)}
    <a class="btn" href="/ui/messages/${m.id}/raw" id="raw-download" download>Download raw</a>
    <button type="submit" class="btn danger" id="erase">Erase</button>
  </form>
</header>
<div class="cards">
  <section class="card">
    <h3>Message</h3>
    <dl class="dl">
      <dt>From</dt><dd>${people(m.from)}</dd>
      <dt>To</dt><dd>${people(m.to)}</dd>
      <dt>Received</dt><dd>${time(m.received_at)}</dd>
      <dt>Source</dt><dd><span class="tag">${m.source_type}</span> ${kib(m.size_bytes)}</dd>
    </dl>
  </section>
  <section class="card" id="message-events">
    <h3>Events</h3>
    ${
      m.events.length === 0
        ? html`<p class="muted small">No route matched this message.</p>`
        : html`<ul class="small">${m.events.map((e) => html`<li><a href="/ui/events/${e.id}">${badge(e.status)} <span class="mono">${e.id}</span></a></li>`)}</ul>`
    }
  </section>
  <section class="card" id="attachments">
    <h3>Attachments</h3>
    ${
      atts.length === 0
        ? html`<p class="muted small">None.</p>`
        : html`<ul class="small">${atts.map((a) => html`<li><a href="/ui/messages/${m.id}/attachments/${encodeURIComponent(a.id)}">${a.filename || a.id}</a> <span class="muted">${a.content_type ?? ""} · ${kib(a.size ?? 0)}</span></li>`)}</ul>`
    }
  </section>
</div>
<h2>Text</h2>
${m.text ? html`<pre class="code" id="message-text" tabindex="0">${m.text}</pre>` : html`<p class="muted">No text part.</p>`}
<h2>HTML preview</h2>
${
  m.html
    ? html`<p class="muted small">Shown without scripts and without remote content (images, fonts and styles from the internet are not loaded).</p>
<iframe class="mail-preview" id="html-preview" title="HTML preview of the message" sandbox="" referrerpolicy="no-referrer" srcdoc="${previewDocument(m.html)}"></iframe>`
    : html`<p class="muted">No HTML part.</p>`
}
<details id="headers"><summary>Headers <span class="count">${headers.length}</span></summary>
<table class="kv small">${headers.map(([k, v]) => html`<tr><th class="mono">${k}</th><td class="mono">${v}</td></tr>`)}</table>
</details>`;
  return htmlResponse(
    page({
      title: m.subject || "Message",
      section: "messages",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(req.query.notice),
    }),
  );
}

/** The raw message as a download (same bytes as `GET /v1/messages/{message_id}/raw`). */
async function rawDownload(req: UiRequest): Promise<Response> {
  const { id, bytes } = await rawMessageOf(req.ctx, req.projectId, req.params.id ?? "");
  return new Response(bytes as Uint8Array<ArrayBuffer>, {
    headers: {
      ...securityHeaders(),
      "content-type": "message/rfc822",
      "content-disposition": `attachment; filename="${id}.eml"`,
    },
  });
}

/** Issues a single-use download URL for the attachment and sends the browser to it. */
async function attachmentDownload(req: UiRequest): Promise<Response> {
  const issued = await issueDownloadUrl(req.ctx, {
    projectId: req.projectId,
    messageId: req.params.id ?? "",
    attachmentId: req.params.attachment ?? "",
    multiUse: false,
  });
  // An app URL is followed on this origin (PUBLIC_BASE_URL may name another host for API clients).
  const url = new URL(issued.url);
  const base = new URL(req.ctx.config.publicBaseUrl);
  const location = url.origin === base.origin ? `${url.pathname}${url.search}` : issued.url;
  return new Response(null, { status: 303, headers: { ...securityHeaders(), location } });
}

async function erase(req: UiRequest): Promise<Response> {
  await eraseMessage(req.ctx, req.projectId, req.params.id ?? "");
  return redirect("/ui/messages?notice=message-erased");
}

/** GET `/ui/messages`, `/ui/messages/:id`, `…/raw`, `…/attachments/:attachment`; POST `…/erase`. */
export function messagePages(ctx: AppContext) {
  return new Elysia()
    .get("/messages", uiHandler(ctx, listPage))
    .get("/messages/:id", uiHandler(ctx, detailPage))
    .get("/messages/:id/raw", uiHandler(ctx, rawDownload))
    .get("/messages/:id/attachments/:attachment", uiHandler(ctx, attachmentDownload))
    .post("/messages/:id/erase", uiHandler(ctx, erase));
}
