/**
 * Stores a message with attachments the way ingest does (blobs in the store, `messages` and
 * `attachments` rows, the project's `storage_bytes` grown by the bytes of blobs that were new), without
 * going through MIME parsing. For tests that need exact control of filenames, Message-IDs, receive times
 * and shared blobs.
 */
import { eq, sql } from "drizzle-orm";
import { refOfBytes } from "../../services/attachments/blob-store.ts";
import type { AppContext } from "../../services/context.ts";
import { attachments, messages, projects } from "../../services/db/schema/index.ts";
import { newId } from "../../services/lib/ids.ts";
import type { NormalizedMessage } from "../../services/lib/message.ts";
import { makeMessage } from "./messages.ts";

export interface SeedAttachment {
  /** descriptor id; default `att_<position>` */
  id?: string;
  filename: string;
  contentType?: string;
  bytes: Uint8Array;
  isInline?: boolean;
}

export interface SeedMessageInput {
  projectId: string;
  /** with angle brackets, as stored */
  messageId: string;
  receivedAt?: Date;
  attachments?: SeedAttachment[];
  /** raw message bytes; default a small unique text */
  raw?: Uint8Array;
  /** keep the raw bytes in the row (as ingest does for a small message) instead of the blob store */
  inlineRaw?: boolean;
}

export interface SeededMessage {
  pk: string;
  messageId: string;
  /** the raw message's blob key (with `inlineRaw`, the key it would have had: nothing is stored there) */
  rawBlobKey: string;
  storedBytes: number;
  attachments: { id: string; blobKey: string; sha256: string; size: number }[];
}

/** Stores one message; `storedBytes` counts only blobs the store did not hold before (like ingest). */
export async function seedMessage(ctx: AppContext, input: SeedMessageInput): Promise<SeededMessage> {
  const receivedAt = input.receivedAt ?? ctx.clock.now();
  const raw =
    input.raw ??
    new TextEncoder().encode(`Message-ID: ${input.messageId}\r\nX-Seed: ${newId("msg")}\r\n\r\nhi\r\n`);
  let storedBytes = 0;
  const isNew = async (bytes: Uint8Array) => (await ctx.blobs.stat(refOfBytes(bytes).key)) === null;

  let rawRef = refOfBytes(raw);
  if (input.inlineRaw) storedBytes += raw.byteLength;
  else {
    if (await isNew(raw)) storedBytes += raw.byteLength;
    rawRef = await ctx.blobs.put(raw);
  }
  const stored: SeededMessage["attachments"] = [];
  const descriptors: NormalizedMessage["attachments"] = [];
  for (const [i, a] of (input.attachments ?? []).entries()) {
    if (await isNew(a.bytes)) storedBytes += a.bytes.byteLength;
    const ref = await ctx.blobs.put(a.bytes);
    const id = a.id ?? `att_${i}`;
    stored.push({ id, blobKey: ref.key, sha256: ref.sha256, size: ref.size });
    descriptors.push({
      id,
      filename: a.filename,
      content_type: a.contentType ?? "application/octet-stream",
      size: ref.size,
      is_inline: a.isInline ?? false,
      sha256: ref.sha256,
    });
  }

  const pk = newId("msg");
  const parsed = makeMessage({
    message_id: input.messageId,
    subject: "seeded",
    date: null,
    received_at: receivedAt.toISOString(),
    from: [{ email: "sender@example.com", name: "" }],
    to: [{ email: "rcpt@example.com", name: "" }],
    cc: [],
    headers: { "message-id": input.messageId },
    headers_multi: {},
    text: "hi",
    html: "",
    attachments: descriptors,
  });
  await ctx.database.db.insert(messages).values({
    id: pk,
    projectId: input.projectId,
    messageId: input.messageId,
    rawSha256: rawRef.sha256,
    rawBlobKey: input.inlineRaw ? null : rawRef.key,
    rawBytes: input.inlineRaw ? raw : null,
    rawSizeBytes: rawRef.size,
    storedBytes,
    sourceType: "api",
    envelope: null,
    parsed,
    receivedAt,
  });
  for (const [position, a] of (input.attachments ?? []).entries()) {
    const s = stored[position];
    if (!s) continue;
    await ctx.database.db.insert(attachments).values({
      messagePk: pk,
      attachmentId: s.id,
      position,
      blobKey: s.blobKey,
      filename: a.filename,
      contentType: a.contentType ?? "application/octet-stream",
      size: s.size,
      sha256: s.sha256,
      isInline: a.isInline ?? false,
    });
  }
  await ctx.database.db
    .update(projects)
    .set({ storageBytes: sql`${projects.storageBytes} + ${storedBytes}` })
    .where(eq(projects.id, input.projectId));
  return { pk, messageId: input.messageId, rawBlobKey: rawRef.key, storedBytes, attachments: stored };
}

/** The project's `storage_bytes`. */
export async function storageBytesOf(ctx: AppContext, projectId: string): Promise<number> {
  const [row] = await ctx.database.db
    .select({ n: projects.storageBytes })
    .from(projects)
    .where(eq(projects.id, projectId));
  if (!row) throw new Error(`no project ${projectId}`);
  return row.n;
}
