import { describe, expect, test } from "bun:test";
import { type BlobRef, type BlobStore, refOfBytes } from "../../../services/attachments/blob-store.ts";
import type { AppContext } from "../../../services/context.ts";
import { putRawBlob, rawRefOf, readRawSource } from "../../../services/ingest/raw.ts";

const bytes = new TextEncoder().encode("From: a@example.com\r\n\r\nhi\r\n");
const ref = refOfBytes(bytes);

/** A store that records what it was asked to do; `adopts` gives it the fs store's capability. */
function recordingStore(adopts: boolean) {
  const calls: string[] = [];
  const store: BlobStore = {
    kind: adopts ? "fs" : "s3",
    put: async (b) => {
      calls.push("put");
      return refOfBytes(b);
    },
    stat: async () => null,
    read: async () => new Blob([]),
    delete: async () => {},
    ...(adopts
      ? {
          adoptFile: async (path: string, r: BlobRef) => {
            calls.push(`adopt ${path}`);
            return r;
          },
        }
      : {}),
  };
  return { calls, ctx: { blobs: store } as AppContext };
}

describe("rawRefOf", () => {
  test("takes the hash the spool computed when it covers exactly these bytes", () => {
    const spooled = { path: "/spool/x.eml", size: bytes.byteLength, sha256: "f".repeat(64) };
    expect(rawRefOf(spooled, bytes).sha256).toBe("f".repeat(64));
  });

  test("hashes the bytes when they are in memory, unhashed, or of another size", () => {
    expect(rawRefOf(bytes, bytes)).toEqual(ref);
    expect(rawRefOf({ path: "/spool/x.eml", size: bytes.byteLength }, bytes)).toEqual(ref);
    expect(rawRefOf({ path: "/spool/x.eml", size: 1, sha256: "f".repeat(64) }, bytes)).toEqual(ref);
  });
});

describe("readRawSource", () => {
  test("uses bytes in hand before reading the spool file", async () => {
    expect(await readRawSource(bytes)).toBe(bytes);
    expect(await readRawSource({ path: "/nonexistent", size: bytes.byteLength, bytes })).toBe(bytes);
  });
});

describe("putRawBlob", () => {
  const spooled = { path: "/spool/x.eml", size: ref.size, sha256: ref.sha256 };

  test("a hashed spool file is adopted by a store that can adopt files", async () => {
    const { calls, ctx } = recordingStore(true);
    expect(await putRawBlob(ctx, spooled, bytes, ref)).toEqual(ref);
    expect(calls).toEqual(["adopt /spool/x.eml"]);
  });

  test("the bytes are put when the store cannot adopt, the raw is in memory, or the hash differs", async () => {
    const s3 = recordingStore(false);
    await putRawBlob(s3.ctx, spooled, bytes, ref);
    expect(s3.calls).toEqual(["put"]);
    const fs = recordingStore(true);
    await putRawBlob(fs.ctx, bytes, bytes, ref);
    await putRawBlob(fs.ctx, { ...spooled, sha256: "0".repeat(64) }, bytes, ref);
    expect(fs.calls).toEqual(["put", "put"]);
  });
});
