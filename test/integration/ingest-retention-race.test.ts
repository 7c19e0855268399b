/**
 * Ingest against the retention sweeper deleting the same content-addressed blob at the same moment
 * (retention.ts protocol): a message whose rows commit must never reference a missing blob.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { BLOB_LOCK_NAMESPACE, blobLockIds } from "../../services/attachments/blob-locks.ts";
import type { BlobRef, BlobStore } from "../../services/attachments/blob-store.ts";
import { refOfBytes } from "../../services/attachments/blob-store.ts";
import { ingestMessage } from "../../services/ingest/ingest.ts";
import { removeSpoolFile, spoolDir, spoolPath } from "../../services/ingest/spool.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { buildMail } from "../support/raw-mail.ts";

const PDF = new TextEncoder().encode("%PDF-1.4\n% a shared attachment\n%%EOF\n");

for (const kind of testDbKinds()) {
  describe(`ingest vs retention on ${kind}`, () => {
    let app: TestApp;
    let apiKey: string;
    let projectId: string;
    beforeAll(async () => {
      app = await createTestApp(kind);
      ({ apiKey, id: projectId } = await app.newProject());
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
        // The raw message is small enough to live in its row (ingest/raw.ts): only the PDF is a blob.
        expect(swept.size).toBe(1);
        const ref = refOfBytes(PDF);
        expect(await real.stat(ref.key)).toEqual({ size: ref.size });
        expect(await real.stat(refOfBytes(raw).key)).toBeNull();
      } finally {
        app.ctx.blobs = real;
      }
    });

    for (const adopts of [true, false]) {
      test(`a large raw message swept between its ${adopts ? "adoption" : "put"} and the commit is stored again from its spool file`, async () => {
        const real = app.ctx.blobs;
        const swept = new Set<string>();
        const sweepOnce = async (key: string) => {
          if (swept.has(key)) return;
          swept.add(key);
          await real.delete(key);
        };
        // The sweeper deletes the raw message's blob right after the ingest stored it, once; the intake
        // no longer holds the bytes it parsed by then: it stores the blob again from the spool file.
        const racing: BlobStore = Object.assign(Object.create(Object.getPrototypeOf(real)), real, {
          async put(bytes: Uint8Array, known?: BlobRef) {
            const ref = await real.put(bytes, known);
            if (!adopts) await sweepOnce(ref.key);
            return ref;
          },
          adoptFile: adopts
            ? async (path: string, known: BlobRef) => {
                const ref = await (real.adoptFile as NonNullable<BlobStore["adoptFile"]>).call(
                  real,
                  path,
                  known,
                );
                await sweepOnce(ref.key);
                return ref;
              }
            : undefined,
        });
        app.ctx.blobs = racing;
        try {
          const raw = buildMail({ subject: `large raw ${adopts}`, text: "x".repeat(600 * 1024) });
          // As the intakes hand a large message over: a spool file they own, hashed while spooled.
          const path = spoolPath(spoolDir(app.ctx.config.dataDir));
          await writeFile(path, raw);
          const sha256 = new Bun.CryptoHasher("sha256").update(raw).digest("hex");
          const result = await ingestMessage(app.ctx, {
            projectId,
            raw: { path, size: raw.byteLength, sha256 },
            sourceType: "api",
            envelope: null,
          });
          expect(result.duplicate).toBe(false);
          await removeSpoolFile(path);
          const ref = refOfBytes(raw);
          expect([...swept]).toEqual([ref.key]);
          expect(await real.stat(ref.key)).toEqual({ size: ref.size });
          const stored = Buffer.from(await new Response(await real.read(ref.key)).arrayBuffer());
          expect(Buffer.compare(stored, Buffer.from(raw))).toBe(0);
          // nothing is left in the spool directory (the spool file, or the second link kept to it)
          expect(await readdir(join(app.ctx.config.dataDir, "spool"))).toEqual([]);
        } finally {
          app.ctx.blobs = real;
        }
      });
    }

    test.skipIf(kind !== "postgres")(
      "an ingest waits while the sweeper holds its blob's lock, then finds the blob deleted and stores it again",
      async () => {
        const attachment = new TextEncoder().encode("%PDF-1.4\n% contested by the sweeper\n%%EOF\n");
        const raw = buildMail({
          subject: "waits for the sweeper",
          attachments: [{ filename: "b.pdf", contentType: "application/pdf", content: attachment }],
        });
        const ref = refOfBytes(attachment);
        await app.ctx.blobs.put(attachment); // the content exists already, so the ingest's put is a no-op
        const sweeper = postgres(app.testDb.url as string, { max: 1, onnotice: () => {} });
        const observer = postgres(app.testDb.url as string, { max: 1, onnotice: () => {} });
        let locked!: () => void;
        const isLocked = new Promise<void>((resolve) => {
          locked = resolve;
        });
        let release!: () => void;
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        try {
          // The sweeper's side of the protocol: exclusive lock, (re-check finds no reference), delete.
          const holding = sweeper.begin(async (tx) => {
            const [id] = blobLockIds([ref.key]);
            await tx`select pg_advisory_xact_lock(${BLOB_LOCK_NAMESPACE}::int4, ${id as number}::int4)`;
            locked();
            await released;
            await app.ctx.blobs.delete(ref.key);
          });
          await isLocked;
          const ingest = app.request("POST", "/v1/messages", {
            apiKey,
            rawBody: raw,
            headers: { "content-type": "message/rfc822" },
          });
          await eventually(
            "the ingest to wait for the blob lock (the answer is the advisory locks)",
            () => observer`select granted from pg_locks where locktype = 'advisory'`,
            5000,
            { until: (rows) => rows.some((r) => r.granted === false), everyMs: 25 },
          );
          release();
          await holding;
          const r = await ingest;
          expect(r.status, r.text).toBe(202);
          expect(await app.ctx.blobs.stat(ref.key)).toEqual({ size: ref.size });
        } finally {
          release();
          await sweeper.end();
          await observer.end();
        }
      },
    );
  });
}
