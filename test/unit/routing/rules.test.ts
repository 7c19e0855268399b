import { describe, expect, test } from "bun:test";
import { compileRule, InvalidRuleError, matchRule, validateRule } from "../../../services/routing/rules.ts";
import { makeMessage } from "../../support/messages.ts";

describe("validateRule", () => {
  const valid: [string, unknown][] = [
    ["the empty rule", {}],
    [
      "every string leaf as a string",
      {
        subject_contains: "invoice",
        subject_regex: "^invoice #\\d+",
        to_contains: "+invoices@",
        to_emails: "ops@example.com",
        from_contains: "acme",
        from_emails: "billing@acme.io",
        from_domains: "acme.io",
        attachments_mime: "image/*",
      },
    ],
    [
      "every string leaf as a list",
      {
        subject_contains: ["a", "b"],
        subject_regex: ["(?i)x", "y$"],
        to_contains: ["a"],
        to_emails: ["a@b.c"],
        from_contains: ["x"],
        from_emails: ["x@y.z"],
        from_domains: ["acme.io", "example.com."],
        attachments_mime: ["application/pdf", "*", "image/p?g"],
      },
    ],
    [
      "header conditions with strings, lists and empty values",
      {
        headers_equals: { "X-Priority": "1", "list-id": ["<a>", "<b>"] },
        headers_contains: { "x-tag": "", Received: ["mx1"] },
      },
    ],
    ["nested combinators", { all: [{ any: [{ none: [{ negate: { subject_contains: "x" } }] }] }] }],
  ];
  test.each(valid)("accepts %s", (_name, rule) => {
    expect(validateRule(rule)).toEqual([]);
  });

  const invalid: [string, unknown, { path: string; message: RegExp }[]][] = [
    ["a non-object rule", "subject", [{ path: "/rule", message: /must be an object/ }]],
    ["null", null, [{ path: "/rule", message: /must be an object/ }]],
    ["an array rule", [], [{ path: "/rule", message: /must be an object/ }]],
    ["an unknown key", { subject: "x" }, [{ path: "/rule/subject", message: /unknown rule key "subject"/ }]],
    [
      "an unknown key nested in a combinator",
      { any: [{}, { body_contains: "x" }] },
      [{ path: "/rule/any/1/body_contains", message: /unknown rule key/ }],
    ],
    [
      "a number leaf",
      { subject_contains: 3 },
      [{ path: "/rule/subject_contains", message: /string or a non-empty array/ }],
    ],
    ["an empty leaf list", { to_emails: [] }, [{ path: "/rule/to_emails", message: /must not be empty/ }]],
    [
      "a non-string list item",
      { from_contains: ["a", 1] },
      [{ path: "/rule/from_contains/1", message: /must be a string/ }],
    ],
    ["a blank substring", { subject_contains: "  " }, [{ path: "/rule/subject_contains", message: /blank/ }]],
    [
      "a bad regex",
      { subject_regex: ["ok", "(unclosed"] },
      [{ path: "/rule/subject_regex/1", message: /invalid RE2 regular expression/ }],
    ],
    [
      "a backreference (not RE2)",
      { subject_regex: "(a)\\1" },
      [{ path: "/rule/subject_regex", message: /RE2/ }],
    ],
    ["a lookahead (not RE2)", { subject_regex: "a(?=b)" }, [{ path: "/rule/subject_regex", message: /RE2/ }]],
    [
      "a non-email in to_emails",
      { to_emails: "ops" },
      [{ path: "/rule/to_emails", message: /email address/ }],
    ],
    [
      "a non-email in from_emails",
      { from_emails: ["a b@c"] },
      [{ path: "/rule/from_emails/0", message: /email/ }],
    ],
    [
      "an @ in from_domains",
      { from_domains: "@acme.io" },
      [{ path: "/rule/from_domains", message: /domain/ }],
    ],
    [
      "an empty label in from_domains",
      { from_domains: "acme..io" },
      [{ path: "/rule/from_domains", message: /domain/ }],
    ],
    [
      "a bad MIME glob",
      { attachments_mime: "pdf" },
      [{ path: "/rule/attachments_mime", message: /MIME type/ }],
    ],
    [
      "headers as a list",
      { headers_equals: ["x"] },
      [{ path: "/rule/headers_equals", message: /header name/ }],
    ],
    [
      "an empty headers object",
      { headers_contains: {} },
      [{ path: "/rule/headers_contains", message: /at least one/ }],
    ],
    [
      "a bad header name",
      { headers_equals: { "x:y": "1" } },
      [{ path: "/rule/headers_equals/x:y", message: /invalid header name/ }],
    ],
    [
      "a header value that is a number",
      { headers_equals: { "x-a": 1 } },
      [{ path: "/rule/headers_equals/x-a", message: /string/ }],
    ],
    [
      "a header name with a slash, escaped in the path",
      { headers_equals: { "a/b~": 2 } },
      [{ path: "/rule/headers_equals/a~1b~0", message: /string/ }],
    ],
    ["all that is not a list", { all: {} }, [{ path: "/rule/all", message: /must be an array/ }]],
    ["an empty any", { any: [] }, [{ path: "/rule/any", message: /must not be empty/ }]],
    ["a non-object in none", { none: ["x"] }, [{ path: "/rule/none/0", message: /must be an object/ }]],
    ["negate of a list", { negate: [{}] }, [{ path: "/rule/negate", message: /must be an object/ }]],
    [
      "several problems at once",
      { foo: 1, to_emails: "x", any: [{ bar: 2 }] },
      [
        { path: "/rule/foo", message: /unknown/ },
        { path: "/rule/to_emails", message: /email/ },
        { path: "/rule/any/0/bar", message: /unknown/ },
      ],
    ],
  ];
  test.each(invalid)("rejects %s with its path", (_name, rule, expected) => {
    const issues = validateRule(rule);
    expect(issues.map((i) => i.path)).toEqual(expected.map((e) => e.path));
    issues.forEach((issue, i) => {
      expect(issue.message).toMatch(expected[i]!.message);
    });
  });

  test("uses the given base path", () => {
    expect(validateRule({ x: 1 }, "/routes/0/rule")).toEqual([
      { path: "/routes/0/rule/x", message: 'unknown rule key "x"' },
    ]);
  });

  test("rejects nesting deeper than 8 levels", () => {
    let rule: unknown = {};
    for (let i = 0; i < 8; i++) rule = { negate: rule };
    const issues = validateRule(rule);
    expect(issues).toHaveLength(1);
    expect(issues[0]!.message).toMatch(/deeper than 8/);
  });

  test("rejects lists longer than 100 entries and strings longer than 1000 characters", () => {
    expect(validateRule({ subject_contains: Array(101).fill("x") })[0]!.message).toMatch(/at most 100/);
    expect(validateRule({ subject_contains: "x".repeat(1001) })[0]!.message).toMatch(/at most 1000/);
  });

  test("rejects a tree with more than 1000 rules and values, reporting it once", () => {
    const rule = { any: Array.from({ length: 20 }, () => ({ subject_contains: Array(60).fill("x") })) };
    const issues = validateRule(rule);
    expect(issues).toHaveLength(1);
    expect(issues[0]!.message).toMatch(/too large/);
  });
});

describe("matchRule", () => {
  const msg = makeMessage();
  const cases: [string, unknown, boolean][] = [
    ["{} matches every message", {}, true],
    ["subject_contains ignores case", { subject_contains: "INVOICE" }, true],
    ["subject_contains misses", { subject_contains: "receipt" }, false],
    ["a list is OR", { subject_contains: ["receipt", "march"] }, true],
    ["subject_regex is case-insensitive RE2", { subject_regex: "^invoice #\\d+" }, true],
    ["subject_regex searches anywhere", { subject_regex: "#4[0-9]" }, true],
    ["subject_regex misses", { subject_regex: "^march" }, false],
    ["to_contains sees To", { to_contains: "+INVOICES@" }, true],
    ["to_contains sees Cc", { to_contains: "accounts@" }, true],
    ["to_emails is an exact address", { to_emails: "Accounts@Example.com" }, true],
    ["to_emails is not a substring match", { to_emails: "counts@example.com" }, false],
    ["from_contains", { from_contains: "acme" }, true],
    ["from_contains does not look at To", { from_contains: "accounts" }, false],
    ["from_emails", { from_emails: ["x@y.z", "BILLING@mail.acme.io"] }, true],
    ["from_domains is an exact domain", { from_domains: "MAIL.acme.io" }, true],
    ["from_domains does not match a parent domain", { from_domains: "acme.io" }, false],
    ["from_domains ignores a trailing dot", { from_domains: "mail.acme.io." }, true],
    [
      "headers_equals compares whole values, ignoring case and spacing",
      { headers_equals: { "X-Priority": " 1 (highest) " } },
      true,
    ],
    ["headers_equals misses a partial value", { headers_equals: { "x-priority": "1" } }, false],
    ["headers_equals sees each value of a repeated header", { headers_equals: { "x-tag": "beta" } }, true],
    [
      "headers_equals also sees the joined value of a repeated header",
      { headers_equals: { "x-tag": "ALPHA, beta" } },
      true,
    ],
    [
      "headers_equals needs every named header (AND)",
      { headers_equals: { "x-tag": "beta", "x-priority": "2" } },
      false,
    ],
    ["headers_equals values are OR", { headers_equals: { "x-priority": ["2", "1 (Highest)"] } }, true],
    ["headers_contains finds a substring", { headers_contains: { "list-id": "acme.io" } }, true],
    ["headers_contains '' means the header is present", { headers_contains: { "list-id": "" } }, true],
    ["a missing header never matches", { headers_contains: { "x-missing": "" } }, false],
    ["attachments_mime matches a glob", { attachments_mime: "IMAGE/*" }, true],
    ["attachments_mime matches an exact type", { attachments_mime: "application/pdf" }, true],
    [
      "attachments_mime fails when no attachment matches",
      { attachments_mime: ["text/*", "video/mp4"] },
      false,
    ],
    ["keys are AND", { subject_contains: "invoice", from_domains: "other.org" }, false],
    [
      "all requires every sub-rule",
      { all: [{ subject_contains: "invoice" }, { from_contains: "acme" }] },
      true,
    ],
    ["all fails on one miss", { all: [{ subject_contains: "invoice" }, { from_contains: "nope" }] }, false],
    ["any needs one sub-rule", { any: [{ subject_contains: "nope" }, { from_contains: "acme" }] }, true],
    [
      "none fails when a sub-rule matches",
      { none: [{ subject_contains: "nope" }, { from_contains: "acme" }] },
      false,
    ],
    ["none passes when nothing matches", { none: [{ subject_contains: "nope" }] }, true],
    ["negate inverts", { negate: { subject_contains: "invoice" } }, false],
    ["negate of {} matches nothing", { negate: {} }, false],
  ];
  test.each(cases)("%s", (_name, rule, expected) => {
    expect(matchRule(rule, msg)).toBe(expected);
  });

  test("attachments_mime fails on a message without attachments, ignoring content-type parameters otherwise", () => {
    expect(matchRule({ attachments_mime: "*" }, makeMessage({ attachments: [] }))).toBe(false);
    const withParams = makeMessage();
    withParams.attachments[0]!.content_type = "Text/Plain; charset=utf-8";
    expect(matchRule({ attachments_mime: "text/plain" }, withParams)).toBe(true);
  });

  test("to_* also see the SMTP envelope recipients when an envelope is given", () => {
    const rule = { to_emails: "bcc-route@in.localhost" };
    expect(matchRule(rule, msg)).toBe(false);
    expect(matchRule(rule, msg, { mail_from: "b@x.y", rcpt_to: ["BCC-route@in.localhost"] })).toBe(true);
  });

  test("a compiled rule evaluates many messages", () => {
    const isInvoice = compileRule({ subject_regex: "invoice", attachments_mime: "application/pdf" });
    const results = Array.from({ length: 200 }, (_, i) =>
      isInvoice(makeMessage({ subject: i % 2 === 0 ? "Invoice" : "Hello" })),
    );
    expect(results.filter(Boolean)).toHaveLength(100);
  });

  test("compileRule throws InvalidRuleError carrying the issues", () => {
    try {
      compileRule({ subject_regex: "(" });
      throw new Error("expected a throw");
    } catch (err) {
      expect(err).toBeInstanceOf(InvalidRuleError);
      expect((err as InvalidRuleError).details[0]!.path).toBe("/rule/subject_regex");
    }
  });
});
