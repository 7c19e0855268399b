// mailhook dashboard script: confirmations, copy buttons, live event refresh and the mapper playground.
// Plain browser JavaScript, no build step. Every state-changing fetch sends the page's CSRF token.

(() => {
  const csrf = document.body.dataset.csrf || "";

  // Forms with data-confirm ask before submitting (delete buttons).
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }

  // Copy buttons (the signing secret shown once).
  for (const button of document.querySelectorAll("[data-copy]")) {
    button.addEventListener("click", async () => {
      const source = document.querySelector(button.dataset.copy);
      if (!source) return;
      try {
        await navigator.clipboard.writeText(source.textContent || "");
        button.textContent = "Copied";
      } catch {
        window.getSelection()?.selectAllChildren(source);
      }
    });
  }

  // Event detail: while delivery is in progress, poll the status and reload when it changes.
  const statusUrl = document.body.dataset.statusUrl;
  const status = document.body.dataset.eventStatus;
  if (statusUrl && (status === "pending" || status === "retry")) {
    const shown = `${status}/${document.body.dataset.eventAttempts}`;
    const deadline = Date.now() + 10 * 60 * 1000;
    const poll = async () => {
      if (Date.now() > deadline) return;
      try {
        const res = await fetch(statusUrl, { headers: { accept: "application/json" }, cache: "no-store" });
        if (res.ok) {
          const now = await res.json();
          if (`${now.status}/${now.attempts}` !== shown) {
            window.location.replace(window.location.pathname);
            return;
          }
        }
      } catch {
        // offline for a moment: try again on the next tick
      }
      setTimeout(poll, status === "pending" ? 700 : 3000);
    };
    setTimeout(poll, 700);
  }

  // Mapper playground: debounced preview on every change.
  const playground = document.getElementById("playground");
  if (playground) {
    const config = document.getElementById("config");
    const messageId = document.getElementById("message_id");
    const messageRaw = document.getElementById("message_raw");
    const output = document.getElementById("preview-output");
    const errors = document.getElementById("preview-errors");
    const warnings = document.getElementById("preview-warnings");
    const badge = document.getElementById("preview-status");
    let timer;
    let inflight;

    const show = (state, label) => {
      badge.className = `badge badge-${state}`;
      badge.textContent = label;
    };

    const run = async () => {
      inflight?.abort();
      inflight = new AbortController();
      show("running", "running…");
      try {
        const res = await fetch(playground.dataset.previewUrl, {
          method: "POST",
          signal: inflight.signal,
          headers: { "content-type": "application/json", "x-csrf-token": csrf },
          body: JSON.stringify({
            config: config.value,
            message_id: messageId.value,
            message_raw: messageRaw.value,
          }),
        });
        const result = await res.json();
        errors.replaceChildren();
        warnings.replaceChildren();
        const list = (target, items) => {
          for (const e of items) {
            const li = document.createElement("li");
            const path = document.createElement("code");
            path.className = "path";
            path.textContent = e.path;
            li.append(path, ` ${e.message}${e.code ? ` (${e.code})` : ""}`);
            target.append(li);
          }
          target.hidden = items.length === 0;
        };
        const warned = result.warnings || [];
        list(warnings, warned);
        if (result.ok) {
          errors.hidden = true;
          output.textContent = JSON.stringify(result.output, null, 2);
          const seen = document.getElementById("preview-seen");
          if (seen && result.seen) {
            const { mail, envelope } = result.seen;
            seen.textContent = JSON.stringify({ message: mail, ctx: { envelope } }, null, 2);
          }
          config.removeAttribute("aria-invalid");
          // A plain "ok" only when there is nothing to look at.
          if (warned.length === 0) show("ok", "ok");
          else show("retry", `ok, ${warned.length} warning${warned.length === 1 ? "" : "s"}`);
          return;
        }
        if (!result.errors) throw new Error(result.error?.message || `HTTP ${res.status}`);
        list(errors, result.errors);
        output.textContent = "";
        if (result.stage !== "message") config.setAttribute("aria-invalid", "true");
        show("error", `${result.stage} error`);
      } catch (err) {
        if (err.name === "AbortError") return;
        show("error", "error");
        output.textContent = String(err.message || err);
      }
    };

    const schedule = () => {
      clearTimeout(timer);
      timer = setTimeout(run, 350);
    };
    config.addEventListener("input", schedule);
    messageRaw.addEventListener("input", schedule);
    messageId.addEventListener("change", schedule);
    run();
  }
})();
