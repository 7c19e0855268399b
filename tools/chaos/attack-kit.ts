/**
 * The harness of the attack suite (tools/chaos/attacks.ts): one `serve` child process started as an
 * operator would (`bun services/main.ts serve`) on a DATA_DIR of its own and either the embedded PGlite
 * or a fresh Postgres database, a webhook receiver that keeps every body it gets, the child's resident
 * memory read from `/proc/<pid>/status`, and a small JSON client for the API.
 *
 * Invariants:
 * - Everything listens on and dials 127.0.0.1 only.
 * - The child's log goes to a directory beside DATA_DIR, never inside it, so the file-mode attack sees
 *   only what the service itself created.
 * - `stop()` always ends the child (SIGTERM, SIGKILL after 10 s) and removes its database and
 *   directories, unless `CHAOS_KEEP_DATA` is set (then the paths are printed).
 */
import { chmodSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";
import { eventually } from "../../test/support/eventually.ts";
import { CHAOS_SETUP_TOKEN, freePort } from "./cluster.ts";

const REPO = resolve(import.meta.dir, "../..");
const PG_ADMIN_URL = process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Which database the child runs on. */
export type DbKind = "pglite" | "postgres";

/** A running `serve` child. */
export interface Instance {
  base: string;
  /** 0 when the instance was started with SMTP off */
  smtpPort: number;
  dataDir: string;
  logFile: string;
  pid: number;
  /** The child's resident set size in bytes (VmRSS). */
  rss(): number;
  stop(): Promise<void>;
}

/**
 * Starts `bun services/main.ts serve` with `env` on top of a loopback-only base configuration and waits
 * for `/healthz`. DATA_DIR is created 0755 on purpose: start-up must tighten an existing directory.
 */
export async function startInstance(
  db: DbKind,
  name: string,
  env: Record<string, string>,
): Promise<Instance> {
  const dataDir = mkdtempSync(join(tmpdir(), `mh-attacks-${name}-`));
  chmodSync(dataDir, 0o755);
  const logDir = mkdtempSync(join(tmpdir(), `mh-attacks-${name}-log-`));
  const logFile = join(logDir, "serve.log");
  const dbName = `mh_attacks_${Date.now()}_${process.pid}_${name}`;
  const databaseUrl = db === "postgres" ? await createDatabase(dbName) : null;
  const [port, smtpPort] = [await freePort(), env.SMTP_PORT === "0" ? 0 : await freePort()];
  const inherited = { ...(process.env as Record<string, string>) };
  delete inherited.DATABASE_URL;
  const log = openSync(logFile, "a");
  const child = Bun.spawn([process.execPath, "services/main.ts", "serve"], {
    cwd: REPO,
    env: {
      ...inherited,
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      DATA_DIR: dataDir,
      HOST: "127.0.0.1",
      // Loopback only: no lookups through the machine's resolver (docs/security.md).
      DNS_SERVERS: process.env.DNS_SERVERS ?? "none",
      PORT: String(port),
      SMTP_HOST: "127.0.0.1",
      SMTP_PORT: String(smtpPort),
      SETUP_TOKEN: CHAOS_SETUP_TOKEN,
      RETRY_SCHEDULE: "0,200ms,400ms",
      LOG_LEVEL: "warn",
      ...env,
    },
    stdin: "ignore",
    stdout: log,
    stderr: log,
  });
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
    await child.exited;
    clearTimeout(timer);
    if (databaseUrl) await dropDatabase(dbName);
    if (process.env.CHAOS_KEEP_DATA) console.log(`kept ${dataDir} and ${logFile}`);
    else for (const dir of [dataDir, logDir]) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const up = await eventually(
      `${name} to answer /healthz`,
      async () => (child.exitCode !== null ? "exited" : (await fetch(`${base}/healthz`)).ok),
      60_000,
      { everyMs: 100, retryErrors: true, until: (v) => v !== false },
    );
    if (up === "exited") throw new Error(`exited with ${child.exitCode}`);
  } catch (err) {
    await stop();
    throw new Error(`${name} did not start: ${(err as Error).message}\n${tail(logFile)}`);
  }
  return { base, smtpPort, dataDir, logFile, pid: child.pid, rss: () => rssBytes(child.pid), stop };
}

/** The last lines of a log, for an error message. */
export function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "";
  }
}

async function createDatabase(name: string): Promise<string> {
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database "${name}"`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

async function dropDatabase(name: string): Promise<void> {
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${name}" with (force)`).catch(() => {});
  await admin.end();
}

/** VmRSS of a process in bytes (Linux `/proc`). */
export function rssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return Number(kb ?? 0) * 1024;
}

/**
 * Samples a process's RSS every `everyMs` while `work` runs and returns the growth of the peak over
 * the RSS just before it started.
 */
export async function peakGrowth<T>(pid: number, work: () => Promise<T>, everyMs = 10) {
  const before = rssBytes(pid);
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, rssBytes(pid));
  }, everyMs);
  try {
    const result = await work();
    peak = Math.max(peak, rssBytes(pid));
    return { result, before, peak, growth: Math.max(0, peak - before) };
  } finally {
    clearInterval(timer);
  }
}

/** MiB with one decimal, for report lines. */
export const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** One webhook body the receiver got (the generic@1 fields the attacks read). */
export interface Received {
  path: string;
  eventId: string;
  messageId: string;
  subject: string;
  attachments: { id: string; filename: string }[];
}

/** A receiver on 127.0.0.1 that answers 200 and keeps every body. */
export interface Receiver {
  port: number;
  received: Received[];
  /** The deliveries of one Message-ID so far. */
  of(messageId: string): Received[];
  stop(): void;
}

/** Starts a {@link Receiver}. */
export function startReceiver(): Receiver {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = (await req.json().catch(() => null)) as {
        event?: { id?: string };
        message?: { message_id?: string; subject?: string };
        body?: { attachments?: { id: string; filename: string }[] };
      } | null;
      received.push({
        path: new URL(req.url).pathname,
        eventId: body?.event?.id ?? "",
        messageId: body?.message?.message_id ?? "",
        subject: body?.message?.subject ?? "",
        attachments: body?.body?.attachments ?? [],
      });
      return new Response("ok");
    },
  });
  return {
    port: server.port ?? 0,
    received,
    of: (messageId) => received.filter((r) => r.messageId === messageId),
    stop: () => void server.stop(true),
  };
}

/** An answer of the API: status, parsed JSON (null if not JSON) and the raw text. */
export interface ApiAnswer {
  status: number;
  json: Record<string, unknown> | null;
  text: string;
  headers: Headers;
}

/** A request to the instance; `body` objects are sent as JSON, strings as they are. */
export async function api(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.key) headers["x-api-key"] = opts.key;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {}
  return { status: res.status, json, text, headers: res.headers };
}

/** `409 messages.ambiguous`-style summary of an answer: status and error code if any. */
export function brief(a: ApiAnswer): string {
  const code = (a.json?.error as { code?: string } | undefined)?.code;
  return code ? `${a.status} ${code}` : String(a.status);
}
