/**
 * `map.slack_simple` and `map.telegram_simple`: their argument checks, and the exact bodies they build
 * for mail that carries each chat's markup characters, long text and characters outside the BMP.
 */
import { describe, expect, test } from "bun:test";
import { slackSimpleStep } from "../../../../services/routing/steps/slack-simple.ts";
import { telegramSimpleStep } from "../../../../services/routing/steps/telegram-simple.ts";
import { makeMessage } from "../../../support/messages.ts";
import { expectIssues, expectSchemaAgrees, mapInput, type RejectCase } from "./support.ts";

/** Mail whose every field carries markup: a would-be mention, a link, an entity, Markdown. */
const tricky = makeMessage({
  subject: "Re: <!channel> 5 > 3 & *bold* _x_",
  from: [{ email: "ops@example.com", name: "Ops <Team> & Co." }],
  text: "See <https://evil.example|click> [a](b) `code` ~s~ #1 + 2 = 3 | {x}. Done! C:\\path\n\n-- \nsig",
  html: "",
});

const slack = (args: Record<string, unknown>, message = tricky) =>
  slackSimpleStep.build(args as never, mapInput({ message }));
const telegram = (args: Record<string, unknown>, message = tricky) =>
  telegramSimpleStep.build(args as never, mapInput({ message }));

describe("chat step validation", () => {
  const invalid: RejectCase[] = [
    [
      "slack without a channel",
      { steps: [{ name: "map.slack_simple", args: {} }] },
      [{ path: "/pipeline/steps/0/args/channel", message: /required/ }],
    ],
    [
      "slack with bad options",
      {
        steps: [
          {
            name: "map.slack_simple",
            args: { channel: " ", max_chars: 40_001, include_from: "yes", prefix: 1, mrkdwn: true },
          },
        ],
      },
      [
        { path: "/pipeline/steps/0/args/mrkdwn", message: /unknown argument/ },
        { path: "/pipeline/steps/0/args/channel", message: /non-empty string/ },
        { path: "/pipeline/steps/0/args/prefix", message: /string/ },
        { path: "/pipeline/steps/0/args/include_from", message: /boolean/ },
        { path: "/pipeline/steps/0/args/max_chars", message: /from 1 to 40000/ },
      ],
    ],
    [
      "telegram with a numeric chat_id, a long text and an unknown parse_mode",
      {
        steps: [
          {
            name: "map.telegram_simple",
            args: { chat_id: -100123, max_chars: 4097, parse_mode: "Markdown" },
          },
        ],
      },
      [
        { path: "/pipeline/steps/0/args/chat_id", message: /\(write "-100123"\)/ },
        { path: "/pipeline/steps/0/args/max_chars", message: /from 1 to 4096/ },
        { path: "/pipeline/steps/0/args/parse_mode", message: /HTML, MarkdownV2/ },
      ],
    ],
    [
      "a prefix as long as max_chars",
      { steps: [{ name: "map.telegram_simple", args: { chat_id: "1", prefix: "[Alert]", max_chars: 7 } }] },
      [{ path: "/pipeline/steps/0/args/prefix", message: /shorter than max_chars/ }],
    ],
  ];
  test.each(invalid)("rejects %s with its path", (_name, pipeline, expected) =>
    expectIssues(pipeline, expected),
  );

  test.each([
    [slackSimpleStep, { channel: "C0123456789" }, true],
    [slackSimpleStep, { channel: "C0123456789", prefix: "[Ops]", max_chars: 700, include_from: true }, true],
    [slackSimpleStep, { channel: "" }, false],
    [slackSimpleStep, { channel: "C1", max_chars: 0 }, false],
    [telegramSimpleStep, { chat_id: "-10012345", parse_mode: "MarkdownV2" }, true],
    [telegramSimpleStep, { chat_id: 5 }, false],
    [telegramSimpleStep, { chat_id: "1", parse_mode: "Markdown" }, false],
  ] as const)("%#: schema and validator agree", (step, args, valid) =>
    expectSchemaAgrees(step, args as Record<string, unknown>, valid),
  );
});

describe("map.slack_simple", () => {
  test("escapes &, < and > of the mail, keeps the prefix as written", async () => {
    expect(await slack({ channel: "C0123456789", prefix: "<!here>" })).toEqual({
      kind: "json",
      contentType: "application/json",
      value: {
        channel: "C0123456789",
        text:
          "<!here> Subject: Re: &lt;!channel&gt; 5 &gt; 3 &amp; *bold* _x_\n" +
          "From: Ops &lt;Team&gt; &amp; Co. &lt;ops@example.com&gt;\n" +
          "See &lt;https://evil.example|click&gt; [a](b) `code` ~s~ #1 + 2 = 3 | {x}. Done! C:\\path\n\n-- \nsig",
      },
    });
  });

  test("MailWebhook's recipe: prefix with a space added, subject, sender, text", async () => {
    const message = makeMessage({
      subject: "Backup failed",
      from: [{ email: "alerts@monitor.example", name: "Alerts" }],
      text: "Backup job nightly-db failed on db-03.\n",
    });
    expect((await slack({ channel: "C0123456789", prefix: "[Ops]" }, message)).value).toEqual({
      channel: "C0123456789",
      // Slack shows `&lt;` as `<`: the sender reads "Alerts <alerts@monitor.example>" in the channel
      text: "[Ops] Subject: Backup failed\nFrom: Alerts &lt;alerts@monitor.example&gt;\nBackup job nightly-db failed on db-03.",
    });
    // a prefix ending in a space is not given another; include_from false drops the sender line
    expect(
      (await slack({ channel: "C1", prefix: "[MailWebhook] ", include_from: false }, message)).value,
    ).toEqual({
      channel: "C1",
      text: "[MailWebhook] Subject: Backup failed\nBackup job nightly-db failed on db-03.",
    });
  });

  test("max_chars counts the text before escaping and ends a cut with …", async () => {
    const message = makeMessage({
      subject: "a<b",
      from: [{ email: "x@y.z", name: "" }],
      text: "0123456789".repeat(10),
    });
    const { value } = (await slack({ channel: "C1", max_chars: 40 }, message)) as { value: { text: string } };
    // 39 characters of "Subject: a<b\nFrom: x@y.z\n0123…" then the ellipsis; `<` is escaped after the cut
    expect(value.text).toBe("Subject: a&lt;b\nFrom: x@y.z\n01234567890123…");
  });

  test("the whole text, prefix and added space included, stays within max_chars", async () => {
    const message = makeMessage({ subject: "s", text: "body" });
    for (const max of [8, 9, 12, 30]) {
      const { value } = (await slack({ channel: "C1", prefix: "[Alert]", max_chars: max }, message)) as {
        value: { text: string };
      };
      expect(value.text.length).toBeLessThanOrEqual(max);
      expect(value.text.startsWith("[Alert]")).toBe(true);
    }
  });

  test("no subject and no text body: a placeholder subject and the HTML rendered", async () => {
    const message = makeMessage({ subject: "", text: "", html: "<p>Only <b>HTML</b> &amp; more</p>" });
    expect(
      ((await slack({ channel: "C1", include_from: false }, message)).value as { text: string }).text,
    ).toBe("Subject: (no subject)\nOnly HTML &amp; more");
  });
});

describe("map.telegram_simple", () => {
  test("without parse_mode the text is sent as is (Telegram shows it literally)", async () => {
    expect(await telegram({ chat_id: "-1001234567890", prefix: "[Alert]" })).toEqual({
      kind: "json",
      contentType: "application/json",
      value: {
        chat_id: "-1001234567890",
        text:
          "[Alert] Subject: Re: <!channel> 5 > 3 & *bold* _x_\n" +
          "From: Ops <Team> & Co. <ops@example.com>\n" +
          "See <https://evil.example|click> [a](b) `code` ~s~ #1 + 2 = 3 | {x}. Done! C:\\path\n\n-- \nsig",
      },
    });
  });

  test("parse_mode HTML escapes <, > and & of the mail, not the prefix", async () => {
    const { value } = await telegram({ chat_id: "@alerts", prefix: "<b>[Alert]</b>", parse_mode: "HTML" });
    expect(value).toEqual({
      chat_id: "@alerts",
      parse_mode: "HTML",
      text:
        "<b>[Alert]</b> Subject: Re: &lt;!channel&gt; 5 &gt; 3 &amp; *bold* _x_\n" +
        "From: Ops &lt;Team&gt; &amp; Co. &lt;ops@example.com&gt;\n" +
        "See &lt;https://evil.example|click&gt; [a](b) `code` ~s~ #1 + 2 = 3 | {x}. Done! C:\\path\n\n-- \nsig",
    });
  });

  test("parse_mode MarkdownV2 escapes every reserved character and the backslash", async () => {
    const { value } = await telegram({ chat_id: "1", prefix: "*Alert*", parse_mode: "MarkdownV2" });
    expect(value).toEqual({
      chat_id: "1",
      parse_mode: "MarkdownV2",
      text:
        "*Alert* Subject: Re: <\\!channel\\> 5 \\> 3 & \\*bold\\* \\_x\\_\n" +
        "From: Ops <Team\\> & Co\\. <ops@example\\.com\\>\n" +
        "See <https://evil\\.example\\|click\\> \\[a\\]\\(b\\) \\`code\\` \\~s\\~ \\#1 \\+ 2 \\= 3 \\| \\{x\\}\\. Done\\! C:\\\\path\n\n\\-\\- \nsig",
    });
  });

  test("a cut never splits a character outside the BMP, and stays within Telegram's 4096", async () => {
    const message = makeMessage({ subject: "x", from: [], text: "😀".repeat(3000) });
    const { value } = (await telegram({ chat_id: "1", max_chars: 4096, include_from: false }, message)) as {
      value: { text: string };
    };
    expect(value.text.length).toBeLessThanOrEqual(4096);
    expect(value.text.endsWith("😀…")).toBe(true);
    expect(value.text.isWellFormed()).toBe(true);
    // the default is 800
    const short = (await telegram({ chat_id: "1" }, message)).value as { text: string };
    expect(short.text.length).toBeLessThanOrEqual(800);
    expect(short.text.startsWith("Subject: x\nFrom: (unknown sender)\n😀")).toBe(true);
  });
});
