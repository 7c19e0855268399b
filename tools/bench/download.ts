/**
 * Download throughput: `buildDownloadResponse` over the fs blob store vs Bun's own static file serving
 * (`new Response(Bun.file(path))`) of the same file, in one process and one run.
 *
 *   bun tools/bench/download.ts [--size-mb 25] [--rounds 5] [--concurrency 10]
 *                               [--url <multi-use download URL>] [--pid <server pid>]
 *
 * `--url` benchmarks a real endpoint (e.g. a multi-use `/v1/attachments/<token>` URL) instead of the
 * in-process proxy; `--pid` then reads that server's RSS from /proc. Targets: proxy ≥ 0.8× static,
 * RSS growth < 100 MB with `--concurrency` downloads in flight.
 */
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildDownloadResponse } from "../../services/attachments/download-response.ts";
import { FsBlobStore } from "../../services/attachments/fs-store.ts";

const { values: opts } = parseArgs({
  options: {
    "size-mb": { type: "string", default: "25" },
    rounds: { type: "string", default: "5" },
    concurrency: { type: "string", default: "10" },
    url: { type: "string" },
    pid: { type: "string" },
  },
});
const SIZE = Number(opts["size-mb"]) * 1024 * 1024;
const ROUNDS = Number(opts.rounds);
const CONCURRENCY = Number(opts.concurrency);
const MB = 1024 * 1024;

/** Fetch `url` and count the body bytes without keeping them. */
async function download(url: string | URL): Promise<number> {
  const res = await fetch(url);
  if (!res.ok || !res.body) throw new Error(`GET ${url} → ${res.status}: ${await res.text()}`);
  let n = 0;
  for await (const chunk of res.body) n += chunk.byteLength;
  return n;
}

/**
 * MB/s of each URL over `ROUNDS` sequential downloads (after a warm-up of each), interleaved round by
 * round so page cache, CPU frequency and neighbours on shared cores affect both sides alike.
 */
async function throughputs(targets: { url: string | URL; size: number }[]): Promise<number[]> {
  for (const t of targets) await download(t.url);
  const elapsed = targets.map(() => 0);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, t] of targets.entries()) {
      const t0 = performance.now();
      const n = await download(t.url);
      elapsed[i] = (elapsed[i] ?? 0) + performance.now() - t0;
      if (n !== t.size) throw new Error(`short download from ${t.url}: ${n} of ${t.size} bytes`);
    }
  }
  return targets.map((t, i) => (t.size * ROUNDS) / MB / ((elapsed[i] ?? 0) / 1000));
}

async function rssOf(pid: string | undefined): Promise<number> {
  if (pid === undefined) return process.memoryUsage.rss();
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(kb) * 1024;
}

/** Peak RSS growth (MB) while `CONCURRENCY` downloads of `url` run at once. */
async function rssGrowthUnderLoad(
  url: string | URL,
  expected: number,
  pid: string | undefined,
): Promise<number> {
  Bun.gc(true);
  const base = await rssOf(pid);
  let peak = base;
  const sampler = setInterval(async () => {
    peak = Math.max(peak, await rssOf(pid));
  }, 5);
  const sizes = await Promise.all(Array.from({ length: CONCURRENCY }, () => download(url)));
  clearInterval(sampler);
  peak = Math.max(peak, await rssOf(pid));
  if (sizes.some((n) => n !== expected))
    throw new Error(`incomplete concurrent download: ${sizes.join(",")}`);
  return (peak - base) / MB;
}

/** A file of `size` bytes written in 1 MiB chunks, part random so nothing compresses it away. */
async function writeFile(path: string, size: number): Promise<void> {
  const chunk = new Uint8Array(MB);
  crypto.getRandomValues(chunk.subarray(0, 65536));
  const fh = await open(path, "w");
  for (let left = size; left > 0; left -= chunk.length)
    await fh.write(chunk.subarray(0, Math.min(left, chunk.length)));
  await fh.close();
}

const dir = await mkdtemp(join(tmpdir(), "mailhook-bench-download-"));
try {
  const path = join(dir, "attachment.bin");
  await writeFile(path, SIZE);
  const store = new FsBlobStore(join(dir, "blobs"));
  const ref = await store.putFile(path);

  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      if (new URL(req.url).pathname === "/static") return new Response(Bun.file(path));
      return buildDownloadResponse({
        store,
        key: ref.key,
        size: ref.size,
        filename: "attachment.bin",
        contentType: "application/octet-stream",
        method: req.method === "HEAD" ? "HEAD" : "GET",
        rangeHeader: req.headers.get("range"),
      });
    },
  });
  const staticUrl = new URL("/static", server.url);
  const proxyUrl = opts.url ?? new URL("/proxy", server.url);
  const proxySize = opts.url
    ? Number((await fetch(opts.url, { method: "HEAD" })).headers.get("content-length"))
    : SIZE;
  if (!Number.isFinite(proxySize) || proxySize <= 0)
    throw new Error(`no Content-Length from HEAD ${opts.url}`);

  const [staticMBs = 0, proxyMBs = 0] = await throughputs([
    { url: staticUrl, size: SIZE },
    { url: proxyUrl, size: proxySize },
  ]);
  const ratio = proxyMBs / staticMBs;
  const rssPid = opts.url ? opts.pid : undefined;
  const growth = await rssGrowthUnderLoad(proxyUrl, proxySize, rssPid);
  server.stop(true);

  const rssWhose = opts.url
    ? rssPid
      ? `pid ${rssPid}`
      : "this client process only"
    : "server+client process";
  console.log(
    `file ${(SIZE / MB).toFixed(0)} MB, ${ROUNDS} interleaved sequential rounds each, bun ${Bun.version}`,
  );
  console.log(`static (Bun.file)        ${staticMBs.toFixed(0).padStart(6)} MB/s`);
  console.log(
    `proxy  (${(opts.url ? "--url" : "buildDownload").padEnd(13)})  ${proxyMBs.toFixed(0).padStart(6)} MB/s`,
  );
  console.log(`ratio proxy/static       ${ratio.toFixed(2).padStart(6)}   (target ≥ 0.80)`);
  console.log(
    `RSS growth, ${CONCURRENCY} at once  ${growth.toFixed(1).padStart(6)} MB (${rssWhose}; target < 100 MB)`,
  );
  process.exitCode = ratio >= 0.8 && growth < 100 ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
