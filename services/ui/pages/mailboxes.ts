/**
 * IMAP mailboxes: the list with each mailbox's status (state, last error, last sync, messages taken
 * in), "Sync now", delete, and a form to add one. The password or access token typed into the form is
 * sealed on save and never rendered back.
 */
import { Value } from "@sinclair/typebox/value";
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError, type ErrorDetail } from "../../lib/errors.ts";
import {
  createMailbox,
  deleteMailbox,
  listMailboxes,
  type MailboxInput,
  MailboxInputSchema,
  type MailboxView,
  requestMailboxSync,
} from "../../resources/mailboxes.ts";
import { field, type UiRequest, uiHandler } from "../guard.ts";
import { html, type SafeHtml } from "../html.ts";
import { csrfField, fieldErrors, noticeText, page, time } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";

const FIELDS = [
  "name",
  "host",
  "port",
  "tls",
  "user",
  "auth_method",
  "secret",
  "folder",
  "since",
  "after_process",
] as const;
type Values = Record<(typeof FIELDS)[number], string>;

const STATE_BADGE: Record<string, string> = {
  idle: "ok",
  syncing: "running",
  connecting: "pending",
  error: "error",
  disabled: "disabled",
};

function stateBadge(m: MailboxView): SafeHtml {
  return html`<span class="badge badge-${STATE_BADGE[m.status.state] ?? "pending"}">${m.status.state}</span>`;
}

function row(req: UiRequest, m: MailboxView): SafeHtml {
  const s = m.status;
  return html`<tr data-mailbox="${m.id}">
  <td><div>${m.name}</div><div class="muted small mono">${m.id}</div></td>
  <td class="mono small">${m.auth.user}@${m.host}:${String(m.port)} (${m.tls})<br>${m.folder}</td>
  <td>${stateBadge(m)}${s.last_error ? html`<div class="small error-text">${s.last_error}</div>` : ""}</td>
  <td class="small">${time(s.last_sync_at)}</td>
  <td class="right">${String(s.messages_ingested)}${
    s.backfill_remaining ? html`<div class="muted small">${String(s.backfill_remaining)} left</div>` : ""
  }${
    s.messages_pending > 0
      ? html`<div class="muted small">${String(s.messages_pending)} fetched, being processed</div>`
      : ""
  }</td>
  <td class="right">
    <form method="post" action="/ui/mailboxes/${m.id}/sync" class="inline">${csrfField(req.csrf)}<button type="submit" class="btn small">Sync now</button></form>
    <form method="post" action="/ui/mailboxes/${m.id}/delete" class="inline" data-confirm="Delete mailbox ${m.name}?">${csrfField(req.csrf)}<button type="submit" class="btn danger small">Delete</button></form>
  </td>
</tr>`;
}

function input(name: string, label: string, value: string, attrs: SafeHtml | "" = ""): SafeHtml {
  return html`<label class="field"><span>${label}</span><input name="${name}" value="${value}"${attrs}></label>`;
}

function select(name: string, label: string, value: string, options: string[]): SafeHtml {
  return html`<label class="field"><span>${label}</span><select name="${name}">${options.map(
    (o) => html`<option value="${o}"${o === value ? html` selected` : ""}>${o}</option>`,
  )}</select></label>`;
}

async function mailboxesPage(
  req: UiRequest,
  opts: { values?: Values; errors?: ErrorDetail[]; status?: number } = {},
): Promise<Response> {
  const boxes = await listMailboxes(req.ctx, req.projectId);
  const v: Values = opts.values ?? {
    name: "",
    host: "",
    port: "993",
    tls: "implicit",
    user: "",
    auth_method: "password",
    secret: "",
    folder: "INBOX",
    since: "",
    after_process: "none",
  };
  const body = html`<header class="page-header">
  <h1>Mailboxes</h1><p class="muted">IMAP mailboxes this project fetches mail from; new mail is picked up within seconds.</p>
</header>
${
  boxes.length === 0
    ? html`<div class="empty">No mailboxes yet.</div>`
    : html`<table class="table" id="mailboxes">
  <thead><tr><th>Name</th><th>Server and folder</th><th>State</th><th>Last sync</th><th class="right">Messages</th><th></th></tr></thead>
  <tbody>${boxes.map((m) => row(req, m))}</tbody>
</table>`
}
<section class="card" id="add-mailbox">
  <h2>Add a mailbox</h2>
  ${fieldErrors(opts.errors ?? [])}
  <form method="post" action="/ui/mailboxes" class="form">
    ${csrfField(req.csrf)}
    ${input("name", "Name", v.name, html` required`)}
    ${input("host", "Host", v.host, html` required placeholder="imap.example.com"`)}
    ${input("port", "Port", v.port, html` required inputmode="numeric"`)}
    ${select("tls", "TLS", v.tls, ["implicit", "starttls", "none"])}
    ${input("user", "User", v.user, html` required autocomplete="off"`)}
    ${select("auth_method", "Sign in with", v.auth_method, ["password", "access_token"])}
    <label class="field"><span>Password or access token</span><input type="password" name="secret" autocomplete="new-password" required></label>
    ${input("folder", "Folder", v.folder)}
    ${input("since", "Backfill from (RFC 3339, optional)", v.since, html` placeholder="2026-01-01T00:00:00Z"`)}
    ${input("after_process", "After processing (none, seen, delete, move:Folder)", v.after_process)}
    <button type="submit" class="btn primary">Add mailbox</button>
  </form>
</section>`;
  return htmlResponse(
    page({
      title: "Mailboxes",
      section: "mailboxes",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(req.query.notice),
    }),
    opts.status ?? 200,
  );
}

/** The form's values as the API's input, or the problems with them (paths as in the API). */
function parse(v: Values): { input: MailboxInput | null; errors: ErrorDetail[] } {
  const candidate: Record<string, unknown> = {
    name: v.name,
    host: v.host.trim(),
    port: /^\d+$/.test(v.port) ? Number(v.port) : v.port,
    tls: v.tls,
    auth:
      v.auth_method === "access_token"
        ? { user: v.user, access_token: v.secret }
        : { user: v.user, password: v.secret },
    folder: v.folder.trim() || "INBOX",
    after_process: v.after_process.trim() || "none",
    ...(v.since.trim() ? { since: v.since.trim() } : {}),
  };
  const errors = [...Value.Errors(MailboxInputSchema, candidate)].map((e) => ({
    path: e.path || "/",
    message: e.message,
  }));
  if (typeof candidate.since === "string" && Number.isNaN(Date.parse(candidate.since)))
    errors.push({ path: "/since", message: "not an RFC 3339 date-time" });
  return errors.length ? { input: null, errors } : { input: candidate as MailboxInput, errors };
}

/** GET/POST `/ui/mailboxes`, POST `/ui/mailboxes/:id/sync`, POST `/ui/mailboxes/:id/delete`. */
export function mailboxPages(ctx: AppContext) {
  return new Elysia()
    .get(
      "/mailboxes",
      uiHandler(ctx, (req) => mailboxesPage(req)),
    )
    .post(
      "/mailboxes",
      uiHandler(ctx, async (req) => {
        const values = Object.fromEntries(FIELDS.map((f) => [f, field(req.body, f)])) as Values;
        const { input: parsed, errors } = parse(values);
        // The secret is never sent back into the form.
        const shown = { ...values, secret: "" };
        if (!parsed) return mailboxesPage(req, { values: shown, errors, status: 422 });
        try {
          await createMailbox(ctx, req.projectId, parsed);
        } catch (err) {
          if (!(err instanceof AppError) || err.status !== 422) throw err;
          return mailboxesPage(req, {
            values: shown,
            errors: err.details ?? [{ path: "/", message: err.message }],
            status: 422,
          });
        }
        return redirect("/ui/mailboxes?notice=mailbox-added");
      }),
    )
    .post(
      "/mailboxes/:id/sync",
      uiHandler(ctx, async (req) => {
        await requestMailboxSync(ctx, req.projectId, req.params.id ?? "");
        return redirect("/ui/mailboxes?notice=mailbox-sync");
      }),
    )
    .post(
      "/mailboxes/:id/delete",
      uiHandler(ctx, async (req) => {
        await deleteMailbox(ctx, req.projectId, req.params.id ?? "");
        return redirect("/ui/mailboxes?notice=mailbox-deleted");
      }),
    );
}
