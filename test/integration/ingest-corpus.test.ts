// Every corpus message through ingestMessage (PGlite: the pipeline, not the database, is under test;
// only when MAILHOOK_CORPUS_DIR is set), plus the size limits that need large inputs.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { sql } from "drizzle-orm";
import { ingestMessage, MAX_RAW_BYTES } from "../../services/ingest/ingest.ts";
import { AppError } from "../../services/lib/errors.ts";
import { MAX_ATTACHMENT_BYTES } from "../../services/mail/extract.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { addRoute, blobFiles, countRows } from "../support/ingest.ts";
import { CORPUS_DIR, corpusEmailFiles, needsCorpus } from "../support/paths.ts";
import { buildMail } from "../support/raw-mail.ts";

describe.skipIf(!CORPUS_DIR)(needsCorpus("ingest corpus (pglite)"), () => {
  let app: TestApp;
  let p: { id: string; apiKey: string; inbound: string };
  beforeAll(async () => {
    app = await createTestApp("pglite");
    p = await app.newProject();
    await addRoute(app, p.apiKey, { name: "all" });
    await addRoute(app, p.apiKey, { name: "images", rule: { attachments_mime: ["image/*"] } });
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  test("every corpus message is accepted or rejected with an ingest code, never a crash", async () => {
    const files = corpusEmailFiles();
    expect(files.length).toBeGreaterThan(300);
    const outcomes = new Map<string, number>();
    const count = (k: string) => outcomes.set(k, (outcomes.get(k) ?? 0) + 1);
    for (const file of files) {
      const raw = new Uint8Array(readFileSync(file));
      try {
        const r = await ingestMessage(app.ctx, { projectId: p.id, raw, sourceType: "api", envelope: null });
        expect(r.events.length).toBeGreaterThanOrEqual(1);
        const statuses = new Set(r.events.map((e) => e.status));
        expect(statuses.size).toBe(1);
        count(r.duplicate ? "duplicate" : `accepted:${[...statuses][0]}`);
      } catch (err) {
        if (
          !(err instanceof AppError) ||
          !err.code.startsWith("ingest.") ||
          err.code === "ingest.unavailable"
        ) {
          throw new Error(`${file}: ${String(err)}`);
        }
        count(`rejected:${err.code}`);
      }
    }
    console.log("corpus outcomes", Object.fromEntries(outcomes));
    const accepted = (outcomes.get("accepted:pending") ?? 0) + (outcomes.get("accepted:discarded") ?? 0);
    expect(accepted).toBeGreaterThan(files.length * 0.9);
    expect(await countRows(app, "messages", p.id)).toBe(accepted);
  }, 60_000);

  test("re-ingesting corpus messages returns the stored message and events", async () => {
    for (const file of corpusEmailFiles().slice(0, 15)) {
      const raw = new Uint8Array(readFileSync(file));
      const again = await ingestMessage(app.ctx, {
        projectId: p.id,
        raw,
        sourceType: "api",
        envelope: null,
      }).catch((e) => e);
      if (again instanceof AppError) continue;
      expect(again.duplicate, file).toBe(true);
    }
  });
});

describe("ingest size limits (pglite)", () => {
  let app: TestApp;
  let p: { id: string; apiKey: string; inbound: string };
  beforeAll(async () => {
    app = await createTestApp("pglite");
    p = await app.newProject();
    await addRoute(app, p.apiKey);
  }, 60_000);
  afterAll(async () => {
    await app?.close();
  });

  test("an attachment over 25 MiB is skipped; the message and its other attachment are kept", async () => {
    const big = new Uint8Array(MAX_ATTACHMENT_BYTES + 1).fill(0x41);
    const raw = buildMail({
      attachments: [
        { filename: "big.bin", contentType: "application/octet-stream", content: big },
        { filename: "small.txt", contentType: "text/plain", content: "small" },
      ],
    });
    const r = await ingestMessage(app.ctx, { projectId: p.id, raw, sourceType: "api", envelope: null });
    expect(r.events.map((e) => e.status)).toEqual(["pending"]);
    const [msg] = await app.ctx.database.rows<any>(
      sql`select parsed from messages where id = ${r.messagePk}`,
    );
    expect(msg.parsed.attachments.map((a: any) => a.filename)).toEqual(["small.txt"]);
    const rows = await app.ctx.database.rows<any>(
      sql`select filename from attachments where message_pk = ${r.messagePk}`,
    );
    expect(rows.map((a) => a.filename)).toEqual(["small.txt"]);
  }, 30_000);

  test("a message over 50 MiB is rejected with ingest.too_large before anything is stored", async () => {
    const blobsBefore = blobFiles(app).length;
    const messagesBefore = await countRows(app, "messages");
    const raw = new Uint8Array(MAX_RAW_BYTES + 1).fill(0x7a);
    raw.set(buildMail());
    const err = await ingestMessage(app.ctx, {
      projectId: p.id,
      raw,
      sourceType: "smtp",
      envelope: null,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("ingest.too_large");
    expect(err.status).toBe(413);
    expect(blobFiles(app).length).toBe(blobsBefore);
    expect(await countRows(app, "messages")).toBe(messagesBefore);
  });
});
