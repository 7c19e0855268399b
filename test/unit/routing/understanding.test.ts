/**
 * What the service understands about a message, read downstream: the defaults for messages stored
 * without it, generic@1 pinned byte for byte, generic@2 and its schema, the step's version argument,
 * the mapper's evaluation root (message fields and ctx.envelope) and the rule keys on it.
 */
import { describe, expect, test } from "bun:test";
import Ajv2020 from "ajv/dist/2020";
import { noAuth } from "../../../mapper/types.ts";
import type { Envelope, NormalizedMessage } from "../../../services/lib/message.ts";
import { understandingOf } from "../../../services/lib/understanding.ts";
import {
  buildGenericBody,
  buildGenericBodyV2,
  type GenericBodyInput,
} from "../../../services/routing/generic-body.ts";
import { applyTransforms } from "../../../services/routing/pipeline.ts";
import { matchRule, validateRule } from "../../../services/routing/rules.ts";
import { genericV2Schema } from "../../../services/routing/schemas/generic.ts";
import { mapperInput, plusTagOf } from "../../../services/routing/steps/custom-json.ts";
import { genericJsonStep } from "../../../services/routing/steps/generic-json.ts";
import { makeMessage } from "../../support/messages.ts";
import { expectSchemaAgrees, mapInput } from "./steps/support.ts";

const UNDERSTOOD: Partial<NormalizedMessage> = {
  thread_id: "<t@x>",
  reply_text: "r",
  text_source: "text",
  forwarded: null,
  message_id_conflict: true,
  spam: { score: 9, action: "reject", symbols: ["X"] },
};

function input(message: NormalizedMessage, envelope?: Envelope): GenericBodyInput {
  return {
    event: {
      id: "7f1c2b1e-0000-4000-8000-000000000001",
      project_id: "prj_1",
      route_id: "rte_1",
      created_at: "2025-03-01T10:00:06.789Z",
    },
    message,
    rawSizeBytes: 61_234,
    sourceType: "smtp",
    ...(envelope ? { envelope } : {}),
  };
}

const ENVELOPE: Envelope = {
  mail_from: "Bounce@Mail.Acme.io",
  rcpt_to: ["b@in.localhost", "A@in.localhost"],
  helo: "h",
  client_ip: "127.0.0.1",
};

describe("understandingOf", () => {
  test("defaults every field of a message stored before it was computed", () => {
    const m = makeMessage({
      headers: { references: "  <root@x> <mid@x>", "in-reply-to": "<mid@x>" },
      text: "  Hello\n\n",
    });
    expect(understandingOf(m)).toEqual({
      thread_id: "<root@x>",
      reply_text: "Hello",
      text_source: "text",
      forwarded: null,
      auto: { kind: "none", auto_submitted: null, list_id: null, dsn: null },
      auth: noAuth(),
      spam: null,
      message_id_conflict: false,
    });
  });

  test("thread_id falls back to In-Reply-To, then to the message's own Message-ID", () => {
    expect(understandingOf(makeMessage({ headers: { "in-reply-to": "x <p@x>" } })).thread_id).toBe("<p@x>");
    expect(understandingOf(makeMessage({ headers: {} })).thread_id).toBe("<abc123@mail.example.com>");
  });

  test("text_source is html for HTML-only mail and none without a body; auto comes from headers", () => {
    expect(understandingOf(makeMessage({ text: "", html: "<p>x</p>" })).text_source).toBe("html");
    expect(understandingOf(makeMessage({ text: "", html: "" })).text_source).toBe("none");
    expect(understandingOf(makeMessage()).auto).toMatchObject({ kind: "list", list_id: "<news.acme.io>" });
    expect(understandingOf(makeMessage({ headers: { "auto-submitted": "auto-generated" } })).auto.kind).toBe(
      "auto_generated",
    );
  });

  test("keeps the fields a message carries as they are", () => {
    const u = understandingOf(makeMessage(UNDERSTOOD));
    expect(u).toMatchObject(UNDERSTOOD);
  });
});

describe("generic@1 stays as it was", () => {
  test("byte for byte, whatever the message understands", () => {
    const body = buildGenericBody(input(makeMessage(UNDERSTOOD), ENVELOPE));
    expect(JSON.stringify(body)).toBe(
      '{"schema":{"name":"generic","version":"1"},"event":{"id":"7f1c2b1e-0000-4000-8000-000000000001","project_id":"prj_1","route_id":"rte_1","created_at":"2025-03-01T10:00:06Z"},"message":{"message_id":"<abc123@mail.example.com>","message_id_type":"original","subject":"Invoice #42 for March","date":"2025-03-01T10:00:00Z","from":[{"email":"billing@mail.acme.io","name":"ACME Billing"}],"to":[{"email":"inbox+invoices@in.localhost","name":""}],"cc":[{"email":"accounts@example.com","name":"Accounts"}],"headers":{"list-id":"<news.acme.io>","message-id":"<abc123@mail.example.com>","x-priority":"1 (Highest)","x-tag":"alpha, beta"}},"body":{"text":"Please find the invoice attached.","html":"<p>Please find the invoice attached.</p>","attachments":[{"id":"att_2","filename":"invoice.pdf","content_type":"application/pdf","size":52000,"is_inline":false,"sha256":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},{"id":"att_1","filename":"logo.png","content_type":"image/png","size":900,"is_inline":true,"content_id":"<logo@acme>"}]},"meta":{"source":"smtp","raw_size_bytes":61234,"received_at":"2025-03-01T10:00:05Z"},"envelope":{"mail_from":"bounce@mail.acme.io","rcpt_to":["a@in.localhost","b@in.localhost"]}}',
    );
  });

  test("the step with {} or version 1 builds generic@1", () => {
    const plain = genericJsonStep.build({}, mapInput());
    expect(genericJsonStep.build({ version: "1" }, mapInput())).toEqual(plain);
    expect((plain.value as { schema: unknown }).schema).toEqual({ name: "generic", version: "1" });
  });
});

describe("generic@2", () => {
  const validate = new Ajv2020({ strict: true, allErrors: true }).compile(
    genericV2Schema("http://127.0.0.1:8080/v1/schemas"),
  );

  test("every generic@1 member plus the understanding, valid against its schema", () => {
    const message = makeMessage({
      ...UNDERSTOOD,
      forwarded: {
        from: [{ email: "Zed@x.org", name: "Zed" }],
        to: [],
        cc: [],
        date: "2025-02-01T08:00:00.500Z",
        subject: "orig",
        message_id: null,
        text: "original text",
      },
    });
    const v1 = buildGenericBody(input(message, ENVELOPE));
    const v2 = buildGenericBodyV2(input(message, ENVELOPE));
    expect(Object.keys(v2)).toEqual(["schema", "event", "message", "body", "meta", "envelope", "spam"]);
    expect(v2.schema).toEqual({ name: "generic", version: "2" });
    expect(v2.message).toMatchObject(v1.message);
    expect(v2.body).toMatchObject(v1.body);
    expect(v2.message.thread_id).toBe("<t@x>");
    expect(v2.message.message_id_conflict).toBe(true);
    expect(v2.message.forwarded).toEqual({
      from: [{ email: "zed@x.org", name: "Zed" }],
      to: [],
      cc: [],
      date: "2025-02-01T08:00:00Z",
      subject: "orig",
      message_id: null,
      text: "original text",
    });
    expect(v2.body.reply_text).toBe("r");
    expect(v2.body.text_source).toBe("text");
    expect(v2.spam).toEqual({ score: 9, action: "reject", symbols: ["X"] });
    expect(validate(v2), JSON.stringify(validate.errors)).toBe(true);
  });

  test("a message stored without the analyses gets the defaults, spam null, and is still valid", () => {
    const v2 = buildGenericBodyV2(input(makeMessage({ cc: [], headers: {} })));
    expect(v2.spam).toBeNull();
    expect(v2.message.auth).toEqual(noAuth());
    expect(v2.message.message_id_conflict).toBe(false);
    expect("envelope" in v2).toBe(false);
    expect(validate(v2), JSON.stringify(validate.errors)).toBe(true);
  });

  test("the step builds it for version 2 and validates the argument", () => {
    const built = genericJsonStep.build({ version: "2" }, mapInput());
    expect((built.value as { schema: unknown }).schema).toEqual({ name: "generic", version: "2" });
    expectSchemaAgrees(genericJsonStep, { version: "2" }, true);
    expectSchemaAgrees(genericJsonStep, { version: "1" }, true);
    expectSchemaAgrees(genericJsonStep, { version: "3" }, false);
    expectSchemaAgrees(genericJsonStep, { version: 2 }, false);
    expect(genericJsonStep.validate({ version: "3" }, "/args")).toEqual([
      { path: "/args/version", message: 'must be "1" or "2"' },
    ]);
  });
});

describe("the mapper's evaluation root", () => {
  test("message carries every understanding field; ctx.envelope the SMTP envelope with its +tag", () => {
    const root = mapperInput(
      mapInput({
        envelope: {
          mail_from: "a@x",
          rcpt_to: ["tok+Orders@in.localhost", "tok+b@in.localhost"],
          helo: "mx.x",
          client_ip: "::1",
        },
      }),
    );
    const message = root.message as Record<string, unknown>;
    for (const key of [
      "thread_id",
      "reply_text",
      "text_source",
      "forwarded",
      "auto",
      "auth",
      "spam",
      "message_id_conflict",
    ])
      expect(Object.hasOwn(message, key)).toBe(true);
    expect(root.ctx.envelope).toEqual({
      mail_from: "a@x",
      rcpt_to: ["tok+Orders@in.localhost", "tok+b@in.localhost"],
      helo: "mx.x",
      client_ip: "::1",
      tag: "Orders",
    });
  });

  test("ctx.envelope is null for other sources, and helo/client_ip null when not stored", () => {
    expect(mapperInput(mapInput({ sourceType: "api", envelope: null })).ctx.envelope).toBeNull();
    expect(mapperInput(mapInput()).ctx.envelope).toMatchObject({ helo: null, client_ip: null, tag: null });
    expect(plusTagOf("a+@x")).toBeNull();
    expect(plusTagOf("a+b+c@x")).toBe("b+c");
  });
});

describe("rule keys on the understanding", () => {
  const auth = {
    source: "smtp" as const,
    spf: { result: "pass" as const, domain: "x.org" },
    dkim: [
      { result: "fail" as const, domain: "bad.org", selector: "s", aligned: false },
      { result: "pass" as const, domain: "Good.org", selector: "s", aligned: true },
    ],
    dmarc: { result: "fail" as const, policy: "reject" as const, domain: "x.org" },
    arc: { result: "none" as const },
  };
  const m = makeMessage({ auth, spam: { score: 6.5, action: "add header", symbols: [] } });

  test.each([
    ["auto_kind_in", { auto_kind_in: ["list", "bounce"] }, true],
    ["auto_kind_in (miss)", { auto_kind_in: "auto_reply" }, false],
    ["spf_in", { spf_in: ["PASS"] }, true],
    ["dmarc_in", { dmarc_in: ["pass"] }, false],
    ["dkim_pass_domains", { dkim_pass_domains: ["good.org"] }, true],
    ["dkim_pass_domains ignores failing signatures", { dkim_pass_domains: ["bad.org"] }, false],
    ["spam_score_gte", { spam_score_gte: 6.5 }, true],
    ["spam_score_lt", { spam_score_lt: 6.5 }, false],
    ["has_forwarded", { has_forwarded: false }, true],
    ["has_forwarded true", { has_forwarded: true }, false],
    ["negate spam_score_gte", { negate: { spam_score_gte: 10 } }, true],
  ])("%s", (_name, rule, expected) => {
    expect(validateRule(rule)).toEqual([]);
    expect(matchRule(rule, m)).toBe(expected);
  });

  test("spam_score_* never hold without a verdict; defaults apply to old messages", () => {
    const old = makeMessage();
    expect(matchRule({ spam_score_gte: 0 }, old)).toBe(false);
    expect(matchRule({ spam_score_lt: 100 }, old)).toBe(false);
    expect(matchRule({ spf_in: ["none"] }, old)).toBe(true);
    expect(matchRule({ auto_kind_in: ["list"] }, old)).toBe(true);
  });

  test("rejects bad values with their paths", () => {
    const issues = validateRule({
      auto_kind_in: ["holiday"],
      spf_in: [],
      dmarc_in: ["pass", 3],
      dkim_pass_domains: ["a@b"],
      spam_score_gte: "5",
      spam_score_lt: Number.NaN,
      has_forwarded: "yes",
    });
    expect(issues.map((i) => i.path)).toEqual([
      "/rule/auto_kind_in/0",
      "/rule/spf_in",
      "/rule/dmarc_in/1",
      "/rule/dkim_pass_domains/0",
      "/rule/spam_score_gte",
      "/rule/spam_score_lt",
      "/rule/has_forwarded",
    ]);
    expect(issues[0]?.message).toMatch(/must be one of none, auto_reply/);
    expect(issues[4]?.message).toMatch(/must be a number/);
    expect(issues[6]?.message).toMatch(/true or false/);
  });
});

describe("remove_fields text", () => {
  test("also clears what is derived from the text body: reply_text and a forwarded original's text", () => {
    const forwarded = {
      from: [],
      to: [],
      cc: [],
      date: null,
      subject: "s",
      message_id: null,
      text: "secret",
    };
    const out = applyTransforms(
      [{ name: "remove_fields", args: { paths: ["text"] } }],
      makeMessage({ reply_text: "secret", forwarded }),
    );
    expect(out.text).toBe("");
    expect(buildGenericBodyV2(input(out)).body.reply_text).toBe("");
    expect(out.forwarded?.text).toBe("");
  });
});
