/**
 * Signing secrets: list, create (the secret is shown once, on the page answering the POST — it is never
 * stored in a form, URL or cookie), delete.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { AppError } from "../../lib/errors.ts";
import {
  createSigningSecret,
  deleteSigningSecret,
  listSigningSecrets,
} from "../../resources/signing-secrets.ts";
import { type UiRequest, uiHandler } from "../guard.ts";
import { html, type SafeHtml } from "../html.ts";
import { csrfField, noticeText, page, time } from "../layout.ts";
import { htmlResponse, redirect } from "../respond.ts";

async function secretsPage(
  req: UiRequest,
  extra: { created?: { kid: string; secret: string }; error?: string; status?: number } = {},
): Promise<Response> {
  const secrets = await listSigningSecrets(req.ctx, req.projectId);
  const created: SafeHtml | "" = extra.created
    ? html`<section class="callout" id="new-secret">
  <h3>New signing secret <span class="mono">${extra.created.kid}</span></h3>
  <p>Copy it now — it is shown only this once. Your receiver verifies <code>X-Service-Signature</code> with it.</p>
  <div class="secret-row"><code class="secret" id="secret-value">${extra.created.secret}</code>
  <button type="button" class="btn" data-copy="#secret-value">Copy</button></div>
</section>`
    : "";
  const body = html`<header class="page-header with-actions">
  <div><h1>Signing secrets</h1><p class="muted">Each route signs its deliveries with one secret, named by its kid.</p></div>
  <form method="post" action="/ui/signing-secrets">${csrfField(req.csrf)}<button type="submit" class="btn primary">New signing secret</button></form>
</header>
${extra.error ? html`<div class="alert" role="alert">${extra.error}</div>` : ""}
${created}
${
  secrets.length === 0
    ? html`<div class="empty">No signing secrets yet.</div>`
    : html`<table class="table" id="secrets">
  <thead><tr><th>kid</th><th>Created</th><th></th></tr></thead>
  <tbody>${secrets.map(
    (s) => html`<tr>
    <td class="mono">${s.kid}</td>
    <td class="small">${time(s.created_at)}</td>
    <td class="right"><form method="post" action="/ui/signing-secrets/${s.kid}/delete" data-confirm="Delete signing secret ${s.kid}?">
      ${csrfField(req.csrf)}<button type="submit" class="btn danger small">Delete</button></form></td>
  </tr>`,
  )}</tbody>
</table>`
}`;
  return htmlResponse(
    page({
      title: "Signing secrets",
      section: "secrets",
      project: req.project,
      csrf: req.csrf,
      body,
      notice: noticeText(req.query.notice),
    }),
    extra.status ?? 200,
  );
}

/** GET/POST `/ui/signing-secrets`, POST `/ui/signing-secrets/:kid/delete`. */
export function signingSecretPages(ctx: AppContext) {
  return new Elysia()
    .get(
      "/signing-secrets",
      uiHandler(ctx, (req) => secretsPage(req)),
    )
    .post(
      "/signing-secrets",
      uiHandler(ctx, async (req) => {
        const created = await createSigningSecret(ctx, req.projectId);
        return secretsPage(req, { created, status: 201 });
      }),
    )
    .post(
      "/signing-secrets/:kid/delete",
      uiHandler(ctx, async (req) => {
        try {
          await deleteSigningSecret(ctx, req.projectId, req.params.kid ?? "");
        } catch (err) {
          if (!(err instanceof AppError) || err.code !== "signing_secrets.in_use") throw err;
          return secretsPage(req, { error: err.message, status: 409 });
        }
        return redirect("/ui/signing-secrets?notice=secret-deleted");
      }),
    );
}
