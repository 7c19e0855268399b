/**
 * A route names an endpoint and a signing secret. Only "no such endpoint / secret" is the caller's
 * mistake (422 `routes.invalid_reference`); a database that fails while looking them up is the
 * service's problem and answers 503 `service.unavailable`, on create and on update alike.
 *
 * The failure is injected: the lookup of one table throws what drizzle throws when the server refuses
 * connections, while authentication and the route's own row read normally.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { AppContext } from "../../services/context.ts";
import { endpoints, signingSecrets } from "../../services/db/schema/index.ts";
import { createHttpApp } from "../../services/http.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";

/** What drizzle rejects with when postgres.js cannot reach the server. */
function connectionRefused(): Error {
  const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
  return Object.assign(new Error("Failed query"), { cause });
}

/** `ctx` whose database fails every `select … from <table>` for the given tables. */
function failingLookups(ctx: AppContext, tables: readonly object[]): AppContext {
  const db = new Proxy(ctx.database.db, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target);
      if (prop !== "select" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const builder = value.apply(target, args);
        return new Proxy(builder, {
          get(b, p) {
            const member = Reflect.get(b, p, b);
            if (p !== "from") return member;
            return (table: object) => {
              if (tables.includes(table)) throw connectionRefused();
              return member.call(b, table);
            };
          },
        });
      };
    },
  });
  const database = new Proxy(ctx.database, {
    get: (target, prop) => (prop === "db" ? db : Reflect.get(target, prop, target)),
  });
  return { ...ctx, database };
}

for (const kind of testDbKinds()) {
  describe(`route references on ${kind}`, () => {
    let app: TestApp;
    let apiKey: string;
    let endpointId: string;
    let kid: string;
    let routeId: string;

    beforeAll(async () => {
      app = await createTestApp(kind);
      ({ apiKey } = await app.newProject("references"));
      const ep = await app.request("POST", "/v1/endpoints", {
        apiKey,
        body: { url: "https://hooks.example.com/in" },
      });
      endpointId = ep.body.id;
      const ss = await app.request("POST", "/v1/signing-secrets", { apiKey });
      kid = ss.body.kid;
      const rt = await app.request("POST", "/v1/routes", {
        apiKey,
        body: { name: "all mail", endpoint_id: endpointId, signing_secret_kid: kid },
      });
      if (rt.status !== 201) throw new Error(`route: ${rt.status} ${rt.text}`);
      routeId = rt.body.id;
    });
    afterAll(async () => {
      await app?.close();
    });

    /** One request to an API whose lookups of `tables` fail as if the database were down. */
    async function requestWhileDown(tables: readonly object[], method: string, path: string, body: unknown) {
      const api = createHttpApp(failingLookups(app.ctx, tables));
      const res = await api.handle(
        new Request(`http://localhost${path}`, {
          method,
          headers: { "x-api-key": apiKey, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: JSON.parse(text), text };
    }

    test.each([
      ["endpoint", [endpoints]],
      ["signing secret", [signingSecrets]],
    ] as const)(
      "a database failure while looking up the %s answers 503 on create and update, not 422",
      async (_what, tables) => {
        const created = await requestWhileDown(tables, "POST", "/v1/routes", {
          name: "x",
          endpoint_id: endpointId,
          signing_secret_kid: kid,
        });
        expect(created.status, created.text).toBe(503);
        expect(created.body.error.code).toBe("service.unavailable");
        expect(created.headers.get("retry-after")).toBe("1");

        const updated = await requestWhileDown(tables, "PATCH", `/v1/routes/${routeId}`, {
          endpoint_id: endpointId,
          signing_secret_kid: kid,
        });
        expect(updated.status, updated.text).toBe(503);
        expect(updated.body.error.code).toBe("service.unavailable");
      },
    );

    test.each([
      ["creating", "endpoint_id"],
      ["creating", "signing_secret_kid"],
      ["updating", "endpoint_id"],
      ["updating", "signing_secret_kid"],
    ] as const)(
      "%s a route whose %s names nothing is still 422 routes.invalid_reference",
      async (verb, field) => {
        const [method, path] =
          verb === "creating" ? ["POST", "/v1/routes"] : ["PATCH", `/v1/routes/${routeId}`];
        const res = await app.request(method, path, {
          apiKey,
          body: { name: "x", endpoint_id: endpointId, signing_secret_kid: kid, [field]: "missing_0001" },
        });
        expect(res.status, res.text).toBe(422);
        expect(res.body.error.code).toBe("routes.invalid_reference");
        expect(res.body.error.details).toEqual([{ path: `/${field}`, message: expect.any(String) }]);
      },
    );
  });
}
