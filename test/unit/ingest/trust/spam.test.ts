// The rspamd client (services/ingest/trust/spam.ts) against HTTP servers on loopback that stand in for
// a broken or slow rspamd: it never throws, gives null, and counts why. The real rspamd is in
// test/integration/spam-rspamd.test.ts.
import { afterAll, describe, expect, test } from "bun:test";
import { scanForSpam, spamOf } from "../../../../services/ingest/trust/spam.ts";
import { metrics } from "../../../../services/lib/metrics.ts";

const seen: { headers: Headers; body: string }[] = [];
let answer: () => Response | Promise<Response> = () =>
  Response.json({ score: 1.5, action: "no action", symbols: {} });
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    seen.push({ headers: req.headers, body: await req.text() });
    return answer();
  },
});
afterAll(() => server.stop(true));
const url = `http://127.0.0.1:${server.port}`;

describe("scanForSpam", () => {
  test("POSTs the message to /checkv2 with the envelope headers rspamd reads", async () => {
    answer = () =>
      Response.json({ score: 6.299999, required_score: 15, action: "add header", symbols: { B: {}, A: {} } });
    const verdict = await scanForSpam(url, new TextEncoder().encode("Subject: x\r\n\r\nhi\r\n"), {
      ip: "192.0.2.1",
      helo: "mail.good.test",
      mailFrom: "a@good.test",
      rcptTo: ["x@in.test", "y@in.test"],
      hostname: "in.test",
    });
    expect(verdict).toEqual({ score: 6.3, action: "add header", symbols: ["A", "B"] });
    const req = seen.at(-1)!;
    expect(req.body).toBe("Subject: x\r\n\r\nhi\r\n");
    expect(req.headers.get("ip")).toBe("192.0.2.1");
    expect(req.headers.get("helo")).toBe("mail.good.test");
    expect(req.headers.get("from")).toBe("a@good.test");
    expect(req.headers.get("rcpt")).toBe("x@in.test, y@in.test");
    expect(req.headers.get("hostname")).toBe("in.test");
  });

  test("a slow scanner: null after the timeout, counted as timeout", async () => {
    answer = () => new Promise(() => {});
    const before = metrics.spamCheckFailures.get({ reason: "timeout" });
    expect(await scanForSpam(url, new Uint8Array([120]), {}, 200)).toBeNull();
    expect(metrics.spamCheckFailures.get({ reason: "timeout" }) - before).toBe(1);
  });

  test("an error status or an answer without score and action: null, counted as bad_response", async () => {
    const before = metrics.spamCheckFailures.get({ reason: "bad_response" });
    answer = () => new Response("oops", { status: 500 });
    expect(await scanForSpam(url, new Uint8Array([120]), {})).toBeNull();
    answer = () => Response.json({ error: "no" });
    expect(await scanForSpam(url, new Uint8Array([120]), {})).toBeNull();
    expect(metrics.spamCheckFailures.get({ reason: "bad_response" }) - before).toBe(2);
  });

  test("nothing listening: null, counted as unavailable", async () => {
    const closed = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const port = closed.port;
    await closed.stop(true);
    const before = metrics.spamCheckFailures.get({ reason: "unavailable" });
    expect(await scanForSpam(`http://127.0.0.1:${port}`, new Uint8Array([120]), {})).toBeNull();
    expect(metrics.spamCheckFailures.get({ reason: "unavailable" }) - before).toBe(1);
  });
});

describe("spamOf", () => {
  test.each([
    [
      { score: 0, action: "no action" },
      { score: 0, action: "no action", symbols: [] },
    ],
    [
      { score: -1.234, action: "no action", symbols: { X: {} } },
      { score: -1.23, action: "no action", symbols: ["X"] },
    ],
    [{ score: "5", action: "reject" }, null],
    [{ score: 5 }, null],
    [{ score: Number.NaN, action: "reject" }, null],
  ])("%p → %p", (input, expected) => {
    expect(spamOf(input)).toEqual(expected);
  });
});
