/**
 * Retention (`RETENTION_DAYS`): old messages go with their rows and unreferenced blobs, shared blobs stay
 * while referenced, quota accounting follows, expired tokens are cleaned up after their grace period.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { sql } from "drizzle-orm";
import { lockBlobKeysShared } from "../../services/attachments/blob-locks.ts";
import {
  EXPIRED_TOKEN_GRACE_MS,
  projectStorageUsage,
  startRetentionSweeper,
  sweepRetention,
} from "../../services/attachments/retention.ts";
import { issueDownloadUrl } from "../../services/attachments/tokens.ts";
import { attachments, attempts, events, messages } from "../../services/db/schema/index.ts";
import { manualClock } from "../../services/lib/clock.ts";
import { newId } from "../../services/lib/ids.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { eventually } from "../support/eventually.ts";
import { seedMessage, storageBytesOf } from "../support/seed-messages.ts";

const DAY = 24 * 3600 * 1000;
const enc = (s: string) => new TextEncoder().encode(s);

for (const kind of testDbKinds()) {
  describe(`retention (${kind})`, () => {
    const clock = manualClock(new Date("2026-06-01T00:00:00Z"));
    let app: TestApp;
    let a: { id: string };
    let b: { id: string };
    const ago = (days: number) => new Date(clock.now().getTime() - days * DAY);
    const count = async (table: string, where = sql`true`) => {
      const [row] = await app.ctx.database.rows<{ n: number }>(
        sql`select count(*)::int as n from ${sql.identifier(table)} where ${where}`,
      );
      return Number(row?.n);
    };
    const stored = async (key: string) => (await app.ctx.blobs.stat(key)) !== null;
    /** A unique attachment body per test, so tests never share blobs by accident. */
    const unique = (label: string) => enc(`${label} ${newId("att")}`);

    beforeAll(async () => {
      app = await createTestApp(kind, { clock, env: { RETENTION_DAYS: "30" } });
      a = await app.newProject("a");
      b = await app.newProject("b");
    }, 60_000);
    afterAll(() => app?.close());

    test("deletes an old message whose raw bytes are in its row, and frees its bytes and attachment blob", async () => {
      const before = await storageBytesOf(app.ctx, b.id);
      const old = await seedMessage(app.ctx, {
        projectId: b.id,
        messageId: "<inline-old@x>",
        receivedAt: ago(40),
        inlineRaw: true,
        attachments: [{ filename: "inline-old.txt", bytes: unique("inline-old") }],
      });
      expect(await stored(old.rawBlobKey)).toBe(false);
      expect(await storageBytesOf(app.ctx, b.id)).toBe(before + old.storedBytes);
      const result = await sweepRetention(app.ctx, { now: clock.now() });
      expect(result.messagesDeleted).toBeGreaterThanOrEqual(1);
      expect(await count("messages", sql`id = ${old.pk}`)).toBe(0);
      expect(await stored(old.attachments[0]?.blobKey ?? "")).toBe(false);
      expect(await storageBytesOf(app.ctx, b.id)).toBe(before);
    });

    test("deletes messages older than RETENTION_DAYS with attachments, events, attempts, tokens and blobs", async () => {
      const old = await seedMessage(app.ctx, {
        projectId: a.id,
        messageId: "<old@x>",
        receivedAt: ago(31),
        attachments: [{ filename: "old.pdf", bytes: unique("old") }],
      });
      const recent = await seedMessage(app.ctx, {
        projectId: a.id,
        messageId: "<recent@x>",
        receivedAt: ago(29),
        attachments: [{ filename: "recent.pdf", bytes: unique("recent") }],
      });
      const eventId = crypto.randomUUID();
      await app.ctx.database.db.insert(events).values({
        id: eventId,
        projectId: a.id,
        messagePk: old.pk,
        routeId: "rt_x",
        status: "delivered",
        idempotencyKey: "k",
        routeSnapshot: {
          route_id: "rt_x",
          name: "r",
          endpoint_id: "ep",
          endpoint_url: "http://x",
          kid: "k",
          pipeline: { steps: [] },
        },
      });
      await app.ctx.database.db.insert(attempts).values({
        id: newId("atm"),
        eventId,
        number: 1,
        trigger: "auto",
        status: "success",
        httpStatus: 200,
        latencyMs: 1,
        requestCapture: { method: "POST", url: "http://x", headers: {}, body_preview: "" },
        responseCapture: { status: 200, headers: {}, body_preview: "", network_error: null },
      });
      await issueDownloadUrl(app.ctx, {
        projectId: a.id,
        messageId: "<old@x>",
        attachmentId: "att_0",
        multiUse: true,
      });

      const result = await sweepRetention(app.ctx, { now: clock.now() });
      expect(result.messagesDeleted).toBe(1);
      expect(result.blobsDeleted).toBe(2);
      expect(await count("messages", sql`id = ${old.pk}`)).toBe(0);
      expect(await count("attachments", sql`message_pk = ${old.pk}`)).toBe(0);
      expect(await count("events", sql`id = ${eventId}`)).toBe(0);
      expect(await count("attempts", sql`event_id = ${eventId}`)).toBe(0);
      expect(await count("download_tokens", sql`message_pk = ${old.pk}`)).toBe(0);
      expect(await stored(old.rawBlobKey)).toBe(false);
      expect(await stored(old.attachments[0]?.blobKey ?? "")).toBe(false);
      expect(await count("messages", sql`id = ${recent.pk}`)).toBe(1);
      expect(await stored(recent.rawBlobKey)).toBe(true);
      expect(await stored(recent.attachments[0]?.blobKey ?? "")).toBe(true);
    });

    test("decrements each project's storage_bytes by the stored_bytes of its deleted messages", async () => {
      await sweepRetention(app.ctx, { now: clock.now() });
      const beforeA = await storageBytesOf(app.ctx, a.id);
      const beforeB = await storageBytesOf(app.ctx, b.id);
      const m1 = await seedMessage(app.ctx, {
        projectId: a.id,
        messageId: "<q1@x>",
        receivedAt: ago(40),
        attachments: [{ filename: "1", bytes: unique("q1") }],
      });
      const m2 = await seedMessage(app.ctx, { projectId: b.id, messageId: "<q2@x>", receivedAt: ago(35) });
      const keep = await seedMessage(app.ctx, { projectId: b.id, messageId: "<q3@x>", receivedAt: ago(1) });
      expect(await storageBytesOf(app.ctx, a.id)).toBe(beforeA + m1.storedBytes);

      const result = await sweepRetention(app.ctx, { now: clock.now() });
      expect(result.bytesReleased).toBe(m1.storedBytes + m2.storedBytes);
      expect(await storageBytesOf(app.ctx, a.id)).toBe(beforeA);
      expect(await storageBytesOf(app.ctx, b.id)).toBe(beforeB + keep.storedBytes);
      expect(await projectStorageUsage(app.ctx, b.id)).toEqual({
        used_bytes: beforeB + keep.storedBytes,
        quota_bytes: app.ctx.config.projectQuotaBytes,
      });
    });

    test("keeps a blob shared with a remaining message (of another project) until that one goes too", async () => {
      const shared = unique("shared");
      const old = await seedMessage(app.ctx, {
        projectId: a.id,
        messageId: "<s1@x>",
        receivedAt: ago(31),
        attachments: [{ filename: "s.pdf", bytes: shared }],
      });
      await seedMessage(app.ctx, {
        projectId: b.id,
        messageId: "<s2@x>",
        receivedAt: ago(10),
        attachments: [{ filename: "same bytes.pdf", bytes: shared }],
      });
      const key = old.attachments[0]?.blobKey ?? "";
      await sweepRetention(app.ctx, { now: clock.now() });
      expect(await count("messages", sql`id = ${old.pk}`)).toBe(0);
      expect(await stored(key)).toBe(true);

      await sweepRetention(app.ctx, { now: new Date(clock.now().getTime() + 21 * DAY) });
      expect(await count("attachments", sql`blob_key = ${key}`)).toBe(0);
      expect(await stored(key)).toBe(false);
    });

    test("keeps a blob that a concurrent ingest re-references under the shared blob lock", async () => {
      const bytes = unique("raced");
      const old = await seedMessage(app.ctx, {
        projectId: a.id,
        messageId: "<race-old@x>",
        receivedAt: ago(31),
        attachments: [{ filename: "r.pdf", bytes }],
      });
      const key = old.attachments[0]?.blobKey ?? "";
      const newPk = newId("msg");
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => {
        locked = r;
      });
      let release!: () => void;
      const released = new Promise<void>((r) => {
        release = r;
      });
      // The ingest side: shared lock, then (after the sweeper has queued for the key) the new rows.
      const ingest = app.ctx.database.db.transaction(async (tx) => {
        await lockBlobKeysShared(tx, [key, old.rawBlobKey]);
        locked();
        await released;
        await tx.insert(messages).values({
          id: newPk,
          projectId: b.id,
          messageId: "<race-new@x>",
          rawSha256: old.rawBlobKey.split("/")[3] ?? "",
          rawBlobKey: old.rawBlobKey,
          rawSizeBytes: 1,
          sourceType: "api",
          parsed: {} as never,
          receivedAt: clock.now(),
        });
        await tx.insert(attachments).values({
          messagePk: newPk,
          attachmentId: "att_0",
          position: 0,
          blobKey: key,
          filename: "r.pdf",
          contentType: "application/pdf",
          size: bytes.length,
          sha256: key.split("/")[3] ?? "",
          isInline: false,
        });
      });
      await isLocked;
      const sweep = sweepRetention(app.ctx, { now: clock.now() });
      if (kind === "postgres") {
        // Wait (with a deadline) until the sweeper is blocked on the advisory lock of the key.
        await eventually("the sweeper to wait for the blob lock", () =>
          count("pg_locks", sql`locktype = 'advisory' and not granted`).then((n) => n > 0),
        );
      }
      release();
      await ingest;
      await sweep;
      expect(await count("messages", sql`id = ${old.pk}`)).toBe(0);
      expect(await stored(key)).toBe(true);
      expect(await stored(old.rawBlobKey)).toBe(true);
    });

    test("deletes download tokens expired longer than the grace period, keeps the rest", async () => {
      const m = await seedMessage(app.ctx, {
        projectId: a.id,
        messageId: "<tok@x>",
        attachments: [{ filename: "t", bytes: unique("tok") }],
      });
      await issueDownloadUrl(app.ctx, {
        projectId: a.id,
        messageId: "<tok@x>",
        attachmentId: "att_0",
        multiUse: false,
      });
      const expiresAt = clock.now().getTime() + 900_000;
      const tokens = () => count("download_tokens", sql`message_pk = ${m.pk}`);

      await sweepRetention(app.ctx, { now: new Date(expiresAt + EXPIRED_TOKEN_GRACE_MS - 1) });
      expect(await tokens()).toBe(1);
      const r = await sweepRetention(app.ctx, { now: new Date(expiresAt + EXPIRED_TOKEN_GRACE_MS + 1) });
      expect(r.tokensDeleted).toBeGreaterThanOrEqual(1);
      expect(await tokens()).toBe(0);
    });

    test("startRetentionSweeper sweeps at once and stop() waits for the sweep in flight", async () => {
      const old = await seedMessage(app.ctx, { projectId: a.id, messageId: "<bg@x>", receivedAt: ago(60) });
      const sweeper = startRetentionSweeper(app.ctx, { intervalMs: 60_000 });
      await eventually("the background sweep to delete the old message", () =>
        count("messages", sql`id = ${old.pk}`).then((n) => n === 0),
      );
      await sweeper.stop();
    });
  });
}
