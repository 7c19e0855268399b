import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { blobKeyFor, InvalidBlobKeyError, refOfBytes } from "../../../services/attachments/blob-store.ts";
import { FsBlobStore } from "../../../services/attachments/fs-store.ts";

let dir: string;
let store: FsBlobStore;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mailhook-fs-store-"));
  store = new FsBlobStore(join(dir, "blobs"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every file under `root`, relative. */
async function listFiles(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(root.length + 1));
}

describe("FsBlobStore", () => {
  test("lays blobs out as sha256/<2>/<2>/<hex> under the root", async () => {
    const ref = await store.put(new TextEncoder().encode("layout"));
    const hex = new Bun.CryptoHasher("sha256").update("layout").digest("hex");
    expect(ref.key).toBe(`sha256/${hex.slice(0, 2)}/${hex.slice(2, 4)}/${hex}`);
    expect(store.pathOf(ref.key)).toBe(join(dir, "blobs", ref.key));
    expect((await stat(store.pathOf(ref.key))).size).toBe(6);
  });

  test("put with the caller's ref of the same bytes stores them under it; a ref of another size is ignored", async () => {
    const bytes = new TextEncoder().encode("hashed by the caller");
    const ref = refOfBytes(bytes);
    expect(await store.put(bytes, ref)).toEqual(ref);
    expect(await store.stat(ref.key)).toEqual({ size: bytes.byteLength });
    const other = new TextEncoder().encode("a ref that does not fit");
    const stored = await store.put(other, ref);
    expect(stored).toEqual(refOfBytes(other));
    expect(await store.stat(stored.key)).toEqual({ size: other.byteLength });
  });

  test("a put of content already stored leaves the existing file untouched", async () => {
    const bytes = new TextEncoder().encode("same bytes twice");
    const first = await store.put(bytes);
    const before = await stat(store.pathOf(first.key));
    const second = await store.put(bytes.slice());
    const after = await stat(store.pathOf(second.key));
    expect(second).toEqual(first);
    expect(after.ino).toBe(before.ino);
    expect(after.mtimeMs).toBe(before.mtimeMs);
  });

  test("a put repairs a truncated blob of the same key", async () => {
    const bytes = new TextEncoder().encode("to be truncated");
    const ref = await store.put(bytes);
    await writeFile(store.pathOf(ref.key), "to be");
    await store.put(bytes);
    expect(await Bun.file(store.pathOf(ref.key)).text()).toBe("to be truncated");
  });

  test("readers never observe a partially written blob, and no temp files remain", async () => {
    const big = new Uint8Array(8 * 1024 * 1024);
    crypto.getRandomValues(big.subarray(0, 65536));
    big.fill(7, 65536);
    const path = store.pathOf(blobKeyFor(new Bun.CryptoHasher("sha256").update(big).digest("hex")));
    const seen = new Set<number | "absent">();
    let done = false;
    const watcher = (async () => {
      while (!done) {
        try {
          seen.add((await stat(path)).size);
        } catch {
          seen.add("absent");
        }
        await Bun.sleep(0);
      }
    })();
    const ref = await store.put(big);
    done = true;
    await watcher;
    seen.add((await stat(path)).size);
    expect([...seen].filter((s) => s !== "absent")).toEqual([big.byteLength]);
    expect(ref.size).toBe(big.byteLength);
    expect((await listFiles(join(dir, "blobs"))).filter((f) => f.startsWith(".tmp"))).toEqual([]);
  });

  test("temp files of writers that died mid-write are swept; those of live writers stay", async () => {
    // Found by the crash suite (tools/chaos/crash.ts): a SIGKILLed serve left half-written
    // `.tmp-*` files in the blob fan-out directories forever.
    const tmp = join(dir, "blobs", ".tmp");
    await store.put(new TextEncoder().encode("creates the temp dir"));
    await writeFile(join(tmp, "4242-deadbeef-000000000000"), "half a blob");
    await writeFile(join(tmp, "4343-deadbeef-000000000000"), "a write in progress");
    expect(await store.sweepTemporaryFiles((pid) => pid === 4343)).toBe(1);
    expect(await readdir(tmp)).toEqual(["4343-deadbeef-000000000000"]);
    // Default liveness check: a pid that cannot exist on this host is gone.
    await writeFile(join(tmp, "2147483646-deadbeef-000000000000"), "x");
    expect(await store.sweepTemporaryFiles()).toBe(2);
    expect(await readdir(tmp)).toEqual([]);
  });

  test("putFile streams a file from disk and stores the same key as put", async () => {
    const src = join(dir, "spooled.eml");
    await writeFile(src, "Subject: hi\r\n\r\nbody\r\n");
    const fromFile = await store.putFile(src);
    const fromBytes = await store.put(await Bun.file(src).bytes());
    expect(fromFile).toEqual(fromBytes);
  });

  test("adoptFile renames a spooled file into place: exact bytes, mode 0600, source gone", async () => {
    const bytes = new Uint8Array(70_000);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + 7) & 0xff;
    bytes.set(new TextEncoder().encode("\r\n.\r\n\n\r"), 100);
    const src = join(dir, "adopt-1.eml");
    await writeFile(src, bytes);
    const ref = await store.adoptFile(src, refOfBytes(bytes));
    expect(ref).toEqual(refOfBytes(bytes));
    expect(await Bun.file(src).exists()).toBe(false);
    const stored = new Uint8Array(await Bun.file(store.pathOf(ref.key)).arrayBuffer());
    expect(Buffer.from(stored).equals(Buffer.from(bytes))).toBe(true);
    expect((await stat(store.pathOf(ref.key))).mode & 0o777).toBe(0o600);
  });

  test("adoptFile of content already stored keeps the stored file and removes the source", async () => {
    const bytes = new TextEncoder().encode("adopted twice");
    const first = await store.put(bytes);
    const before = await stat(store.pathOf(first.key));
    const src = join(dir, "adopt-2.eml");
    await writeFile(src, bytes);
    expect(await store.adoptFile(src, refOfBytes(bytes))).toEqual(first);
    expect(await Bun.file(src).exists()).toBe(false);
    expect((await stat(store.pathOf(first.key))).ino).toBe(before.ino);
    // A source already gone (adopted for another project of the same SMTP transaction) is fine too.
    expect(await store.adoptFile(src, refOfBytes(bytes))).toEqual(first);
  });

  test("adoptFile never publishes a file that is not the announced content (cut-short write)", async () => {
    const whole = new TextEncoder().encode("the whole message, as hashed while spooling");
    const src = join(dir, "adopt-3.eml");
    await writeFile(src, whole.subarray(0, 10)); // the writer died after 10 bytes
    const ref = refOfBytes(whole);
    await expect(store.adoptFile(src, ref)).rejects.toThrow(/size/);
    expect(await store.stat(ref.key)).toBeNull();
  });

  test("read returns the whole blob or an inclusive range as a lazy Blob", async () => {
    const ref = await store.put(new TextEncoder().encode("0123456789"));
    const whole = await store.read(ref.key);
    expect(await whole.text()).toBe("0123456789");
    expect(await (await store.read(ref.key, { start: 2, end: 4 })).text()).toBe("234");
    expect(await (await store.read(ref.key, { start: 9, end: 9 })).text()).toBe("9");
  });

  test("stat and delete treat an absent key as absent, not as an error", async () => {
    const ref = await store.put(new TextEncoder().encode("short-lived"));
    await store.delete(ref.key);
    expect(await store.stat(ref.key)).toBeNull();
    await store.delete(ref.key);
    await expect(store.read(ref.key)).rejects.toThrow("blob not found");
  });

  test.each([
    "../../etc/passwd",
    "sha256/../../x",
    `sha256/00/00/${"a".repeat(64)}`,
    `sha256/aa/aa/${"A".repeat(64)}`,
    `sha256/aa/aa/${"a".repeat(63)}`,
    "",
  ])("rejects malformed key %p before touching the disk", async (key) => {
    expect(() => store.pathOf(key)).toThrow(InvalidBlobKeyError);
    await expect(store.stat(key)).rejects.toThrow(InvalidBlobKeyError);
    await expect(store.delete(key)).rejects.toThrow(InvalidBlobKeyError);
  });
});
