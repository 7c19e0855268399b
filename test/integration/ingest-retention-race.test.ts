/**
 * Ingest against the retention sweeper deleting the same content-addressed blob at the same moment
 * (retention.ts protocol): a message whose rows commit must never reference a missing blob.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { BlobStore } from "../../services/attachments/blob-store.ts";
import { refOfBytes } from "../../services/attachments/blob-store.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { buildMail } from "../support/ingest.ts";

const PDF = new TextEncoder().encode("%PDF-1.4\n% a shared attachment\n%%EOF\n");

for (const kind of testDbKinds()) {
  describe(`ingest vs retention on ${kind}`, () => {
    let app: TestApp;
    let apiKey: string;
    beforeAll(async () => {
      app = await createTestApp(kind);
      apiKey = (await app.newProject()).apiKey;
    });
    afterAll(async () => {
      await app?.close();
    });

    test("a blob swept between the ingest's put and its commit is stored again before the 202", async () => {
      const real = app.ctx.blobs;
      const swept = new Set<string>();
      // The sweeper deletes each blob right after ingest's (no-op) put of it, once.
      const racing: BlobStore = Object.assign(Object.create(Object.getPrototypeOf(real)), real, {
        async put(bytes: Uint8Array) {
          const ref = await real.put(bytes);
          if (!swept.has(ref.key)) {
            swept.add(ref.key);
            await real.delete(ref.key);
          }
          return ref;
        },
      });
      app.ctx.blobs = racing;
      try {
        const raw = buildMail({
          attachments: [{ filename: "a.pdf", contentType: "application/pdf", content: PDF }],
        });
        const r = await app.request("POST", "/v1/messages", {
          apiKey,
          rawBody: raw,
          headers: { "content-type": "message/rfc822" },
        });
        expect(r.status, r.text).toBe(202);
        expect(swept.size).toBe(2);
        for (const bytes of [raw, PDF]) {
          const ref = refOfBytes(bytes);
          expect(await real.stat(ref.key)).toEqual({ size: ref.size });
        }
      } finally {
        app.ctx.blobs = real;
      }
    });
  });
}
