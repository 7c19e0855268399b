/**
 * One behavioural suite run against both blob stores: the filesystem store in a temp dir and the S3
 * store against s3rver (a local S3-compatible server, run in-process on a free port, real sockets),
 * plus the download response served by a real Bun.serve over each store.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, open, rm, stat } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { parse as parseDisposition } from "content-disposition";
import { type BlobStore, refOfBytes } from "../../services/attachments/blob-store.ts";
import { buildDownloadResponse } from "../../services/attachments/download-response.ts";
import { FsBlobStore } from "../../services/attachments/fs-store.ts";
import { S3BlobStore } from "../../services/attachments/s3-store.ts";
import { AppError } from "../../services/lib/errors.ts";

/** The slice of s3rver's (untyped) API the suite uses. */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
  on(
    event: "event",
    listener: (e: { Records: { eventName: string; s3: { object: { key: string } } }[] }) => void,
  ): void;
}
type S3rverCtor = new (options: Record<string, unknown>) => S3rverInstance;
const S3rver = createRequire(import.meta.url)("s3rver") as S3rverCtor;

const BUCKET = "mailhook-test";
const BIG_SIZE = 25 * 1024 * 1024;

interface Harness {
  store: BlobStore;
  /** changes whenever the object under `key` is (re)written */
  version(key: string): Promise<string>;
}

let tmp: string;
let bigPath: string;
let bigSha: string;
let s3rver: S3rverInstance;
const s3Writes = new Map<string, number>();
const harnesses: Record<"fs" | "s3", Harness> = {} as Record<"fs" | "s3", Harness>;

/** A 25 MB file written in 1 MiB chunks (never whole in memory), hashed as it is written. */
async function writeBigFile(path: string): Promise<string> {
  const hasher = new Bun.CryptoHasher("sha256");
  const chunk = new Uint8Array(1024 * 1024);
  const fh = await open(path, "w");
  for (let i = 0; i < BIG_SIZE / chunk.length; i++) {
    crypto.getRandomValues(chunk.subarray(0, 65536));
    chunk.fill(i, 65536);
    hasher.update(chunk);
    await fh.write(chunk);
  }
  await fh.close();
  return hasher.digest("hex");
}

async function sha256OfStream(
  body: ReadableStream<Uint8Array> | Blob,
): Promise<{ sha: string; size: number }> {
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  const stream = body instanceof Blob ? body.stream() : body;
  for await (const chunk of stream) {
    hasher.update(chunk);
    size += chunk.byteLength;
  }
  return { sha: hasher.digest("hex"), size };
}

async function text(body: ReadableStream<Uint8Array> | Blob): Promise<string> {
  return new Response(body).text();
}

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "mailhook-blob-stores-"));
  bigPath = join(tmp, "big.bin");
  bigSha = await writeBigFile(bigPath);

  const fsStore = new FsBlobStore(join(tmp, "blobs"));
  harnesses.fs = {
    store: fsStore,
    async version(key) {
      const s = await stat(fsStore.pathOf(key));
      return `${s.ino}:${s.mtimeMs}`;
    },
  };

  s3rver = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: join(tmp, "s3rver"),
    configureBuckets: [{ name: BUCKET, configs: [] }],
  });
  s3rver.on("event", (e) => {
    for (const r of e.Records) {
      if (r.eventName.startsWith("ObjectCreated"))
        s3Writes.set(r.s3.object.key, (s3Writes.get(r.s3.object.key) ?? 0) + 1);
    }
  });
  const { port } = await s3rver.run();
  harnesses.s3 = {
    store: new S3BlobStore({
      bucket: BUCKET,
      endpoint: `http://127.0.0.1:${port}`,
      region: "us-east-1",
      accessKeyId: "S3RVER",
      secretAccessKey: "S3RVER",
    }),
    async version(key) {
      return String(s3Writes.get(key) ?? 0);
    },
  };
});

afterAll(async () => {
  await s3rver?.close();
  await rm(tmp, { recursive: true, force: true });
});

const encode = (s: string) => new TextEncoder().encode(s);

for (const kind of ["fs", "s3"] as const) {
  describe(`${kind} blob store`, () => {
    const h = () => harnesses[kind];

    test("put returns the content key, size and sha256, and stat sees it", async () => {
      const bytes = encode(`hello from ${kind}`);
      const ref = await h().store.put(bytes);
      const sha = new Bun.CryptoHasher("sha256").update(bytes).digest("hex");
      expect(ref).toEqual({
        key: `sha256/${sha.slice(0, 2)}/${sha.slice(2, 4)}/${sha}`,
        size: bytes.length,
        sha256: sha,
      });
      expect(await h().store.stat(ref.key)).toEqual({ size: ref.size });
    });

    test("identical content is stored once: a second put writes nothing", async () => {
      const bytes = encode(`dedupe me ${kind}`);
      const first = await h().store.put(bytes);
      const before = await h().version(first.key);
      const second = await h().store.put(bytes.slice());
      expect(second).toEqual(first);
      expect(await h().version(first.key)).toBe(before);
    });

    test("reads whole blobs and every inclusive range form", async () => {
      const ref = await h().store.put(encode("0123456789"));
      expect(await text(await h().store.read(ref.key))).toBe("0123456789");
      expect(await text(await h().store.read(ref.key, { start: 0, end: 0 }))).toBe("0");
      expect(await text(await h().store.read(ref.key, { start: 3, end: 6 }))).toBe("3456");
      expect(await text(await h().store.read(ref.key, { start: 9, end: 9 }))).toBe("9");
    });

    test("delete removes the blob and is idempotent", async () => {
      const ref = await h().store.put(encode(`delete me ${kind}`));
      await h().store.delete(ref.key);
      expect(await h().store.stat(ref.key)).toBeNull();
      await h().store.delete(ref.key);
    });

    test("a 25 MB blob is put once and read streams it back byte-identical", async () => {
      const big = new Uint8Array(await Bun.file(bigPath).arrayBuffer());
      const ref = await h().store.put(big);
      expect(ref.sha256).toBe(bigSha);
      expect(ref.size).toBe(BIG_SIZE);
      expect(await h().store.stat(ref.key)).toEqual({ size: BIG_SIZE });
      expect(await sha256OfStream(await h().store.read(ref.key))).toEqual({ sha: bigSha, size: BIG_SIZE });
      const tail = await sha256OfStream(
        await h().store.read(ref.key, { start: BIG_SIZE - 100, end: BIG_SIZE - 1 }),
      );
      expect(tail.size).toBe(100);
      // A second put of the same bytes is deduplicated too.
      const before = await h().version(ref.key);
      await h().store.put(big);
      expect(await h().version(ref.key)).toBe(before);
    });

    describe("served through buildDownloadResponse over HTTP", () => {
      let server: Server<undefined>;
      const filename = 'résumé "2024"\n.txt';

      beforeAll(async () => {
        const small = await h().store.put(encode("The quick brown fox"));
        const big = await h().store.put(new Uint8Array(await Bun.file(bigPath).arrayBuffer()));
        server = Bun.serve({
          port: 0,
          hostname: "127.0.0.1",
          async fetch(req) {
            const ref = new URL(req.url).pathname === "/big" ? big : small;
            try {
              return await buildDownloadResponse({
                store: h().store,
                key: ref.key,
                size: ref.size,
                filename,
                contentType: "text/plain",
                method: req.method === "HEAD" ? "HEAD" : "GET",
                rangeHeader: req.headers.get("range"),
                ifRangeHeader: req.headers.get("if-range"),
              });
            } catch (err) {
              // What the API layer does: render the error body, status and extra headers.
              if (!(err instanceof AppError)) throw err;
              return Response.json(
                { error: { code: err.code, message: err.message } },
                { status: err.status, headers: err.headers },
              );
            }
          },
        });
      });
      afterAll(() => server.stop(true));

      const get = (headers: Record<string, string> = {}, method = "GET") =>
        fetch(server.url, { method, headers });

      test("GET is 200 with the body and the download headers on the wire", async () => {
        const res = await get();
        const body = await res.text();
        expect({ status: res.status, body }).toEqual({ status: 200, body: "The quick brown fox" });
        expect(res.headers.get("content-length")).toBe("19");
        expect(res.headers.get("content-type")).toBe("text/plain");
        expect(res.headers.get("x-content-type-options")).toBe("nosniff");
        expect(res.headers.get("accept-ranges")).toBe("bytes");
        expect(parseDisposition(res.headers.get("content-disposition") ?? "").parameters.filename).toBe(
          'résumé "2024"_.txt',
        );
      });

      test("Range is 206 with Content-Range and just those bytes", async () => {
        const res = await get({ Range: "bytes=4-8" });
        expect({ status: res.status, body: await res.text() }).toEqual({ status: 206, body: "quick" });
        expect(res.headers.get("content-range")).toBe("bytes 4-8/19");
        expect(res.headers.get("content-length")).toBe("5");
      });

      test("a 25 MB attachment arrives byte-identical, whole and as a resumed tail", async () => {
        const res = await fetch(new URL("/big", server.url));
        // Bun.serve frames a multi-chunk stream body chunked and drops our Content-Length
        // (oven-sh/bun#10507); only the fs store's sendfile path keeps it for large files.
        if (kind === "fs") expect(res.headers.get("content-length")).toBe(String(BIG_SIZE));
        expect(await sha256OfStream(res.body ?? new Blob())).toEqual({ sha: bigSha, size: BIG_SIZE });
        const tail = await fetch(new URL("/big", server.url), { headers: { Range: "bytes=1000-" } });
        expect(tail.status).toBe(206);
        expect((await sha256OfStream(tail.body ?? new Blob())).size).toBe(BIG_SIZE - 1000);
      });

      test("HEAD keeps Content-Length and sends no body", async () => {
        const res = await get({}, "HEAD");
        expect(res.status).toBe(200);
        expect(res.headers.get("content-length")).toBe("19");
        expect(await res.text()).toBe("");
      });

      test("an unsatisfiable Range is 416 with Content-Range bytes */size", async () => {
        const res = await get({ Range: "bytes=19-" });
        const body = await res.text();
        expect({ status: res.status, body: JSON.parse(body).error.code }).toEqual({
          status: 416,
          body: "attachments.range_not_satisfiable",
        });
        expect(res.headers.get("content-range")).toBe("bytes */19");
      });
    });
  });
}

describe("S3 presigned download URL", () => {
  test("carries Content-Disposition and Content-Type overrides and expires as asked", async () => {
    const store = harnesses.s3.store;
    const ref = await store.put(encode("%PDF-1.7 fake"));
    const url = store.presign?.(ref.key, {
      expiresInSec: 120,
      filename: "Überblick 2024.pdf",
      contentType: "application/pdf",
    });
    expect(url).toBeString();
    expect(new URL(url ?? "").searchParams.get("X-Amz-Expires")).toBe("120");
    const res = await fetch(url ?? "");
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "%PDF-1.7 fake" });
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(parseDisposition(res.headers.get("content-disposition") ?? "").parameters.filename).toBe(
      "Überblick 2024.pdf",
    );
  });

  test("the filesystem store offers no presigning", () => {
    expect(harnesses.fs.store.presign).toBeUndefined();
  });
});

describe("file capabilities (fs only)", () => {
  test("the S3 store neither adopts files nor has temporary files to sweep", () => {
    expect(harnesses.s3.store.adoptFile).toBeUndefined();
    expect(harnesses.s3.store.sweepTemporaryFiles).toBeUndefined();
  });

  test("the fs store adopts a file through the interface: the blob is there, the file gone", async () => {
    const store = harnesses.fs.store;
    const path = join(tmp, "spooled.eml");
    const bytes = encode("adopt me through the interface");
    await Bun.write(path, bytes);
    const ref = await store.adoptFile?.(path, refOfBytes(bytes));
    expect(ref).toEqual(refOfBytes(bytes));
    expect(await text(await store.read(refOfBytes(bytes).key))).toBe("adopt me through the interface");
    expect(await Bun.file(path).exists()).toBe(false);
  });

  test("the fs store sweeps temporary files through the interface", async () => {
    expect(await harnesses.fs.store.sweepTemporaryFiles?.()).toBeNumber();
  });
});
