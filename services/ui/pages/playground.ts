/**
 * The mapper playground: a config textarea, a stored message (recent messages of the project) or a
 * pasted raw .eml, and the output or the error with its path, plus near-miss warnings ("did you mean
 * …") at theirs — refreshed live by the page script, which posts to `/ui/api/mapper/preview` (same
 * origin, `X-CSRF-Token`). The status reads a plain "ok" only with neither errors nor warnings.
 */
import { Elysia } from "elysia";
import type { AppContext } from "../../context.ts";
import { recentMessages } from "../data.ts";
import { field, type UiRequest, uiHandler } from "../guard.ts";
import { html } from "../html.ts";
import { page, time } from "../layout.ts";
import { runPreview } from "../preview.ts";
import { htmlResponse, jsonResponse } from "../respond.ts";

/** The config the playground starts with. */
export const EXAMPLE_CONFIG = {
  version: "v1",
  vars: [{ name: "sender", expr: { var: "message.from[0].email" } }],
  output: {
    subject: { "string.upper": { var: "message.subject" } },
    from: { var: "vars.sender" },
    attachments: { map: [{ var: "message.attachments" }, { var: "filename" }] },
    links: { "call.extract.urls": { mode: "text" } },
  },
};

async function playgroundPage(req: UiRequest): Promise<Response> {
  const messages = await recentMessages(req.ctx, req.projectId);
  const body = html`<header class="page-header">
  <h1>Mapper playground</h1>
  <p class="muted">Write a <code>map.custom_json</code> config and see its output on a real message. Nothing is saved; copy the config into a route's pipeline when it is right.</p>
</header>
<div class="playground" id="playground" data-preview-url="/ui/api/mapper/preview">
  <section class="panel">
    <label for="config">Config <span class="muted small">(JSON)</span></label>
    <textarea id="config" class="code" rows="22" spellcheck="false">${JSON.stringify(EXAMPLE_CONFIG, null, 2)}</textarea>
    <fieldset class="source">
      <legend>Message</legend>
      <label for="message_id">Stored message</label>
      <select id="message_id">
        <option value="">— empty message —</option>
        ${messages.map(
          (m, i) =>
            html`<option value="${m.id}"${i === 0 ? " selected" : ""}>${m.subject || "(no subject)"} — ${m.from || "unknown sender"}</option>`,
        )}
      </select>
      ${messages[0] ? html`<p class="muted small">Newest received ${time(messages[0].received_at)}.</p>` : html`<p class="muted small">No stored messages yet; paste a raw message below.</p>`}
      <details${messages.length === 0 ? " open" : ""}>
        <summary>…or paste a raw .eml (used instead when not empty)</summary>
        <textarea id="message_raw" class="code" rows="8" spellcheck="false" placeholder="From: a@example.com&#10;Subject: Hello&#10;&#10;Body"></textarea>
      </details>
    </fieldset>
  </section>
  <section class="panel">
    <div class="output-header"><h3>Output</h3><span id="preview-status" class="badge badge-pending">waiting</span></div>
    <ul id="preview-errors" class="field-errors" hidden></ul>
    <ul id="preview-warnings" class="field-warnings" hidden></ul>
    <pre id="preview-output" class="code output" aria-live="polite" tabindex="0"></pre>
    <details id="preview-seen-box">
      <summary>What the mapper sees beyond the parse <span class="muted small">(<code>message.thread_id</code>, <code>message.auth</code>, … and <code>ctx.envelope</code>)</span></summary>
      <pre id="preview-seen" class="code small" tabindex="0"></pre>
    </details>
  </section>
</div>`;
  return htmlResponse(
    page({ title: "Mapper playground", section: "playground", project: req.project, csrf: req.csrf, body }),
  );
}

/** GET `/ui/playground`, POST `/ui/api/mapper/preview` (JSON in and out). */
export function playgroundPages(ctx: AppContext) {
  return new Elysia().get("/playground", uiHandler(ctx, playgroundPage)).post(
    "/api/mapper/preview",
    uiHandler(
      ctx,
      async (req) => {
        const messageId = field(req.body, "message_id");
        const raw = field(req.body, "message_raw");
        const result = await runPreview(ctx, req.projectId, {
          config: field(req.body, "config"),
          ...(messageId ? { message_id: messageId } : {}),
          ...(raw ? { message_raw: raw } : {}),
        });
        return jsonResponse(result, result.ok ? 200 : 422);
      },
      { json: true },
    ),
  );
}
