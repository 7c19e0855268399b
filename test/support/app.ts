/**
 * An in-process service for tests: a fresh database of the given kind, temp DATA_DIR, the real API
 * (called through `app.handle(new Request(…))`, no socket), plus helpers that create a project and
 * make authenticated requests. Assertion failures should print the response: `res.text` is kept.
 */

import type { ApiOptions } from "../../services/api/app.ts";
import { type BootstrapOptions, bootstrap } from "../../services/bootstrap.ts";
import { type Config, loadConfig } from "../../services/config.ts";
import type { AppContext } from "../../services/context.ts";
import { createHttpApp } from "../../services/http.ts";
import { createTestDatabase, type DbKind, type TestDatabase } from "./db.ts";

export const TEST_SETUP_TOKEN = "test-setup-token-0123456789";

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface TestApp {
  kind: DbKind;
  ctx: AppContext;
  testDb: TestDatabase;
  api: ReturnType<typeof createHttpApp>;
  request<T = any>(
    method: string,
    path: string,
    opts?: { body?: unknown; rawBody?: BodyInit; apiKey?: string | null; headers?: Record<string, string> },
  ): Promise<TestResponse<T>>;
  /** Creates a project through the operator API; returns its id, API key secret and inbound address. */
  newProject(name?: string): Promise<{ id: string; apiKey: string; inbound: string }>;
  close(): Promise<void>;
}

export interface TestAppOptions extends Omit<BootstrapOptions, "database"> {
  env?: Record<string, string>;
  /** plugins mounted under `/v1` after the API's own */
  extraPlugins?: ApiOptions["extra"];
}

export async function createTestApp(kind: DbKind, opts: TestAppOptions = {}): Promise<TestApp> {
  const testDb = await createTestDatabase(kind);
  const config: Config = loadConfig({
    DATA_DIR: testDb.dataDir,
    SETUP_TOKEN: TEST_SETUP_TOKEN,
    SMTP_PORT: "0",
    PORT: "0",
    PUBLIC_BASE_URL: "http://127.0.0.1:8080",
    ALLOW_PRIVATE_ENDPOINTS: "true",
    LOG_LEVEL: "silent",
    DNS_SERVERS: "none",
    ...(testDb.url ? { DATABASE_URL: testDb.url } : {}),
    ...opts.env,
  });
  const ctx = await bootstrap(config, { ...opts, database: testDb.database, skipMigrations: true });
  const api = createHttpApp(ctx, { extra: opts.extraPlugins ?? [] });
  const app: TestApp = {
    kind,
    ctx,
    testDb,
    api,
    async request(method, path, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.apiKey) headers["x-api-key"] = o.apiKey;
      let body: BodyInit | undefined = o.rawBody;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers["content-type"] ??= "application/json";
      }
      const res = await api.handle(
        new Request(`http://localhost${path}`, { method, headers, ...(body !== undefined ? { body } : {}) }),
      );
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {}
      return { status: res.status, headers: res.headers, body: parsed as any, text };
    },
    async newProject(name = "test project") {
      const r = await app.request("POST", "/v1/admin/projects", {
        body: { name },
        headers: { "x-setup-token": TEST_SETUP_TOKEN },
      });
      if (r.status !== 201) throw new Error(`project creation failed: ${r.status} ${r.text}`);
      return { id: r.body.project_id, apiKey: r.body.api_key.secret, inbound: r.body.inbound_address };
    },
    async close() {
      await testDb.drop();
    },
  };
  return app;
}
