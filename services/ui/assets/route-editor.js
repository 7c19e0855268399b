// The route editor's structured view: a rule builder above the rule's JSON and a step list (each step
// with a form made from its argument schema) above the pipeline's JSON. Both views edit the same
// value: a change in a form rewrites the JSON, a change in the JSON (when it parses) redraws the
// forms. The JSON stays the source of truth and is what the form submits; without script the page is
// the two JSON fields. The catalogue (rule keys, steps and their schemas) comes from the server in
// #route-editor-catalogue, so a new rule key or step appears here without a change to this file.

(() => {
  const source = document.getElementById("route-editor-catalogue");
  const ruleField = document.getElementById("rule");
  const pipelineField = document.getElementById("pipeline");
  if (!source || !ruleField || !pipelineField) return;
  const catalogue = JSON.parse(source.textContent || "{}");
  const ruleKeys = new Map(catalogue.rule_keys.map((k) => [k.key, k]));
  const steps = new Map(catalogue.steps.map((s) => [s.name, s]));
  const COMBINATORS = ["all", "any", "none", "negate"];

  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v === true) node.setAttribute(k, "");
      else if (v !== false && v !== undefined && v !== null) node.setAttribute(k, String(v));
    }
    for (const c of children) if (c) node.append(c);
    return node;
  };
  let uid = 0;
  const nextId = (prefix) => `${prefix}-${++uid}`;

  const parse = (text) => {
    try {
      return { ok: true, value: JSON.parse(text) };
    } catch {
      return { ok: false };
    }
  };
  const isObject = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
  /** Writes `value` into `field` as the editor's JSON and tells the page (validation, dirty state). */
  const write = (field, value) => {
    field.value = JSON.stringify(value, null, 2);
    field.dataset.fromBuilder = "1";
    field.dispatchEvent(new Event("input", { bubbles: true }));
    delete field.dataset.fromBuilder;
  };

  // ---- one input for one JSON Schema, returning a getter of its value -----------------------------
  function choices(schema) {
    if (Array.isArray(schema.enum)) return schema.enum;
    if (Array.isArray(schema.anyOf) && schema.anyOf.every((o) => "const" in o))
      return schema.anyOf.map((o) => o.const);
    return null;
  }

  /** A labelled control for `schema` holding `value`; `onChange` is called after every edit. */
  function control(label, schema, value, required, onChange) {
    const id = nextId("f");
    const opts = choices(schema);
    let input;
    let read;
    if (opts) {
      input = el(
        "select",
        { id, onchange: onChange },
        el("option", { value: "", text: required ? "Choose…" : "(not set)" }),
      );
      for (const o of opts)
        input.append(el("option", { value: String(o), text: String(o), selected: o === value }));
      read = () => (input.value === "" ? undefined : opts.find((o) => String(o) === input.value));
    } else if (schema.type === "boolean") {
      input = el("input", { id, type: "checkbox", checked: value === true, onchange: onChange });
      read = () => (input.checked ? true : required ? false : undefined);
    } else if (schema.type === "integer" || schema.type === "number") {
      input = el("input", {
        id,
        type: "number",
        value: value ?? "",
        step: schema.type === "integer" ? 1 : "any",
        oninput: onChange,
      });
      read = () => (input.value === "" ? undefined : Number(input.value));
    } else if (schema.type === "string") {
      input = el("input", { id, value: value ?? "", oninput: onChange });
      read = () => (input.value === "" && !required ? undefined : input.value);
    } else if (schema.type === "array" && schema.items && schema.items.type === "string") {
      input = el("textarea", { id, rows: 3, class: "code", oninput: onChange });
      input.value = Array.isArray(value) ? value.join("\n") : typeof value === "string" ? value : "";
      read = () => {
        const lines = input.value
          .split("\n")
          .map((l) => l.trim())
          .filter(Boolean);
        return lines.length ? lines : undefined;
      };
    } else {
      // anything richer (objects, mapper configs): JSON for this one value
      input = el("textarea", { id, rows: 4, class: "code", spellcheck: "false", oninput: onChange });
      input.value = value === undefined ? "" : JSON.stringify(value, null, 2);
      read = () => {
        if (input.value.trim() === "") return undefined;
        const parsed = parse(input.value);
        input.setAttribute("aria-invalid", parsed.ok ? "false" : "true");
        return parsed.ok ? parsed.value : value;
      };
    }
    const wrap = el(
      "div",
      { class: schema.type === "boolean" ? "builder-field checkbox-row" : "builder-field" },
      el("label", { for: id, text: `${label}${required ? "" : " (optional)"}` }),
      input,
    );
    if (schema.description) wrap.append(el("div", { class: "muted small", text: schema.description }));
    return { node: wrap, read };
  }

  // ---- the rule builder ---------------------------------------------------------------------------
  const ruleBox = el("section", { class: "builder", "aria-label": "Rule builder" });
  ruleField.before(ruleBox);

  function drawRule() {
    ruleBox.replaceChildren();
    const parsed = parse(ruleField.value || "{}");
    if (!parsed.ok || !isObject(parsed.value)) {
      ruleBox.append(
        el("p", {
          class: "muted small",
          text: "The rule below is not a JSON object yet; fix it to use the builder.",
        }),
      );
      return;
    }
    const rule = parsed.value;
    const rows = el("div", { class: "builder-rows" });
    const readers = [];
    const sync = () => {
      const next = {};
      for (const k of Object.keys(rule)) if (!ruleKeys.has(k)) next[k] = rule[k]; // combinators and unknown keys kept
      for (const r of readers) {
        const v = r.read();
        if (v !== undefined) next[r.key] = v;
      }
      write(ruleField, next);
    };
    for (const [key, value] of Object.entries(rule)) {
      if (!ruleKeys.has(key)) continue;
      const spec = ruleKeys.get(key);
      const c = control(key, spec.schema, value, true, sync);
      readers.push({ key, read: c.read });
      rows.append(
        el(
          "div",
          { class: "builder-row" },
          c.node,
          el("button", {
            type: "button",
            class: "btn link",
            text: "Remove",
            "aria-label": `Remove the condition ${key}`,
            onclick: () => {
              delete rule[key];
              write(ruleField, rule);
              drawRule();
            },
          }),
        ),
      );
    }
    const nested = Object.keys(rule).filter((k) => COMBINATORS.includes(k) || !ruleKeys.has(k));
    ruleBox.append(
      el("h3", { text: "Rule" }),
      el("p", {
        class: "muted small",
        text: Object.keys(rule).length
          ? "A message matches when every condition holds."
          : "No condition: every message matches.",
      }),
      rows,
    );
    if (nested.length) {
      ruleBox.append(
        el("p", {
          class: "muted small",
          text: `Also in the rule, edited as JSON below: ${nested.join(", ")}.`,
        }),
      );
    }
    const pickId = nextId("rule-key");
    const pick = el("select", { id: pickId }, el("option", { value: "", text: "Add a condition…" }));
    for (const k of catalogue.rule_keys)
      if (!(k.key in rule)) pick.append(el("option", { value: k.key, text: `${k.key} — ${k.description}` }));
    pick.addEventListener("change", () => {
      if (!pick.value) return;
      const spec = ruleKeys.get(pick.value);
      rule[pick.value] = spec.initial;
      write(ruleField, rule);
      drawRule();
    });
    ruleBox.append(
      el(
        "div",
        { class: "builder-add" },
        el("label", { for: pickId, class: "visually-hidden", text: "Add a condition" }),
        pick,
      ),
    );
  }

  // ---- the step list ------------------------------------------------------------------------------
  const stepBox = el("section", { class: "builder", "aria-label": "Pipeline steps" });
  pipelineField.before(stepBox);

  function drawSteps() {
    stepBox.replaceChildren();
    const parsed = parse(pipelineField.value || '{"steps": []}');
    if (!parsed.ok || !isObject(parsed.value) || !Array.isArray(parsed.value.steps)) {
      stepBox.append(
        el("p", {
          class: "muted small",
          text: 'The pipeline below is not {"steps": [...]} yet; fix it to use the step list.',
        }),
      );
      return;
    }
    const pipeline = parsed.value;
    const list = el("ol", { class: "step-list" });
    const readers = [];
    const sync = () => {
      pipeline.steps = pipeline.steps.map((step, i) => (readers[i] ? readers[i]() : step));
      write(pipelineField, pipeline);
    };
    const move = (from, to) => {
      const [s] = pipeline.steps.splice(from, 1);
      pipeline.steps.splice(to, 0, s);
      write(pipelineField, pipeline);
      drawSteps();
    };
    pipeline.steps.forEach((step, i) => {
      const spec = isObject(step) ? steps.get(step.name) : undefined;
      const item = el("li", { class: "step-card" });
      const title = el(
        "div",
        { class: "step-title" },
        el("strong", { text: isObject(step) ? String(step.name) : "?" }),
      );
      if (spec)
        title.append(el("span", { class: "tag", text: spec.kind === "map" ? "final step" : "transform" }));
      const controls = el(
        "div",
        { class: "step-actions" },
        el("button", {
          type: "button",
          class: "btn small",
          text: "↑",
          "aria-label": `Move step ${i + 1} up`,
          disabled: i === 0,
          onclick: () => move(i, i - 1),
        }),
        el("button", {
          type: "button",
          class: "btn small",
          text: "↓",
          "aria-label": `Move step ${i + 1} down`,
          disabled: i === pipeline.steps.length - 1,
          onclick: () => move(i, i + 1),
        }),
        el("button", {
          type: "button",
          class: "btn link",
          text: "Remove",
          "aria-label": `Remove step ${i + 1}`,
          onclick: () => {
            pipeline.steps.splice(i, 1);
            write(pipelineField, pipeline);
            drawSteps();
          },
        }),
      );
      item.append(el("div", { class: "step-head" }, title, controls));
      if (!spec) {
        item.append(el("p", { class: "muted small", text: "Unknown step: edit it as JSON below." }));
        readers.push(null);
      } else {
        item.append(el("p", { class: "muted small", text: spec.summary }));
        const args = isObject(step.args) ? step.args : {};
        const props = spec.args && isObject(spec.args.properties) ? spec.args.properties : null;
        if (props && Object.keys(props).length) {
          const required = new Set(spec.args.required || []);
          const fields = Object.entries(props).map(([name, schema]) => {
            const c = control(name, schema, args[name], required.has(name), sync);
            item.append(c.node);
            return [name, c.read];
          });
          readers.push(() => {
            const next = { ...args };
            for (const [name, read] of fields) {
              const v = read();
              if (v === undefined) delete next[name];
              else next[name] = v;
            }
            return { ...step, args: next };
          });
        } else {
          const c = control("args", { type: "object" }, args, true, sync);
          item.append(c.node);
          readers.push(() => ({ ...step, args: c.read() ?? {} }));
        }
      }
      list.append(item);
    });
    stepBox.append(el("h3", { text: "Pipeline steps" }), list);
    const pickId = nextId("step-name");
    const pick = el("select", { id: pickId }, el("option", { value: "", text: "Add a step…" }));
    for (const s of catalogue.steps)
      pick.append(
        el("option", { value: s.name, text: `${s.name} (${s.kind === "map" ? "final" : "transform"})` }),
      );
    pick.addEventListener("change", () => {
      if (!pick.value) return;
      const spec = steps.get(pick.value);
      const step = { name: spec.name, args: spec.example ?? {} };
      // transforms go before the final step; a final step goes last
      const finalAt = pipeline.steps.findIndex((s) => isObject(s) && String(s.name).startsWith("map."));
      if (spec.kind !== "map" && finalAt >= 0) pipeline.steps.splice(finalAt, 0, step);
      else pipeline.steps.push(step);
      write(pipelineField, pipeline);
      drawSteps();
    });
    stepBox.append(
      el(
        "div",
        { class: "builder-add" },
        el("label", { for: pickId, class: "visually-hidden", text: "Add a step" }),
        pick,
      ),
    );
  }

  // The JSON wins when someone types in it: redraw the forms once it parses again.
  for (const [field, draw] of [
    [ruleField, drawRule],
    [pipelineField, drawSteps],
  ]) {
    let timer = 0;
    field.addEventListener("input", () => {
      if (field.dataset.fromBuilder) return;
      clearTimeout(timer);
      timer = setTimeout(draw, 300);
    });
  }
  drawRule();
  drawSteps();
})();
