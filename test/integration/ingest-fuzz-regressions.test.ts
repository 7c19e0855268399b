/**
 * Messages the MIME fuzzer (tools/chaos/fuzz-mime.ts) found failing the intake with a 503 / SMTP 451
 * although nothing was transient (the insert failed on every retry), kept in `test/fixtures/fuzz/mime/`:
 * each is now accepted and stored.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { countRows, postMessage } from "../support/ingest.ts";

const DIR = join(import.meta.dir, "../fixtures/fuzz/mime");
const files = readdirSync(DIR).filter((f) => f.endsWith(".eml"));

for (const kind of testDbKinds()) {
  describe(`MIME fuzz regressions on ${kind}`, () => {
    let app: TestApp;
    let project: { id: string; apiKey: string };
    beforeAll(async () => {
      app = await createTestApp(kind);
      project = await app.newProject();
    }, 60_000);
    afterAll(async () => {
      await app?.close();
    });

    test.each(files)("%s is accepted (202) and stored", async (file) => {
      const before = await countRows(app, "messages", project.id);
      const res = await postMessage(app, project.apiKey, new Uint8Array(readFileSync(join(DIR, file))));
      expect(res.status, res.text).toBe(202);
      expect(await countRows(app, "messages", project.id)).toBe(before + 1);
    });

    test("a Message-ID longer than 998 characters is replaced by a synthetic one", async () => {
      const res = await postMessage(app, project.apiKey, readFileSync(join(DIR, "long-message-id.eml")));
      expect(res.status, res.text).toBe(202);
      expect(res.body.message_id).toMatch(/@in\.localhost>$/);
    });
  });
}
