import { describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { buildGenericBody, type GenericBodyInput } from "../../../services/routing/generic-body.ts";
import { applyTransforms } from "../../../services/routing/pipeline.ts";
import { genericSchema } from "../../../services/routing/schemas/generic.ts";
import { makeMessage } from "../../support/messages.ts";

const schema = genericSchema("http://127.0.0.1:8080/v1/schemas/");
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

function input(overrides: Partial<GenericBodyInput> = {}): GenericBodyInput {
  return {
    event: {
      id: "7f1c2b1e-0000-4000-8000-000000000001",
      project_id: "prj_1",
      route_id: "rte_1",
      created_at: "2025-03-01T10:00:06.789Z",
    },
    message: makeMessage(),
    rawSizeBytes: 61_234,
    sourceType: "smtp",
    envelope: {
      mail_from: "Bounce@Mail.Acme.io",
      rcpt_to: ["b@in.localhost", "A@in.localhost", "a@in.localhost"],
    },
    ...overrides,
  };
}

function expectValid(body: unknown): void {
  const ok = validate(body);
  if (!ok) console.error(JSON.stringify(validate.errors, null, 2), JSON.stringify(body, null, 2));
  expect(ok).toBe(true);
}

describe("buildGenericBody", () => {
  test("builds the generic@1 shape with sorted people, attachments and headers", () => {
    const m = makeMessage({
      to: [
        { email: "Zed@Example.com ", name: "Zed" },
        { email: "amy@example.com", name: "Amy" },
      ],
      headers: { "X-B": "2", "x-a": "  1\r\n  folded ", Empty: "  " },
      headers_multi: {},
    });
    const body = buildGenericBody(input({ message: m }));
    expect(body).toEqual({
      schema: { name: "generic", version: "1" },
      event: {
        id: "7f1c2b1e-0000-4000-8000-000000000001",
        project_id: "prj_1",
        route_id: "rte_1",
        created_at: "2025-03-01T10:00:06Z",
      },
      message: {
        message_id: "<abc123@mail.example.com>",
        message_id_type: "original",
        subject: "Invoice #42 for March",
        date: "2025-03-01T10:00:00Z",
        from: [{ email: "billing@mail.acme.io", name: "ACME Billing" }],
        to: [
          { email: "amy@example.com", name: "Amy" },
          { email: "zed@example.com", name: "Zed" },
        ],
        cc: [{ email: "accounts@example.com", name: "Accounts" }],
        headers: { "x-a": "1 folded", "x-b": "2" },
      },
      body: {
        text: "Please find the invoice attached.",
        html: "<p>Please find the invoice attached.</p>",
        attachments: [
          {
            id: "att_2",
            filename: "invoice.pdf",
            content_type: "application/pdf",
            size: 52_000,
            is_inline: false,
            sha256: "a".repeat(64),
          },
          {
            id: "att_1",
            filename: "logo.png",
            content_type: "image/png",
            size: 900,
            is_inline: true,
            content_id: "<logo@acme>",
          },
        ],
      },
      meta: { source: "smtp", raw_size_bytes: 61_234, received_at: "2025-03-01T10:00:05Z" },
      envelope: { mail_from: "bounce@mail.acme.io", rcpt_to: ["a@in.localhost", "b@in.localhost"] },
    });
    expectValid(body);
  });

  test("gives byte-identical JSON for the same message in any input order", () => {
    const a = makeMessage();
    const b = makeMessage({
      attachments: [...a.attachments].reverse(),
      to: [...a.to].reverse(),
      headers: Object.fromEntries(Object.entries(a.headers).reverse()),
    });
    expect(JSON.stringify(buildGenericBody(input({ message: b })))).toBe(
      JSON.stringify(buildGenericBody(input({ message: a }))),
    );
  });

  test("sorts attachments by filename, then size, then id", () => {
    const base = { content_type: "text/plain", is_inline: false };
    const m = makeMessage({
      attachments: [
        { ...base, id: "c", filename: "b.txt", size: 1 },
        { ...base, id: "b", filename: "a.txt", size: 20 },
        { ...base, id: "z", filename: "a.txt", size: 3 },
        { ...base, id: "a", filename: "a.txt", size: 3 },
      ],
    });
    expect(buildGenericBody(input({ message: m })).body.attachments.map((x) => x.id)).toEqual([
      "a",
      "z",
      "b",
      "c",
    ]);
  });

  test("omits empty optional fields and keeps attachments as an empty list", () => {
    const m = makeMessage({
      cc: [],
      reply_to: [],
      headers: {},
      headers_multi: {},
      text: "",
      html: "",
      attachments: [],
    });
    const body = buildGenericBody(input({ message: m, envelope: undefined, sourceType: "api" }));
    expect(Object.keys(body.message)).toEqual([
      "message_id",
      "message_id_type",
      "subject",
      "date",
      "from",
      "to",
    ]);
    expect(body.body).toEqual({ attachments: [] });
    expect("envelope" in body).toBe(false);
    expectValid(body);
  });

  test("marks synthetic Message-IDs and keeps a missing or bad Date as null", () => {
    const body = buildGenericBody(
      input({ message: makeMessage({ message_id_is_synthetic: true, date: null }) }),
    );
    expect(body.message.message_id_type).toBe("synthetic");
    expect(body.message.date).toBeNull();
    expect(buildGenericBody(input({ message: makeMessage({ date: "not a date" }) })).message.date).toBeNull();
    expectValid(body);
  });

  test("normalises times given with offsets or as Date objects to whole-second UTC", () => {
    const body = buildGenericBody(
      input({
        event: { id: "e", project_id: "p", route_id: "r", created_at: new Date("2025-03-01T10:00:06.999Z") },
        message: makeMessage({
          date: "2025-03-01T12:00:00.5+02:00",
          received_at: "2025-03-01T11:00:05+01:00",
        }),
      }),
    );
    expect([body.event.created_at, body.message.date, body.meta.received_at]).toEqual([
      "2025-03-01T10:00:06Z",
      "2025-03-01T10:00:00Z",
      "2025-03-01T10:00:05Z",
    ]);
  });

  test("reflects the pipeline's transforms: removed attachments give an empty list", () => {
    const m = applyTransforms(
      [{ name: "remove_fields", args: { paths: ["attachments", "html", "headers"] } }],
      makeMessage(),
    );
    const body = buildGenericBody(input({ message: m }));
    expect(body.body).toEqual({ text: "Please find the invoice attached.", attachments: [] });
    expect(body.message.headers).toBeUndefined();
    expectValid(body);
  });

  test("keeps an empty null reverse-path in the envelope", () => {
    const body = buildGenericBody(input({ envelope: { mail_from: "", rcpt_to: ["x@in.localhost"] } }));
    expect(body.envelope).toEqual({ mail_from: "", rcpt_to: ["x@in.localhost"] });
    expectValid(body);
  });
});

describe("genericSchema", () => {
  test("carries the 2020-12 dialect and an $id under the schema base", () => {
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(schema.$id).toBe("http://127.0.0.1:8080/v1/schemas/transform/generic@1");
  });

  const invalid: [string, (b: Record<string, any>) => void][] = [
    [
      "an unknown top-level key",
      (b) => {
        b.extra = 1;
      },
    ],
    [
      "a missing attachments list",
      (b) => {
        delete b.body.attachments;
      },
    ],
    [
      "fractional seconds",
      (b) => {
        b.event.created_at = "2025-03-01T10:00:06.5Z";
      },
    ],
    [
      "an empty cc list",
      (b) => {
        b.message.cc = [];
      },
    ],
    [
      "an uppercase header name",
      (b) => {
        b.message.headers = { "X-A": "1" };
      },
    ],
    [
      "an unknown source",
      (b) => {
        b.meta.source = "gmail";
      },
    ],
    [
      "a wrong schema name",
      (b) => {
        b.schema.name = "mailwebhook.generic";
      },
    ],
    [
      "an attachment with a download URL",
      (b) => {
        b.body.attachments[0].url = "http://x";
      },
    ],
  ];
  test.each(invalid)("rejects %s", (_name, mutate) => {
    const body = structuredClone(buildGenericBody(input())) as unknown as Record<string, any>;
    mutate(body);
    expect(validate(body)).toBe(false);
  });
});
