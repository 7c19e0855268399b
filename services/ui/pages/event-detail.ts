/**
 * One event: status, message summary, route snapshot, every attempt's request and response captures
 * (as stored, i.e. already redacted), and the Replay button. While the event is pending or retrying the
 * page script polls `status.json` and reloads when something changed.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError } from "../../lib/errors.ts";
import { isReplayable } from "../../lib/event-status.ts";
import type { Person } from "../../lib/message.ts";
import { type AttemptView, type EventDetailView, eventWithAttempts, replayEvent } from "../data.ts";
import { type UiRequest, uiHandler } from "../guard.ts";
import { html, prettyJson, type SafeHtml } from "../html.ts";
import { badge, csrfField, noticeText, page, time } from "../layout.ts";
import { htmlResponse, jsonResponse, redirect } from "../respond.ts";

function people(list: Person[]): SafeHtml {
  if (list.length === 0) return html`<span class="muted">—</span>`;
  return html`${list.map((p, i) => html`${i > 0 ? ", " : ""}${p.name ? html`${p.name} <span class="muted">&lt;${p.email}&gt;</span>` : p.email}`)}`;
}

function headersTable(headers: Record<string, string>): SafeHtml {
  const entries = Object.entries(headers);
  if (entries.length === 0) return html`<p class="muted small">No headers.</p>`;
  return html`<table class="kv small">${entries.map(
    ([k, v]) => html`<tr><th class="mono">${k}</th><td class="mono">${v}</td></tr>`,
  )}</table>`;
}

/** One attempt, collapsed to its summary line unless `open` (the newest is open). */
function attemptCard(a: AttemptView, open: boolean): SafeHtml {
  const req = a.request_capture;
  const res = a.response_capture;
  return html`<details class="attempt" id="attempt-${a.number}" data-attempt="${a.number}"${open ? " open" : ""}>
  <summary class="attempt-header">
    <strong>Attempt ${a.number}</strong>
    ${badge(a.status)}
    <span class="tag">${a.trigger}</span>
    <span class="muted">HTTP ${a.http_status || "—"} · ${a.latency_ms} ms · ${time(a.created_at)}</span>
  </summary>
  <div class="capture-grid">
    <section>
      <h4>Request</h4>
      <p class="mono small break">${req.method} ${req.url}</p>
      ${headersTable(req.headers)}
      <pre class="code" tabindex="0">${prettyJson(req.body_preview)}</pre>
    </section>
    <section>
      <h4>Response</h4>
      ${res.network_error ? html`<p class="error-text">Network error: ${res.network_error}</p>` : html`<p class="mono small">Status ${res.status}</p>`}
      ${headersTable(res.headers)}
      ${res.body_preview ? html`<pre class="code" tabindex="0">${prettyJson(res.body_preview)}</pre>` : html`<p class="muted small">Empty body.</p>`}
    </section>
  </div>
</details>`;
}

type Understanding = NonNullable<NonNullable<EventDetailView["message"]>["mail"]>;

/** One authentication verdict as a badge: green for pass, red for fail, grey for anything else. */
function authBadge(label: string, result: string): SafeHtml {
  const tone = result === "pass" ? "ok" : result === "fail" || result === "softfail" ? "failed" : "disabled";
  return html`<span class="badge badge-${tone}" data-auth="${label.toLowerCase()}">${label} ${result}</span>`;
}

/** What the service understands about the message: thread, automation, reply, forward, auth, spam. */
function understandingPanel(mail: Understanding): SafeHtml {
  const dkim = mail.auth.dkim;
  const dkimResult =
    dkim.length === 0 ? "none" : dkim.some((d) => d.result === "pass") ? "pass" : dkim[0]?.result;
  const fwd = mail.forwarded;
  return html`<section class="card" id="understanding">
    <h3>Understanding</h3>
    ${mail.message_id_conflict ? html`<p class="error-text small" id="conflict-warning">Another stored message has this Message-ID with different content: this may be a forged or altered copy.</p>` : ""}
    <dl class="dl">
      <dt>Thread</dt><dd class="mono small break">${mail.thread_id}</dd>
      <dt>Automated</dt><dd><span class="tag" id="auto-kind">${mail.auto.kind}</span></dd>
      <dt>Authentication</dt><dd>${authBadge("SPF", mail.auth.spf.result)} ${authBadge("DKIM", dkimResult ?? "none")} ${authBadge("DMARC", mail.auth.dmarc.result)} <span class="muted small">(${mail.auth.source})</span></dd>
      <dt>Spam score</dt><dd id="spam-score">${mail.spam === null ? html`<span class="muted">not scanned</span>` : html`${String(mail.spam.score)} <span class="muted small">${mail.spam.action}</span>`}</dd>
      <dt>Forwarded</dt><dd>${fwd === null ? html`<span class="muted">—</span>` : html`${fwd.subject || "(no subject)"} <span class="muted small">from ${people(fwd.from)}</span>`}</dd>
    </dl>
    <details><summary>Reply text <span class="muted small">(${mail.text_source})</span></summary><pre class="code" id="reply-text">${mail.reply_text}</pre></details>
  </section>`;
}

/** The attachment policy's notes: what was stripped or let through, and why. */
function policyNotesPanel(notes: EventDetailView["policy_notes"]): SafeHtml {
  if (notes.length === 0) return html``;
  return html`<section class="card" id="policy-notes">
    <h3>Attachment policy</h3>
    <ul class="small">${notes.map((n) => html`<li><span class="tag">${n.action === "strip" ? "stripped" : "delivered"}</span> <span class="mono">${n.filename || n.attachment_id}</span> — ${n.detail}</li>`)}</ul>
  </section>`;
}

function detailBody(e: EventDetailView, attempts: AttemptView[], csrf: string): SafeHtml {
  // An event whose message was erased keeps its status and attempt log but cannot be sent again.
  const replayable = isReplayable(e.status) && e.message !== null;
  return html`<header class="page-header with-actions">
  <div>
    <p class="crumbs"><a href="/ui/events">Events</a> /</p>
    <h1>${e.message ? e.message.subject || "(no subject)" : "(message erased)"} ${badge(e.status)}</h1>
    <p class="muted mono small">${e.id}</p>
  </div>
  ${
    e.status === "held"
      ? html`<form method="post" action="/ui/held/release?id=${e.id}" data-confirm="Release this held event? It is delivered now.">
    ${csrfField(csrf)}
    <button type="submit" class="btn primary" id="release">Release</button>
    <button type="submit" class="btn danger" id="discard" formaction="/ui/held/discard?id=${e.id}">Discard</button>
  </form>`
      : html`<form method="post" action="/ui/events/${e.id}/replay" data-confirm="Replay this event now? It is delivered again with the same idempotency key.">
    ${csrfField(csrf)}
    <button type="submit" class="btn primary" id="replay"${replayable ? "" : e.message === null ? html` disabled title="The message was erased: there is nothing to send again"` : html` disabled title="Replay is possible once delivery has finished"`}>Replay</button>
  </form>`
  }
</header>
${e.status === "pending" || e.status === "retry" ? html`<p class="live muted small" id="live">Delivery in progress — this page refreshes by itself.</p>` : ""}
<div class="cards">
  <section class="card">
    <h3>Event</h3>
    <dl class="dl">
      <dt>Status</dt><dd>${badge(e.status)}</dd>
      <dt>Attempts</dt><dd>${e.attempts}</dd>
      <dt>Last error</dt><dd class="mono small">${e.last_error ?? html`<span class="muted">—</span>`}</dd>
      <dt>Next attempt</dt><dd>${time(e.next_attempt_at)}</dd>
      <dt>Created</dt><dd>${time(e.created_at)}</dd>
      <dt>Updated</dt><dd>${time(e.updated_at)}</dd>
    </dl>
  </section>
  <section class="card" id="message-card">
    <h3>Message</h3>
    ${
      e.message
        ? html`<dl class="dl">
      <dt>Message-ID</dt><dd class="mono small break">${e.message.message_id}</dd>
      <dt>Subject</dt><dd>${e.message.subject || html`<span class="muted">(none)</span>`}</dd>
      <dt>From</dt><dd>${people(e.message.from)}</dd>
      <dt>To</dt><dd>${people(e.message.to)}</dd>
    </dl>`
        : html`<p class="muted" id="message-erased">The message was erased: its content, the webhook body and the attempts' captured bodies are gone.</p>`
    }
  </section>
  ${e.message?.mail ? understandingPanel(e.message.mail) : ""}
  ${policyNotesPanel(e.policy_notes)}
  <section class="card">
    <h3>Route snapshot</h3>
    <dl class="dl">
      <dt>Route</dt><dd><a href="/ui/routes/${e.routing.route_id}">${e.routing.name}</a></dd>
      <dt>Endpoint</dt><dd class="mono small break">${e.routing.endpoint_url}</dd>
      <dt>Signing kid</dt><dd class="mono small">${e.routing.kid}</dd>
    </dl>
    <details><summary>Pipeline</summary><pre class="code" tabindex="0">${JSON.stringify(e.routing.pipeline, null, 2)}</pre></details>
  </section>
</div>
<h2>Attempts <span class="count">${attempts.length}</span></h2>
${attempts.length > 1 ? html`<p class="muted small">Oldest first; the newest is open. Click an attempt to show its request and response.</p>` : ""}
<div id="attempts">
${attempts.length === 0 ? html`<div class="empty">No attempts yet.</div>` : attempts.map((a, i) => attemptCard(a, i === attempts.length - 1))}
</div>`;
}

async function detailPage(req: UiRequest): Promise<Response> {
  const id = req.params.id ?? "";
  const { event, attempts } = await eventWithAttempts(req.ctx, req.projectId, id);
  return htmlResponse(
    page({
      title: event.message?.subject || "Event",
      section: "events",
      project: req.project,
      csrf: req.csrf,
      body: detailBody(event, attempts, req.csrf),
      notice: noticeText(req.query.notice),
      data: {
        "event-status": event.status,
        "event-attempts": String(attempts.length),
        "status-url": `/ui/events/${event.id}/status.json`,
      },
    }),
  );
}

/** GET `/ui/events/:id`, GET `/ui/events/:id/status.json`, POST `/ui/events/:id/replay`. */
export function eventDetailPages(ctx: AppContext) {
  return new Elysia()
    .get("/events/:id", uiHandler(ctx, detailPage))
    .get(
      "/events/:id/status.json",
      uiHandler(
        ctx,
        async (req) => {
          const { event, attempts } = await eventWithAttempts(ctx, req.projectId, req.params.id ?? "");
          return jsonResponse({ status: event.status, attempts: attempts.length });
        },
        { json: true },
      ),
    )
    .post(
      "/events/:id/replay",
      uiHandler(ctx, async (req) => {
        const id = req.params.id ?? "";
        try {
          await replayEvent(ctx, req.projectId, id);
        } catch (err) {
          if (err instanceof AppError && err.code === "events.not_replayable") {
            return redirect(`/ui/events/${encodeURIComponent(id)}?notice=not-replayable`);
          }
          if (err instanceof AppError && err.code === "events.message_erased") {
            return redirect(`/ui/events/${encodeURIComponent(id)}?notice=message-erased-no-replay`);
          }
          throw err;
        }
        return redirect(`/ui/events/${encodeURIComponent(id)}?notice=replayed`);
      }),
    );
}
