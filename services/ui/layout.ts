/** The page shell (left nav, project header, notices) and small shared pieces: badges, times, fields. */
import type { ProjectView } from "../resources/projects.ts";
import { html, type SafeHtml } from "./html.ts";
import { htmlResponse } from "./respond.ts";

/** Sections of the left nav. */
export type Section =
  | "overview"
  | "events"
  | "messages"
  | "held"
  | "routes"
  | "endpoints"
  | "secrets"
  | "notifications"
  | "mailboxes"
  | "domains"
  | "playground";

const NAV: { id: Section; href: string; label: string }[] = [
  { id: "overview", href: "/ui/overview", label: "Overview" },
  { id: "events", href: "/ui/events", label: "Events" },
  { id: "messages", href: "/ui/messages", label: "Messages" },
  { id: "held", href: "/ui/held", label: "Held" },
  { id: "routes", href: "/ui/routes", label: "Routes" },
  { id: "endpoints", href: "/ui/endpoints", label: "Endpoints" },
  { id: "secrets", href: "/ui/signing-secrets", label: "Signing secrets" },
  { id: "notifications", href: "/ui/notifications", label: "Notifications" },
  { id: "mailboxes", href: "/ui/mailboxes", label: "Mailboxes" },
  { id: "domains", href: "/ui/domains", label: "Domains" },
  { id: "playground", href: "/ui/playground", label: "Mapper playground" },
];

/** Fixed notices shown after a redirect (`?notice=`); the query names one, user text is never echoed. */
const NOTICES: Record<string, string> = {
  "signed-out": "You are signed out.",
  replayed: "Replay queued. The new attempt appears below once the worker has made it.",
  "not-replayable": "This event cannot be replayed while a delivery is pending or scheduled.",
  "route-saved": "Route saved.",
  "route-deleted": "Route deleted.",
  "endpoint-saved": "Endpoint saved.",
  "endpoint-deleted": "Endpoint deleted.",
  "endpoint-paused": "Endpoint paused: due events wait until you resume it.",
  "endpoint-resumed": "Endpoint resumed: waiting events are being delivered.",
  "bulk-replay-queued": "Replay of all matching events queued; they are sent again as the job runs.",
  "secret-deleted": "Signing secret deleted.",
  "notifications-saved": "Notification settings saved.",
  "domain-deleted": "Domain deleted, with its addresses: their mail is refused from now on.",
  "address-deleted": "Address deleted: its mail is refused from now on.",
  "mailbox-added": "Mailbox added. It connects within a few seconds; its state is shown below.",
  "mailbox-sync": "Sync requested. New mail is fetched within a few seconds.",
  "mailbox-deleted": "Mailbox deleted.",
  "message-erased":
    "Message erased: its content, raw source, attachments, webhook bodies and attempt captures are gone; its events remain without it.",
  "message-erased-no-replay": "This event's message was erased: there is nothing to send again.",
};

/** The notice text for a `?notice=` value, or null. */
export function noticeText(code: string | undefined): string | null {
  return code && Object.hasOwn(NOTICES, code) ? (NOTICES[code] ?? null) : null;
}

function head(title: string, extra: { scripts?: string[]; styles?: string[] } = {}): SafeHtml {
  return html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · mailhook</title>
${(extra.styles ?? []).map((href) => html`<link rel="stylesheet" href="${href}">`)}
<link rel="stylesheet" href="/ui/assets/app.css">
<script src="/ui/assets/app.js" defer></script>
${(extra.scripts ?? []).map((src) => html`<script src="${src}" defer></script>`)}
</head>`;
}

/** What a signed-in page passes to the shell. */
export interface PageInput {
  title: string;
  section: Section;
  project: ProjectView;
  csrf: string;
  body: SafeHtml;
  notice?: string | null;
  /** e.g. `{ "event-status": "pending" }` → `data-event-status` on `<body>` for the page script */
  data?: Record<string, string>;
  /** page-specific scripts and stylesheets (same-origin assets under /ui/assets) */
  scripts?: string[];
  styles?: string[];
}

/** A signed-in page: left nav, header with the project, the notice, the body. */
export function page(input: PageInput): SafeHtml {
  const attrs = Object.entries(input.data ?? {}).map(([k, v]) => html` data-${k}="${v}"`);
  return html`<html lang="en">
${head(input.title, { ...(input.scripts ? { scripts: input.scripts } : {}), ...(input.styles ? { styles: input.styles } : {}) })}
<body${attrs} data-csrf="${input.csrf}">
<div class="shell">
<nav class="sidebar" aria-label="Main">
  <a class="brand" href="/ui/overview"><span class="logo" aria-hidden="true">✉</span> mailhook</a>
  <ul>
    ${NAV.map(
      (n) =>
        html`<li><a href="${n.href}"${n.id === input.section ? html` class="active" aria-current="page"` : ""}>${n.label}</a></li>`,
    )}
  </ul>
  <div class="project">
    <div class="project-name">${input.project.name}</div>
    <div class="muted small mono" title="Inbound address">${input.project.inbound_address}</div>
    <form method="post" action="/ui/sign-out">
      <input type="hidden" name="_csrf" value="${input.csrf}">
      <button type="submit" class="btn link">Sign out</button>
    </form>
  </div>
</nav>
<main class="content">
  ${input.notice ? html`<div class="notice" role="status">${input.notice}</div>` : ""}
  ${input.body}
</main>
</div>
</body>
</html>`;
}

/** A page without the nav (sign-in, errors). */
export function barePage(title: string, body: SafeHtml): SafeHtml {
  return html`<html lang="en">
${head(title)}
<body class="bare">
<main class="card narrow">${body}</main>
</body>
</html>`;
}

/** A full error response. */
export function errorPage(status: number, title: string, message: string): Response {
  return htmlResponse(
    barePage(
      title,
      html`<h1>${title}</h1><p>${message}</p><p><a href="/ui/events">Back to the dashboard</a></p>`,
    ),
    status,
  );
}

/** A coloured badge for an event or attempt status. */
export function badge(status: string): SafeHtml {
  return html`<span class="badge badge-${status}">${status}</span>`;
}

/** A timestamp, shown in UTC to the second. */
export function time(iso: string | null | undefined): SafeHtml {
  if (!iso) return html`<span class="muted">—</span>`;
  return html`<time datetime="${iso}">${iso
    .replace("T", " ")
    .replace(/\.\d+Z$/, "Z")
    .replace("Z", " UTC")}</time>`;
}

/** Validation messages of one form field, each with its JSON-pointer path. */
export function fieldErrors(errors: { path: string; message: string }[]): SafeHtml {
  if (errors.length === 0) return html``;
  return html`<ul class="field-errors" role="alert">${errors.map(
    (e) => html`<li><code class="path">${e.path}</code> ${e.message}</li>`,
  )}</ul>`;
}

/** The hidden CSRF field of a form. */
export function csrfField(csrf: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${csrf}">`;
}
