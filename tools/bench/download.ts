/**
 * Download throughput: `buildDownloadResponse` over the fs blob store vs Bun's own static file serving
 * (`new Response(Bun.file(path))`) of the same file, in one process and one run.
 *
 *   bun tools/bench/download.ts [--size-mb 25] [--rounds 5] [--concurrency 10]
 *                               [--url <multi-use download URL>] [--pid <server pid>]
 *
 * `--url` benchmarks a real endpoint (e.g. a multi-use `/v1/attachments/<token>` URL) instead of the
 * in-process proxy; `--pid` then reads that server's RSS from /proc. Targets: proxy ≥ 0.8× static,
 * the serving process's RSS growth < 100 MB with `--concurrency` downloads in flight.
 *
 * The concurrent downloads run in a child process and only the server's RSS is counted. Bun's fetch
 * client reads a response ahead of its consumer, so ten in-process clients of a 25 MB file add 40-110 MB
 * of their own (as much for Bun's static serving as for the proxy) and would drown the server's figure.
 * Static serving's growth under the same load is printed beside the proxy's as the floor to compare with.
 *
 * `--e2e` goes through the whole service instead: it starts the api role in process (PGlite and the fs
 * store in a temp DATA_DIR), creates a project, ingests a message carrying the file as an attachment via
 * `POST /v1/messages`, asks `GET /v1/messages/{id}/attachments/{att}/url?multi_use=true` for a URL and
 * downloads through that token, beside Bun's static serving of the very blob file the store wrote.
 */
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { sql } from "drizzle-orm";
import { buildDownloadResponse } from "../../services/attachments/download-response.ts";
import { FsBlobStore } from "../../services/attachments/fs-store.ts";
import { bootstrap } from "../../services/bootstrap.ts";
import { loadConfig } from "../../services/config.ts";
import { startRoles } from "../../services/roles.ts";

const { values: opts } = parseArgs({
  options: {
    "size-mb": { type: "string", default: "25" },
    rounds: { type: "string", default: "5" },
    concurrency: { type: "string", default: "10" },
    url: { type: "string" },
    pid: { type: "string" },
    e2e: { type: "boolean", default: false },
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

/**
 * Peak RSS growth (MB) of this process while it runs `CONCURRENCY` downloads of `url` itself: only for
 * `--url` without `--pid`, where the client side is all there is to measure.
 */
async function clientRssGrowth(url: string | URL, expected: number): Promise<number> {
  Bun.gc(true);
  const base = process.memoryUsage.rss();
  let peak = base;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  const sizes = await Promise.all(Array.from({ length: CONCURRENCY }, () => download(url)));
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage.rss());
  if (sizes.some((n) => n !== expected))
    throw new Error(`incomplete concurrent download: ${sizes.join(",")}`);
  return (peak - base) / MB;
}

/**
 * Peak RSS growth (MB) of the serving process (this one, or `pid`) while a child process runs
 * `CONCURRENCY` downloads of `url`: the server's own memory, without the clients' fetch buffers.
 */
async function serverRssGrowth(url: string | URL, expected: number, pid?: string): Promise<number> {
  const script = `
    const sizes = await Promise.all(Array.from({ length: Number(process.env.N) }, async () => {
      const res = await fetch(process.env.URL);
      let n = 0;
      for await (const c of res.body) n += c.byteLength;
      return n;
    }));
    console.log(sizes.join(","));`;
  Bun.gc(true);
  const base = await rssOf(pid);
  let peak = base;
  let sampling = Promise.resolve();
  const sampler = setInterval(() => {
    sampling = sampling.then(async () => {
      peak = Math.max(peak, await rssOf(pid));
    });
  }, 5);
  const child = Bun.spawn([process.execPath, "-e", script], {
    env: { ...process.env, URL: String(url), N: String(CONCURRENCY) },
    stdout: "pipe",
  });
  const out = await new Response(child.stdout).text();
  await child.exited;
  clearInterval(sampler);
  await sampling;
  peak = Math.max(peak, await rssOf(pid));
  const sizes = out.trim().split(",").map(Number);
  if (sizes.length !== CONCURRENCY || sizes.some((n) => n !== expected))
    throw new Error(`incomplete concurrent download: ${out}`);
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

/** What is measured: a static URL and a proxy URL serving the same bytes. */
interface Target {
  staticUrl: URL;
  proxyUrl: string | URL;
  proxySize: number;
  label: string;
  stop(): Promise<void>;
}

/** The colleague's original mode: `buildDownloadResponse` (or `--url`) vs static, in one Bun.serve. */
async function startDirectTarget(dir: string): Promise<Target> {
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
  const proxySize = opts.url
    ? Number((await fetch(opts.url, { method: "HEAD" })).headers.get("content-length"))
    : SIZE;
  if (!Number.isFinite(proxySize) || proxySize <= 0)
    throw new Error(`no Content-Length from HEAD ${opts.url}`);
  return {
    staticUrl: new URL("/static", server.url),
    proxyUrl: opts.url ?? new URL("/proxy", server.url),
    proxySize,
    label: opts.url ? "--url" : "buildDownload",
    async stop() {
      server.stop(true);
    },
  };
}

/**
 * The whole service in process: api role on a free port, a project, the file ingested as an attachment
 * through `POST /v1/messages`, a multi-use URL from the URL endpoint; static serves the stored blob file.
 */
async function startE2eTarget(dir: string): Promise<Target> {
  const setupToken = "bench-setup-token-0123456789";
  const config = loadConfig({
    DATA_DIR: dir,
    PORT: "0",
    SMTP_PORT: "0",
    SETUP_TOKEN: setupToken,
    LOG_LEVEL: "error",
  });
  const ctx = await bootstrap(config);
  const running = await startRoles(ctx, ["api"]);
  const base = running.httpUrl as string;
  const call = async (method: string, path: string, headers: Record<string, string>, body?: BodyInit) => {
    const res = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} → ${res.status}: ${text}`);
    return JSON.parse(text);
  };
  const project = await call(
    "POST",
    "/v1/admin/projects",
    { "x-setup-token": setupToken, "content-type": "application/json" },
    JSON.stringify({ name: "bench" }),
  );
  const apiKey: string = project.api_key.secret;

  const filePath = join(dir, "attachment.bin");
  await writeFile(filePath, SIZE);
  const b64 = Buffer.from(await Bun.file(filePath).arrayBuffer())
    .toString("base64")
    .replace(/.{76}/g, "$&\r\n");
  const messageId = `<bench.${Date.now()}@bench.example>`;
  const raw = [
    "From: bench@example.com",
    "To: bench@example.org",
    "Subject: 25 MB",
    `Message-ID: ${messageId}`,
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="b"',
    "",
    "--b",
    "Content-Type: text/plain",
    "",
    "see attached",
    "--b",
    "Content-Type: application/octet-stream",
    'Content-Disposition: attachment; filename="attachment.bin"',
    "Content-Transfer-Encoding: base64",
    "",
    b64,
    "--b--",
    "",
  ].join("\r\n");
  await call("POST", "/v1/messages", { "x-api-key": apiKey, "content-type": "message/rfc822" }, raw);
  const [att] = await ctx.database.rows<{ attachment_id: string; blob_key: string }>(
    sql`select a.attachment_id, a.blob_key from attachments a join messages m on m.id = a.message_pk
        where m.message_id = ${messageId}`,
  );
  if (!att) throw new Error("the ingested message has no attachment row");
  const issued = await call(
    "GET",
    `/v1/messages/${encodeURIComponent(messageId)}/attachments/${att.attachment_id}/url?multi_use=true&ttl_seconds=3600`,
    { "x-api-key": apiKey },
  );
  // PUBLIC_BASE_URL says port 0 here; the path is what matters.
  const proxyUrl = new URL(new URL(issued.url).pathname, base);
  const blobPath = join(dir, "blobs", att.blob_key);
  const staticServer = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response(Bun.file(blobPath)),
  });
  return {
    staticUrl: new URL("/static", staticServer.url),
    proxyUrl,
    proxySize: SIZE,
    label: "e2e token",
    async stop() {
      staticServer.stop(true);
      await running.stop();
      await ctx.database.close();
    },
  };
}

const dir = await mkdtemp(join(tmpdir(), "mailhook-bench-download-"));
try {
  const target = opts.e2e ? await startE2eTarget(dir) : await startDirectTarget(dir);
  const { staticUrl, proxyUrl, proxySize } = target;

  const [staticMBs = 0, proxyMBs = 0] = await throughputs([
    { url: staticUrl, size: proxySize },
    { url: proxyUrl, size: proxySize },
  ]);
  const ratio = proxyMBs / staticMBs;
  // With `--url` the proxy runs elsewhere: its RSS is that of `--pid`, and static serving (in this
  // process) is no comparison for it.
  const clientOnly = opts.url !== undefined && opts.pid === undefined;
  const growth = clientOnly
    ? await clientRssGrowth(proxyUrl, proxySize)
    : await serverRssGrowth(proxyUrl, proxySize, opts.url ? opts.pid : undefined);
  const staticGrowth = opts.url ? null : await serverRssGrowth(staticUrl, proxySize);
  await target.stop();

  const rssWhose = clientOnly
    ? "this client process only"
    : `${opts.url ? `pid ${opts.pid}` : opts.e2e ? "service process" : "server process"}; clients in a child`;
  console.log(
    `file ${(proxySize / MB).toFixed(0)} MB, ${ROUNDS} interleaved sequential rounds each, bun ${Bun.version}`,
  );
  console.log(`static (Bun.file)        ${staticMBs.toFixed(0).padStart(6)} MB/s`);
  console.log(`proxy  (${target.label.padEnd(13)})  ${proxyMBs.toFixed(0).padStart(6)} MB/s`);
  console.log(`ratio proxy/static       ${ratio.toFixed(2).padStart(6)}   (target ≥ 0.80)`);
  console.log(
    `RSS growth, ${CONCURRENCY} at once  ${growth.toFixed(1).padStart(6)} MB (${rssWhose}; target < 100 MB)`,
  );
  if (staticGrowth !== null)
    console.log(`  static, same load       ${staticGrowth.toFixed(1).padStart(6)} MB`);
  process.exitCode = ratio >= 0.8 && growth < 100 ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
