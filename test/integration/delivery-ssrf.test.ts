/**
 * With ALLOW_PRIVATE_ENDPOINTS=false the worker refuses private targets at connect time: the attempt is
 * recorded with `network_error: ssrf_blocked:<ip>`, the event ends `dead` (no retry can change it) and
 * nothing reaches the (local) receiver. The endpoints are saved while the setting is on — an operator
 * who turns it off later — since the API refuses such URLs at creation when it is off
 * (endpoint-operations.test.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { attempts } from "../../services/db/schema/index.ts";
import { type RunningWorker, startWorker } from "../../services/delivery/worker.ts";
import { createTestApp, type TestApp } from "../support/app.ts";
import { testDbKinds } from "../support/db.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { seedEvents, seedRoute, waitForEvent } from "../support/seed-events.ts";

for (const kind of testDbKinds()) {
  describe(`SSRF guard in delivery (${kind})`, () => {
    let app: TestApp;
    let rx: Receiver;
    let worker: RunningWorker;
    let project: { id: string; apiKey: string };

    beforeAll(async () => {
      app = await createTestApp(kind, { env: { ALLOW_PRIVATE_ENDPOINTS: "true", RETRY_SCHEDULE: "1h" } });
      rx = await startReceiver();
      project = await app.newProject();
      worker = await startWorker(app.ctx, { concurrency: 4, pollMs: 50 });
    }, 60_000);
    afterAll(async () => {
      await worker.stop();
      await rx.close();
      await app.close();
    });

    const targets: [string, () => string, RegExp][] = [
      ["127.0.0.1", () => `http://127.0.0.1:${rx.port}/hook`, /^ssrf_blocked:127\.0\.0\.1$/],
      ["[::1]", () => `http://[::1]:${rx.port}/hook`, /^ssrf_blocked:::1$/],
      ["10.0.0.1", () => "http://10.0.0.1/hook", /^ssrf_blocked:10\.0\.0\.1$/],
      [
        "169.254.169.254",
        () => "http://169.254.169.254/latest/meta-data/",
        /^ssrf_blocked:169\.254\.169\.254$/,
      ],
      // SIIT (IPv4-translated) form of 127.0.0.1: judged by the IPv4 address it carries.
      [
        "[::ffff:0:127.0.0.1]",
        () => `http://[::ffff:0:127.0.0.1]:${rx.port}/hook`,
        /^ssrf_blocked:::ffff:0:7f00:1$/,
      ],
      [
        "localhost (a name resolving to loopback)",
        () => `http://localhost:${rx.port}/hook`,
        /^ssrf_blocked:(127\.0\.0\.1|::1)$/,
      ],
    ];
    for (const [name, url, pattern] of targets) {
      test(`${name} is refused, recorded as a network error, and the event is dead`, async () => {
        const config = app.ctx.config as { allowPrivateEndpoints: boolean };
        config.allowPrivateEndpoints = true;
        const route = await seedRoute(app, { url: url(), project });
        config.allowPrivateEndpoints = false;
        const [id] = await seedEvents(app.ctx, route);
        const event = await waitForEvent(app.ctx, id!, (e) => e.attempts >= 1);
        expect(event.status).toBe("dead");
        expect(event.attempts).toBe(1);
        expect(event.lastError).toMatch(pattern);
        const [row] = await app.ctx.database.db.select().from(attempts).where(eq(attempts.eventId, id!));
        expect(row!.httpStatus).toBe(0);
        expect(row!.responseCapture.network_error).toMatch(pattern);
        expect(rx.requests).toHaveLength(0);
      });
    }
  });
}
