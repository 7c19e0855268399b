/** previewMapper, the one preview flow the API and the playground share: config, then message, then run. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type PreviewSource, previewMapper } from "../../services/resources/mapper-preview.ts";
import { recentMessages } from "../../services/ui/data.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

const [kind] = testDbKinds();

describe(`previewMapper on ${kind}`, () => {
  let app: TestApp;
  let projectId: string;
  let storedId: string;
  const subjectOf = { version: "v1", output: { var: "message.subject" } };

  beforeAll(async () => {
    app = await createTestApp(kind ?? "pglite");
    const project = await app.newProject("preview");
    projectId = project.id;
    const raw = "From: a@example.com\r\nSubject: stored one\r\nMessage-ID: <p-1@example.com>\r\n\r\nhi\r\n";
    const posted = await app.request("POST", "/v1/messages", {
      apiKey: project.apiKey,
      rawBody: raw,
      headers: { "content-type": "message/rfc822" },
    });
    expect(posted.status, posted.text).toBe(202);
    const [stored] = await recentMessages(app.ctx, projectId);
    storedId = stored?.id ?? "";
  });
  afterAll(async () => {
    await app?.close();
  });

  const run = (source: PreviewSource, config: unknown = subjectOf) =>
    previewMapper(app.ctx, projectId, { config, source });

  test("runs the config on each kind of message source", async () => {
    expect((await run({ kind: "inline", fields: { subject: "inline" } })) as object).toMatchObject({
      ok: true,
      output: "inline",
    });
    const raw = { kind: "raw", text: "Subject: pasted\r\n\r\nx\r\n" } as const;
    expect((await run(raw)) as object).toMatchObject({ ok: true, output: "pasted" });
    for (const messageId of ["<p-1@example.com>", " p-1@example.com "]) {
      expect((await run({ kind: "message_id", messageId })) as object).toMatchObject({
        ok: true,
        output: "stored one",
      });
    }
    expect((await run({ kind: "stored", id: storedId })) as object).toMatchObject({
      ok: true,
      output: "stored one",
    });
  });

  test("reports config issues at pointers into the config, before looking at the message", async () => {
    const result = await run(
      { kind: "stored", id: "msg_nope" },
      { version: "v1", output: { a: { "nope.op": 1 } } },
    );
    expect(result).toMatchObject({ ok: false, stage: "config" });
    if (!result.ok && result.stage === "config") expect(result.issues[0]?.path).toStartWith("/output/a");
    expect(await run({ kind: "inline", fields: {} }, "not an object")).toMatchObject({
      stage: "config",
      issues: [{ path: "", message: expect.stringContaining("must be an object") }],
    });
  });

  test.each([
    ["an unknown Message-ID", "not_found", { kind: "message_id", messageId: "<nope@x>" }],
    ["an unknown stored id", "not_found", { kind: "stored", id: "msg_nope" }],
    ["an empty paste", "unparseable", { kind: "raw", text: "" }],
    [
      "a paste over the caller's limit",
      "too_large",
      { kind: "raw", text: "Subject: x\r\n\r\n", maxBytes: 4 },
    ],
  ] as [string, string, PreviewSource][])("%s is the message problem %s", async (_name, problem, source) => {
    expect(await run(source)).toMatchObject({ ok: false, stage: "message", problem });
  });

  test("another project cannot preview on this project's stored message", async () => {
    const other = await app.newProject("other");
    for (const source of [
      { kind: "stored", id: storedId },
      { kind: "message_id", messageId: "<p-1@example.com>" },
    ] as PreviewSource[]) {
      const result = await previewMapper(app.ctx, other.id, { config: subjectOf, source });
      expect(result).toMatchObject({ ok: false, stage: "message", problem: "not_found" });
    }
  });

  test("a guard overrun is a runtime result carrying the mapper's error", async () => {
    const loop = {
      version: "v1",
      output: {
        map: { over: { var: "meta.xs" }, as: "x", do: { map: { over: { var: "meta.xs" }, as: "y", do: 1 } } },
      },
    };
    const result = await previewMapper(app.ctx, projectId, {
      config: loop,
      source: { kind: "inline", fields: {} },
      meta: { xs: Array.from({ length: 200 }, (_, i) => i) },
    });
    expect(result).toMatchObject({ ok: false, stage: "runtime" });
    if (!result.ok && result.stage === "runtime") expect(result.error.code).toBe("mapper.nodes_exceeded");
  });
});
