/** `replace_values`: its argument checks, and what each writable path and template path does. */
import { describe, expect, test } from "bun:test";
import { applyTransforms } from "../../../../services/routing/pipeline.ts";
import { replaceValuesStep } from "../../../../services/routing/steps/replace-values.ts";
import type { TransformContext } from "../../../../services/routing/steps/types.ts";
import { makeMessage } from "../../../support/messages.ts";
import { expectIssues, expectSchemaAgrees, generic, type RejectCase } from "./support.ts";

const ctx: TransformContext = {
  routeId: "rte_9",
  projectId: "prj_1",
  sourceType: "smtp",
  rawSizeBytes: 4321,
};
const run = (set: Record<string, unknown>, c: TransformContext = ctx) =>
  applyTransforms([{ name: "replace_values", args: { set } }], makeMessage(), c);

describe("replace_values validation", () => {
  const invalid: RejectCase[] = [
    [
      "no set",
      { steps: [{ name: "replace_values", args: {} }, generic] },
      [{ path: "/pipeline/steps/0/args/set", message: /required/ }],
    ],
    [
      "an empty set",
      { steps: [{ name: "replace_values", args: { set: {} } }, generic] },
      [{ path: "/pipeline/steps/0/args/set", message: /1 to 100/ }],
    ],
    [
      "bad paths, values and placeholders",
      {
        steps: [
          {
            name: "replace_values",
            args: {
              set: {
                from: "x",
                "attachments[0].filename": "x",
                subject: { var: "x" },
                text: "{{ message.subject }}",
                "headers.x-a": "{{ headers.x-b }} {{ ctx.route }}",
                "headers.bad:name": "v",
                html: Number.NaN,
              },
              extra: 1,
            },
          },
          generic,
        ],
      },
      [
        { path: "/pipeline/steps/0/args/extra", message: /unknown argument/ },
        { path: "/pipeline/steps/0/args/set/from", message: /cannot set "from"/ },
        { path: "/pipeline/steps/0/args/set/attachments[0].filename", message: /cannot set/ },
        { path: "/pipeline/steps/0/args/set/subject", message: /must be a string/ },
        {
          path: "/pipeline/steps/0/args/set/text",
          message: /unknown placeholder "\{\{ message.subject \}\}"/,
        },
        {
          path: "/pipeline/steps/0/args/set/headers.x-a",
          message: /unknown placeholder "\{\{ ctx.route \}\}"/,
        },
        { path: "/pipeline/steps/0/args/set/headers.bad:name", message: /cannot set/ },
        { path: "/pipeline/steps/0/args/set/html", message: /finite number/ },
      ],
    ],
  ];
  test.each(invalid)("rejects %s with its path", (_name, pipeline, expected) =>
    expectIssues(pipeline, expected),
  );

  test.each([
    [{ set: { subject: "Order {{ headers.x_order_id }}", "headers.x-route": "{{ ctx.route_id }}" } }, true],
    [{ set: { text: 1, html: true } }, true],
    [{ set: {} }, false],
    [{ set: { subject: ["a"] } }, false],
    [{}, false],
  ] as [Record<string, unknown>, boolean][])("%j: schema and validator agree (valid=%p)", (args, valid) =>
    expectSchemaAgrees(replaceValuesStep, args, valid),
  );
});

describe("replace_values", () => {
  test("sets the subject, bodies and headers from literals and templates", () => {
    const out = run({
      subject: "[{{ ctx.source_type }}] {{subject}} from {{ from[0].name }} <{{ from[0].email }}>",
      text: "route={{ ctx.route_id }} project={{ ctx.project_id }} size={{ ctx.raw_size_bytes }}",
      html: 42,
      "headers.X-Route": "{{ ctx.route_id }}",
      "headers.x-tag": "gamma",
    });
    expect(out.subject).toBe("[smtp] Invoice #42 for March from ACME Billing <billing@mail.acme.io>");
    expect(out.text).toBe("route=rte_9 project=prj_1 size=4321");
    expect(out.html).toBe("42");
    expect(out.headers["x-route"]).toBe("rte_9");
    // a set header has one value: its repeated values are gone
    expect(out.headers["x-tag"]).toBe("gamma");
    expect(out.headers_multi["x-tag"]).toBeUndefined();
  });

  test("templates read the message before the step, whatever the key order", () => {
    const out = run({ text: "was: {{ subject }}", subject: "new" });
    expect(out).toMatchObject({ subject: "new", text: "was: Invoice #42 for March" });
  });

  test("header placeholders ignore case and find a `-` header written with `_`", () => {
    expect(run({ subject: "{{ headers.X-Priority }} / {{ headers.list_id }}" }).subject).toBe(
      "1 (Highest) / <news.acme.io>",
    );
  });

  test("placeholders without a value stay as written", () => {
    const none: TransformContext = { routeId: null, projectId: null, sourceType: null, rawSizeBytes: null };
    expect(
      run({ subject: "{{ headers.x-absent }}|{{ to[3].email }}|{{ ctx.route_id }}|{{ cc[0].name }}" }, none)
        .subject,
    ).toBe("{{ headers.x-absent }}|{{ to[3].email }}|{{ ctx.route_id }}|Accounts");
  });

  test("the input message is never modified", () => {
    const message = makeMessage();
    const before = structuredClone(message);
    applyTransforms(
      [{ name: "replace_values", args: { set: { subject: "x", "headers.a": "b" } } }],
      message,
      ctx,
    );
    expect(message).toEqual(before);
  });
});
