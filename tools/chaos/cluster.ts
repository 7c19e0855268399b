/**
 * A mailhook cluster for the chaos suites: a fresh, migrated Postgres database of its own, a shared
 * DATA_DIR (the fs blob store stands in for a shared volume; secrets key and setup token are fixed so
 * every process reads the same), and `serve` / `worker` child processes started with `Bun.spawn`
 * exactly as an operator would (`bun services/main.ts serve|worker`), which the suites kill with
 * SIGKILL and restart; `intake` is a serve without the worker role (tools/chaos/intake.ts). Each incarnation's output goes to `DATA_DIR/logs/<name>.<n>.log`.
 */
import { mkdirSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import postgres from "postgres";
import { openDatabase, runMigrations } from "../../services/db/client.ts";

/** The operator token every process of the cluster shares. */
export const CHAOS_SETUP_TOKEN = "chaos-setup-token-0123456789";
const SECRETS_KEY = "c4".repeat(32);
const REPO = resolve(import.meta.dir, "../..");
const PG_ADMIN_URL = process.env.TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** What a child process runs. */
export type ProcRole = "serve" | "worker" | "intake";

/** One child process slot: a role and fixed ports, restartable after a kill. */
export interface Proc {
  name: string;
  role: ProcRole;
  /** HTTP and SMTP ports (serve and intake; 0 for workers) */
  httpPort: number;
  smtpPort: number;
  /** Whether the current incarnation is running. */
  readonly alive: boolean;
  /** Incarnations started so far. */
  readonly starts: number;
  pid(): number | null;
  start(): void;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful shutdown) and wait for the exit. */
  stop(): Promise<void>;
}

/** A running cluster; see the module comment. */
export interface Cluster {
  databaseUrl: string;
  dataDir: string;
  /** A small connection pool for verification queries. */
  sql: postgres.Sql;
  procs: Proc[];
  /** Adds a process slot (not started). */
  add(role: ProcRole, env?: Record<string, string>): Promise<Proc>;
  /** Polls `GET /healthz` of a serve process until it answers (deadline `timeoutMs`). */
  waitHealthy(p: Proc, timeoutMs?: number): Promise<void>;
  /** Stops every process (SIGTERM, then SIGKILL after 10 s), drops the database, removes DATA_DIR. */
  close(): Promise<void>;
}

/** Asks the kernel for a free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** Creates the database and DATA_DIR; `env` is added to every process's environment. */
export async function startCluster(env: Record<string, string>): Promise<Cluster> {
  const dbName = `mh_t_${Math.floor(Date.now() / 1000)}_${process.pid}_chaos`;
  const admin = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
  await admin.unsafe(`drop database if exists "${dbName}" with (force)`);
  await admin.unsafe(`create database "${dbName}"`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  const dataDir = mkdtempSync(join(tmpdir(), "mh-chaos-"));
  mkdirSync(join(dataDir, "logs"));
  const migrator = await openDatabase({ databaseUrl, dataDir, poolSize: 1 });
  await runMigrations(migrator, databaseUrl);
  await migrator.close();
  const sql = postgres(databaseUrl, { max: 3, onnotice: () => {} });

  const procs: Proc[] = [];
  const baseEnv: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATABASE_URL: databaseUrl,
    DATA_DIR: dataDir,
    SETUP_TOKEN: CHAOS_SETUP_TOKEN,
    SECRETS_KEY,
    ALLOW_PRIVATE_ENDPOINTS: "true",
    LOG_LEVEL: "warn",
    DNS_SERVERS: process.env.DNS_SERVERS ?? "none",
    ...env,
  };

  const add = async (role: ProcRole, extra: Record<string, string> = {}): Promise<Proc> => {
    const httpPort = role === "worker" ? 0 : await freePort();
    const smtpPort = role === "worker" ? 0 : await freePort();
    const name = `${role}${procs.filter((p) => p.role === role).length + 1}`;
    let child: ReturnType<typeof Bun.spawn> | null = null;
    let starts = 0;
    const procEnv = { ...baseEnv, PORT: String(httpPort), SMTP_PORT: String(smtpPort), ...extra };
    const wait = async (signal: "SIGKILL" | "SIGTERM") => {
      const c = child;
      if (!c) return;
      c.kill(signal);
      const timer = signal === "SIGTERM" ? setTimeout(() => c.kill("SIGKILL"), 10_000) : undefined;
      await c.exited;
      clearTimeout(timer);
      child = null;
    };
    const proc: Proc = {
      name,
      role,
      httpPort,
      smtpPort,
      get alive() {
        return child !== null && child.exitCode === null && child.signalCode === null;
      },
      get starts() {
        return starts;
      },
      pid: () => child?.pid ?? null,
      start() {
        if (child) return;
        const log = openSync(join(dataDir, "logs", `${name}.${++starts}.log`), "a");
        const command =
          role === "intake" ? ["bun", "tools/chaos/intake.ts"] : ["bun", "services/main.ts", role];
        child = Bun.spawn(command, {
          cwd: REPO,
          env: procEnv,
          stdin: "ignore",
          stdout: log,
          stderr: log,
        });
      },
      kill: () => wait("SIGKILL"),
      stop: () => wait("SIGTERM"),
    };
    procs.push(proc);
    return proc;
  };

  return {
    databaseUrl,
    dataDir,
    sql,
    procs,
    add,
    async waitHealthy(p, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        try {
          const res = await fetch(`http://127.0.0.1:${p.httpPort}/healthz`);
          if (res.ok) return;
        } catch {}
        if (Date.now() > deadline) throw new Error(`${p.name} not healthy within ${timeoutMs} ms`);
        await Bun.sleep(50);
      }
    },
    async close() {
      await Promise.all(procs.map((p) => p.stop().catch(() => {})));
      await sql.end({ timeout: 5 }).catch(() => {});
      const a = postgres(PG_ADMIN_URL, { max: 1, onnotice: () => {} });
      await a.unsafe(`drop database if exists "${dbName}" with (force)`).catch(() => {});
      await a.end();
      if (!process.env.CHAOS_KEEP_DATA) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A project whose one route (rule `{}`, generic@1 body) posts every message to `url`. */
export interface ChaosProject {
  apiKey: string;
  inbound: string;
  endpointId: string;
  routeId: string;
}

/** POSTs JSON to the instance at `base`; a non-2xx answer throws with its body. */
async function postJson(base: string, path: string, body: unknown, headers: Record<string, string>) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** Creates a project alone (no endpoint, no route): its API key and inbound address. */
export async function createProject(base: string): Promise<{ apiKey: string; inbound: string }> {
  const project = await postJson(
    base,
    "/v1/admin/projects",
    { name: "chaos" },
    { "x-setup-token": CHAOS_SETUP_TOKEN },
  );
  return { apiKey: (project.api_key as { secret: string }).secret, inbound: String(project.inbound_address) };
}

/** Creates a project, endpoint (`timeout_s`), signing secret and catch-all route through the API. */
export async function setupProject(base: string, url: string, timeoutS = 10): Promise<ChaosProject> {
  const post = (path: string, body: unknown, headers: Record<string, string>) =>
    postJson(base, path, body, headers);
  const { apiKey, inbound } = await createProject(base);
  const key = { "x-api-key": apiKey };
  const endpoint = await post("/v1/endpoints", { url, timeout_s: timeoutS }, key);
  const secret = await post("/v1/signing-secrets", {}, key);
  const route = await post(
    "/v1/routes",
    { name: "all", endpoint_id: endpoint.id, signing_secret_kid: secret.kid },
    key,
  );
  return {
    apiKey,
    inbound,
    endpointId: String(endpoint.id),
    routeId: String(route.id),
  };
}
