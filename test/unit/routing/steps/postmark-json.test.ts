/** `map.postmark_json` and `map.raw_mime` as steps: their argument checks and the body fields they derive. */
import { describe, expect, test } from "bun:test";
import {
  headerSpelling,
  mailboxHash,
  postmarkJsonStep,
} from "../../../../services/routing/steps/postmark-json.ts";
import { rawMimeStep } from "../../../../services/routing/steps/raw-mime.ts";
import type { MapDeps } from "../../../../services/routing/steps/types.ts";
import { makeMessage } from "../../../support/messages.ts";
import { expectIssues, expectSchemaAgrees, mapInput, type RejectCase } from "./support.ts";

const files: Record<string, Uint8Array> = { att_1: new Uint8Array([1, 2, 3]), att_2: new Uint8Array([4]) };
const deps: MapDeps = {
  runMapper: async () => null,
  readRaw: async () => new TextEncoder().encode("Subject: é\r\n\r\nhi"),
  readAttachment: async (id) => files[id] as Uint8Array,
};
const build = async (args: Record<string, unknown>, over = {}, d: MapDeps = deps) =>
  (await postmarkJsonStep.build(args, mapInput({ message: makeMessage(over) }), d)).value as Record<
    string,
    any
  >;

describe("map.postmark_json and map.raw_mime validation", () => {
  const invalid: RejectCase[] = [
    [
      "a non-boolean include_raw_email and an unknown argument",
      { steps: [{ name: "map.postmark_json", args: { include_raw_email: "yes", tag: "x" } }] },
      [
        { path: "/pipeline/steps/0/args/tag", message: /unknown argument/ },
        { path: "/pipeline/steps/0/args/include_raw_email", message: /boolean/ },
      ],
    ],
    [
      "raw_mime with an argument",
      { steps: [{ name: "map.raw_mime", args: { base64: true } }] },
      [{ path: "/pipeline/steps/0/args/base64", message: /unknown argument/ }],
    ],
  ];
  test.each(invalid)("rejects %s with its path", (_name, pipeline, expected) =>
    expectIssues(pipeline, expected),
  );
  test("schemas agree", () => {
    expectSchemaAgrees(postmarkJsonStep, { include_raw_email: false }, true);
    expectSchemaAgrees(postmarkJsonStep, { include_raw_email: 1 }, false);
    expectSchemaAgrees(rawMimeStep, {}, true);
    expectSchemaAgrees(rawMimeStep, { x: 1 }, false);
  });
});

describe("map.postmark_json", () => {
  test("the fields of the sample message", async () => {
    const pm = await build({});
    expect(pm).toMatchObject({
      From: "billing@mail.acme.io",
      FromName: "ACME Billing",
      To: "inbox+invoices@in.localhost",
      ToFull: [{ Email: "inbox+invoices@in.localhost", Name: "", MailboxHash: "invoices" }],
      Cc: '"Accounts" <accounts@example.com>',
      // the envelope recipient is the original recipient
      OriginalRecipient: "b@in.localhost",
      MailboxHash: "",
      MessageID: "0190b3a0-0000-7000-8000-000000000001",
      // no Date header: the received time in RFC 5322 form
      Date: "Sat, 01 Mar 2025 10:00:05 +0000",
      StrippedTextReply: "Please find the invoice attached.",
    });
    expect(pm).not.toHaveProperty("RawEmail");
    // repeated headers once per value, names in their usual spelling
    expect(pm.Headers).toEqual([
      { Name: "Message-ID", Value: "<abc123@mail.example.com>" },
      { Name: "X-Priority", Value: "1 (Highest)" },
      { Name: "X-Tag", Value: "alpha" },
      { Name: "X-Tag", Value: "beta" },
      { Name: "List-ID", Value: "<news.acme.io>" },
    ]);
    expect(pm.Attachments).toEqual([
      {
        Name: "invoice.pdf",
        Content: "BA==",
        ContentType: "application/pdf",
        ContentLength: 52_000,
        ContentID: "",
      },
      {
        Name: "logo.png",
        Content: "AQID",
        ContentType: "image/png",
        ContentLength: 900,
        ContentID: "logo@acme",
      },
    ]);
  });

  test("StrippedTextReply is the reply text when the message has one; RawEmail when asked", async () => {
    const pm = await build(
      { include_raw_email: true },
      { reply_text: "Yes.", headers: { date: "Fri, 1 Aug 2014 16:45:32 -0400" } },
    );
    expect(pm.StrippedTextReply).toBe("Yes.");
    expect(pm.Date).toBe("Fri, 1 Aug 2014 16:45:32 -0400");
    expect(pm.RawEmail).toBe("Subject: é\r\n\r\nhi");
  });

  test("without stored bytes (no readers) the step fails instead of sending empty contents", async () => {
    await expect(build({}, {}, { runMapper: deps.runMapper })).rejects.toThrow(/not available/);
    await expect(rawMimeStep.build({}, mapInput(), { runMapper: deps.runMapper })).rejects.toThrow(
      /not available/,
    );
  });

  test("header spelling and mailbox hashes", () => {
    expect(
      ["message-id", "mime-version", "dkim-signature", "x-spam-score", "arc-seal"].map(headerSpelling),
    ).toEqual(["Message-ID", "MIME-Version", "DKIM-Signature", "X-Spam-Score", "ARC-Seal"]);
    expect(mailboxHash("a+b+c@x.y")).toBe("b+c");
    expect(mailboxHash("a@x.y")).toBe("");
    expect(mailboxHash("")).toBe("");
  });
});
