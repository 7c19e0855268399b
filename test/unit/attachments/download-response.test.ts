import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BlobRef } from "../../../services/attachments/blob-store.ts";
import {
  buildDownloadResponse,
  type DownloadRequest,
  planDownload,
} from "../../../services/attachments/download-response.ts";
import { FsBlobStore } from "../../../services/attachments/fs-store.ts";
import { AppError } from "../../../services/lib/errors.ts";

const CONTENT = "0123456789abcdefghij"; // 20 bytes
let dir: string;
let store: FsBlobStore;
let ref: BlobRef;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mailhook-download-"));
  store = new FsBlobStore(dir);
  ref = await store.put(new TextEncoder().encode(CONTENT));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function request(overrides: Partial<DownloadRequest> = {}): DownloadRequest {
  return {
    store,
    key: ref.key,
    size: ref.size,
    filename: "notes.txt",
    contentType: "text/plain",
    method: "GET",
    rangeHeader: null,
    ...overrides,
  };
}

async function downloadError(req: DownloadRequest): Promise<AppError> {
  try {
    const res = await buildDownloadResponse(req);
    throw new Error(`expected an AppError, got ${res.status} ${JSON.stringify([...res.headers])}`);
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
}

describe("buildDownloadResponse", () => {
  test("GET without Range is 200 with the full body and the download headers", async () => {
    const res = await buildDownloadResponse(request({ filename: 'Q3 "final".txt' }));
    expect(res.status).toBe(200);
    expect(Object.fromEntries(res.headers)).toMatchObject({
      "content-type": "text/plain",
      "content-length": "20",
      "content-disposition": `attachment; filename="Q3 _final_.txt"; filename*=UTF-8''Q3%20%22final%22.txt`,
      "accept-ranges": "bytes",
      "x-content-type-options": "nosniff",
      "cache-control": "no-store",
      etag: `"${ref.sha256}"`,
    });
    expect(res.headers.has("content-range")).toBe(false);
    expect(await res.text()).toBe(CONTENT);
  });

  test.each([
    ["bytes=0-0", 0, 0],
    ["bytes=5-9", 5, 9],
    ["bytes=15-", 15, 19],
    ["bytes=-3", 17, 19],
    ["bytes=10-500", 10, 19],
  ])("Range %s is 206 with bytes %d-%d", async (rangeHeader, start, end) => {
    const res = await buildDownloadResponse(request({ rangeHeader }));
    expect(res.status).toBe(206);
    expect(res.headers.get("content-range")).toBe(`bytes ${start}-${end}/20`);
    expect(res.headers.get("content-length")).toBe(String(end - start + 1));
    expect(await res.text()).toBe(CONTENT.slice(start, end + 1));
  });

  test("several ranges are answered with the whole file (200)", async () => {
    const res = await buildDownloadResponse(request({ rangeHeader: "bytes=0-1,4-5" }));
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(CONTENT);
  });

  test("a malformed Range is attachments.range_invalid (400)", async () => {
    const err = await downloadError(request({ rangeHeader: "bytes=9-2" }));
    expect({ code: err.code, status: err.status }).toEqual({
      code: "attachments.range_invalid",
      status: 400,
    });
  });

  test.each(["bytes=20-", "bytes=-0", "bytes=100-200"])(
    "%s is attachments.range_not_satisfiable (416) with Content-Range bytes */20",
    async (rangeHeader) => {
      const err = await downloadError(request({ rangeHeader }));
      expect({ code: err.code, status: err.status, headers: err.headers }).toEqual({
        code: "attachments.range_not_satisfiable",
        status: 416,
        headers: { "Content-Range": "bytes */20" },
      });
    },
  );

  test("HEAD has the same status and headers as GET and no body", async () => {
    for (const rangeHeader of [null, "bytes=2-5"]) {
      const get = await buildDownloadResponse(request({ rangeHeader }));
      const head = await buildDownloadResponse(request({ rangeHeader, method: "HEAD" }));
      expect(head.status).toBe(get.status);
      expect(Object.fromEntries(head.headers)).toEqual(Object.fromEntries(get.headers));
      expect(head.body).toBeNull();
    }
  });

  test("If-Range with our ETag honours Range; any other validator gets the whole file", async () => {
    const matching = await buildDownloadResponse(
      request({ rangeHeader: "bytes=0-1", ifRangeHeader: `"${ref.sha256}"` }),
    );
    expect(matching.status).toBe(206);
    for (const ifRangeHeader of ['"stale"', `W/"${ref.sha256}"`, "Wed, 21 Oct 2015 07:28:00 GMT"]) {
      const res = await buildDownloadResponse(request({ rangeHeader: "bytes=0-1", ifRangeHeader }));
      expect(res.status).toBe(200);
    }
  });

  test.each([
    [null, "application/octet-stream"],
    ["", "application/octet-stream"],
    ["text/html\r\nX-Evil: 1", "application/octet-stream"],
    ["nonsense", "application/octet-stream"],
    ["application/pdf", "application/pdf"],
    ["text/plain; charset=utf-8", "text/plain; charset=utf-8"],
  ])("Content-Type for declared %p is %p", (contentType, expected) => {
    const plan = planDownload({ key: ref.key, size: 20, filename: "f", contentType, rangeHeader: null });
    expect(plan.headers.get("content-type")).toBe(expected);
  });

  test("a blob missing from the store is attachments.not_found (404)", async () => {
    const gone = await store.put(new TextEncoder().encode("gone"));
    await store.delete(gone.key);
    const err = await downloadError(request({ key: gone.key, size: gone.size }));
    expect({ code: err.code, status: err.status }).toEqual({ code: "attachments.not_found", status: 404 });
  });

  test("a stored size that disagrees with the recorded size is internal (500), not a short body", async () => {
    const err = await downloadError(request({ size: 21 }));
    expect({ code: err.code, status: err.status }).toEqual({ code: "internal", status: 500 });
  });

  test("planDownload rejects a bad Range without any store access", () => {
    expect(() =>
      planDownload({ key: ref.key, size: 20, filename: "f", contentType: null, rangeHeader: "bytes=x" }),
    ).toThrow(AppError);
  });
});
