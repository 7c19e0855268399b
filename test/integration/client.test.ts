/**
 * The generated client against a running server (Bun.serve over createApi, a real socket): operator
 * bootstrap, endpoint, signing secret and route, message intake, events list and detail, typed errors.
 * The `@ts-expect-error` lines make `tsc` prove the types bite.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  createMailhookClient,
  type Event,
  type EventDetail,
  MailhookApiError,
  type MailhookClient,
  unwrap,
} from "../../clients/ts/index.ts";
import { createTestApp, TEST_SETUP_TOKEN, type TestApp } from "../support/app.ts";

describe("typed client against a running server", () => {
  let app: TestApp;
  let server: ReturnType<typeof Bun.serve>;
  let baseUrl: string;
  let mh: MailhookClient;
  let inbound = "";

  beforeAll(async () => {
    app = await createTestApp("pglite");
    server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => app.api.handle(req) });
    baseUrl = `http://127.0.0.1:${server.port}`;
    const operator = createMailhookClient({ baseUrl, setupToken: TEST_SETUP_TOKEN });
    const project = unwrap(await operator.POST("/v1/admin/projects", { body: { name: "client test" } }));
    inbound = project.inbound_address;
    mh = createMailhookClient({ baseUrl, apiKey: project.api_key.secret });
  }, 30_000);
  afterAll(async () => {
    server?.stop(true);
    await app?.close();
  });

  test("creates an endpoint, a signing secret and a route, ingests a message and lists its event", async () => {
    const endpoint = unwrap(
      await mh.POST("/v1/endpoints", { body: { url: "https://hooks.example.com/mail", timeout_s: 5 } }),
    );
    expect(endpoint.timeout_s).toBe(5);
    const secret = unwrap(await mh.POST("/v1/signing-secrets"));
    expect(secret.secret).toStartWith("whsec_");
    const route = unwrap(
      await mh.POST("/v1/routes", {
        body: {
          name: "invoices",
          endpoint_id: endpoint.id,
          signing_secret_kid: secret.kid,
          rule: { subject_contains: ["invoice"] },
        },
      }),
    );
    expect(route.enabled).toBe(true);

    const raw = `From: a@example.com\r\nTo: ${inbound}\r\nSubject: Invoice 7\r\nMessage-ID: <c1@example.com>\r\n\r\nhi\r\n`;
    const ingested = unwrap(
      await mh.POST("/v1/messages", {
        body: raw as never, // the raw RFC 5322 bytes, not JSON
        bodySerializer: (b) => b as string,
        headers: { "Content-Type": "message/rfc822" },
      }),
    );
    expect(ingested.events).toHaveLength(1);

    const list = unwrap(await mh.GET("/v1/events", { params: { query: { route_id: route.id, limit: 10 } } }));
    const first: Event | undefined = list.items[0];
    expect(first?.route_id).toBe(route.id);
    expect(["pending", "delivered", "retry", "dead", "discarded"]).toContain(first?.status as string);

    const detail: EventDetail = unwrap(
      await mh.GET("/v1/events/{event_id}", {
        params: { path: { event_id: ingested.events[0]?.id as string } },
      }),
    );
    expect(detail.message?.message_id).toBe("<c1@example.com>");
    expect(detail.routing.route_id).toBe(route.id);

    // Compile-time checks: unknown paths and wrong field types do not type-check.
    // @ts-expect-error not an operation of the API
    await mh.GET("/v1/nope").catch(() => {});
    // @ts-expect-error url is a string
    await mh.POST("/v1/endpoints", { body: { url: 42 } }).catch(() => {});
  });

  test("error answers surface as MailhookApiError with the service's code", async () => {
    const result = await mh.GET("/v1/events/{event_id}", {
      params: { path: { event_id: "00000000-0000-4000-8000-000000000000" } },
    });
    expect(result.response.status).toBe(404);
    expect(() => unwrap(result)).toThrow(MailhookApiError);
    try {
      unwrap(result);
    } catch (err) {
      expect((err as MailhookApiError).code).toBe("events.not_found");
    }
    const anonymous = createMailhookClient({ baseUrl });
    const denied = await anonymous.GET("/v1/project");
    expect(denied.error?.error.code).toBe("auth.missing_api_key");
  });
});
