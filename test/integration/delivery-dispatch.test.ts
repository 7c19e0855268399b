import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { type DispatchResult, type SendWebhookInput, sendWebhook } from "../../services/delivery/dispatch.ts";
import { idempotencyKey, signatureHeaders, verifyServiceSignature } from "../../services/lib/signing.ts";
import type { Lookup } from "../../services/lib/ssrf.ts";
import { eventually } from "../support/eventually.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

// Self-signed test-only certificate for "hooks.test" (P-256, valid until 2126). Not a secret.
const CERT = `-----BEGIN CERTIFICATE-----
MIIBmDCCAT6gAwIBAgIUN4lOY0zHT5SBEsS59hSQMVPKePMwCgYIKoZIzj0EAwIw
FTETMBEGA1UEAwwKaG9va3MudGVzdDAgFw0yNjExMjEyMzIzNDdaGA8yMTI2MTAy
ODIzMjM0N1owFTETMBEGA1UEAwwKaG9va3MudGVzdDBZMBMGByqGSM49AgEGCCqG
SM49AwEHA0IABPm7gpMjZhGLGMyQ8V66nD433WQTqtv8mvvIBJUCNSCeqb7r8iMd
hOtz7eb3P7j5CNTsSyJb2oa5B5xMdWRrVGWjajBoMB0GA1UdDgQWBBSZ7z0QfdzY
KXBR71dh9VtNUjY+qjAfBgNVHSMEGDAWgBSZ7z0QfdzYKXBR71dh9VtNUjY+qjAP
BgNVHRMBAf8EBTADAQH/MBUGA1UdEQQOMAyCCmhvb2tzLnRlc3QwCgYIKoZIzj0E
AwIDSAAwRQIhAM/brYbJMn37OK8dscKaqDVVafnjVrBtPygowBo0DqHlAiBIimYW
hBUx7pH4/KWK6mMYXZ17a9I+b/0D/NqVj5MzPw==
-----END CERTIFICATE-----`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgO6WL+WjB8dnX/Wk1
S5WcrnoZc9LCz2hMBlCsg/XDmXWhRANCAAT5u4KTI2YRixjMkPFeupw+N91kE6rb
/Jr7yASVAjUgnqm+6/IjHYTrc+3m9z+4+QjU7EsiW9qGuQecTHVka1Rl
-----END PRIVATE KEY-----`;

const SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const BODY = '{"message":{"message_id":"<m1@example.com>"},"body":{"attachments":[]}}';

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(() => rx.close());
afterEach(() => {
  rx.clear();
  rx.setBehaviour({});
});

/** A resolver that answers from a table and counts its calls, standing in for DNS. */
function fakeDns(answers: Record<string, string>): Lookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (host: string) => {
    calls.push(host);
    const address = answers[host];
    if (!address) throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
    return [{ address, family: address.includes(":") ? (6 as const) : (4 as const) }];
  };
  return Object.assign(lookup, { calls });
}

function send(overrides: Partial<SendWebhookInput> & { url: string }): Promise<DispatchResult> {
  return sendWebhook({
    headers: { "content-type": "application/json" },
    body: BODY,
    timeoutMs: 3000,
    allowPrivate: true,
    ...overrides,
  });
}

describe("sendWebhook against the local receiver", () => {
  test("POSTs the exact body and headers, and the receiver can verify the signature", async () => {
    rx.setBehaviour({ status: 202, headers: { "x-receipt": "r1" }, body: "accepted" });
    const key = idempotencyKey("<m1@example.com>", "rte_1");
    const sig = signatureHeaders({
      secret: SECRET,
      kid: "k1",
      body: BODY,
      timestampSec: 1_800_000_000,
      idempotencyKey: key,
    });
    const result = await send({
      url: `${rx.url}/hooks/in?src=test`,
      headers: { "content-type": "application/json", "X-Idempotency-Key": key, ...sig },
    });

    expect(result).toMatchObject({
      status: 202,
      bodyPreview: "accepted",
      networkError: null,
      connectedAddress: "127.0.0.1",
    });
    expect(result.headers["x-receipt"]).toBe("r1");
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    const [req] = await rx.waitForRequests(1);
    expect(req).toMatchObject({ method: "POST", path: "/hooks/in?src=test", text: BODY });
    expect(req!.headers["x-idempotency-key"]).toBe(key);
    const verdict = verifyServiceSignature({
      header: req!.headers["x-service-signature"]!,
      secrets: { k1: SECRET },
      body: req!.body,
      nowSec: 1_800_000_000,
    });
    expect(verdict.ok).toBe(true);
  });

  test("sends raw body bytes unchanged", async () => {
    const raw = new Uint8Array([0x7b, 0xc3, 0xa9, 0xff, 0x7d]);
    await send({ url: rx.url, body: raw });
    const [req] = await rx.waitForRequests(1);
    expect(Array.from(req!.body)).toEqual(Array.from(raw));
  });

  test("dials the resolved address once and keeps the hostname in Host (no re-resolution)", async () => {
    const dns = fakeDns({ "hooks.test": "127.0.0.1" });
    const result = await send({ url: `http://hooks.test:${rx.port}/x`, lookup: dns });
    expect(result.status).toBe(200);
    expect(dns.calls).toEqual(["hooks.test"]); // the system resolver never saw the name
    const [req] = await rx.waitForRequests(1);
    expect(req!.headers.host).toBe(`hooks.test:${rx.port}`);
  });

  test("returns a 3xx as-is without following it", async () => {
    rx.setBehaviour({ status: 302, headers: { location: `${rx.url}/elsewhere` } });
    const result = await send({ url: `${rx.url}/start` });
    expect(result.status).toBe(302);
    expect(result.headers.location).toBe(`${rx.url}/elsewhere`);
    expect(rx.requests.map((r) => r.path)).toEqual(["/start"]);
  });

  test("bounds the whole attempt by timeoutMs", async () => {
    rx.setBehaviour({ delayMs: 10_000 });
    const result = await send({ url: rx.url, timeoutMs: 300 });
    expect(result).toMatchObject({ status: 0, networkError: "timeout after 300 ms" });
    expect(result.latencyMs).toBeGreaterThanOrEqual(290);
    expect(result.latencyMs).toBeLessThan(2000);
  });

  test("the timeout also bounds a DNS lookup that never answers", async () => {
    const hang: Lookup = () => new Promise(() => {});
    const result = await send({ url: "http://slow-dns.test/", timeoutMs: 200, lookup: hang });
    expect(result).toMatchObject({ status: 0, networkError: "timeout after 200 ms" });
  });

  test("reports a connection reset as a network error with status 0", async () => {
    rx.setBehaviour({ reset: true });
    const result = await send({ url: rx.url });
    expect(result.status).toBe(0);
    expect(result.networkError).toMatch(/^connection_reset: /);
  });

  test("reports a refused connection", async () => {
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close();
    const result = await send({ url });
    expect(result.networkError).toMatch(/^connection_refused: /);
  });

  test("reads at most the cap of a huge body, previews 16 KiB and drops the connection", async () => {
    rx.setBehaviour({ bodySize: 200 * 1024 * 1024 });
    const result = await send({ url: rx.url });
    expect(result).toMatchObject({ status: 200, bodyTruncated: true, networkError: null });
    expect(result.bodyPreview).toBe("x".repeat(16 * 1024));
    await eventually("the receiver to see the connection close", () => rx.requests[0]?.closedAt, 3000);
    expect(rx.requests[0]!.bytesSent).toBeLessThan(200 * 1024 * 1024);
  });

  test("an endless chunked body is cut at the cap and the connection closed", async () => {
    rx.setBehaviour({ endless: true });
    const result = await send({ url: rx.url, responseCapBytes: 1024 });
    expect(result).toMatchObject({ status: 200, bodyTruncated: true, networkError: null });
    expect(result.bodyPreview).toBe("x".repeat(1024));
    await eventually("the receiver to see the connection close", () => rx.requests[0]?.closedAt, 3000);
  });

  test("a small body is read whole", async () => {
    rx.setBehaviour({ body: "y".repeat(1000) });
    const result = await send({ url: rx.url });
    expect(result).toMatchObject({ bodyPreview: "y".repeat(1000), bodyTruncated: false });
  });

  test("an invalid header value becomes a recorded failure, not an exception", async () => {
    const result = await send({ url: rx.url, headers: { "x-bad": "a\r\nInjected: 1" } });
    expect(result.networkError).toMatch(/^invalid_header: /);
    expect(rx.requests).toHaveLength(0);
  });

  test("rejects non-http schemes without connecting", async () => {
    expect((await send({ url: "file:///etc/passwd" })).networkError).toBe(
      "invalid_url: unsupported scheme file:",
    );
    expect((await send({ url: "nonsense" })).networkError).toBe("invalid_url: not a URL");
  });
});

describe("SSRF guard with allowPrivate false", () => {
  test.each([
    ["loopback IPv4 (the live receiver)", () => rx.url, "127.0.0.1"],
    ["loopback IPv6", () => `http://[::1]:${rx.port}/`, "::1"],
    ["private 10/8", () => "http://10.0.0.1/hook", "10.0.0.1"],
    ["cloud metadata", () => "http://169.254.169.254/latest/meta-data/", "169.254.169.254"],
    ["IPv4-mapped loopback", () => `http://[::ffff:127.0.0.1]:${rx.port}/`, "::ffff:7f00:1"],
    ["integer-encoded loopback", () => `http://2130706433:${rx.port}/`, "127.0.0.1"],
  ])("refuses %s before connecting", async (_name, url, address) => {
    const result = await send({ url: url(), allowPrivate: false });
    expect(result).toMatchObject({ status: 0, networkError: `ssrf_blocked:${address}` });
    expect(result.connectedAddress).toBeUndefined();
    expect(rx.requests).toHaveLength(0);
  });

  test("refuses a name that resolves to loopback (checked after DNS, on the dialled address)", async () => {
    const dns = fakeDns({ "rebind.test": "127.0.0.1" });
    const result = await send({ url: `http://rebind.test:${rx.port}/`, allowPrivate: false, lookup: dns });
    expect(result.networkError).toBe("ssrf_blocked:127.0.0.1");
    expect(rx.requests).toHaveLength(0);
  });

  test("refuses localhost through the system resolver", async () => {
    const result = await send({ url: `http://localhost:${rx.port}/`, allowPrivate: false });
    expect(result.networkError).toMatch(/^ssrf_blocked:(127\.0\.0\.1|::1)$/);
  });

  test("allowPrivate true reaches the local receiver", async () => {
    const result = await send({ url: rx.url, allowPrivate: true });
    expect(result.status).toBe(200);
    expect(rx.requests).toHaveLength(1);
  });
});

describe("https to a pinned address", () => {
  let server: ReturnType<typeof Bun.serve>;
  const seen: string[] = [];
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      tls: { cert: CERT, key: KEY },
      fetch(req) {
        seen.push(req.headers.get("host") ?? "");
        return new Response("tls ok");
      },
    });
  });
  afterAll(() => server.stop(true));

  test("sends SNI and verifies the certificate against the hostname, not the IP", async () => {
    const dns = fakeDns({ "hooks.test": "127.0.0.1" });
    const result = await send({ url: `https://hooks.test:${server.port}/in`, lookup: dns, ca: CERT });
    expect(result).toMatchObject({ status: 200, bodyPreview: "tls ok", connectedAddress: "127.0.0.1" });
    expect(seen).toContain(`hooks.test:${server.port}`);
  });

  test("fails when the certificate does not name the hostname", async () => {
    const dns = fakeDns({ "other.test": "127.0.0.1" });
    const result = await send({ url: `https://other.test:${server.port}/in`, lookup: dns, ca: CERT });
    expect(result.status).toBe(0);
    expect(result.networkError).toMatch(/^tls_error: /);
  });

  test("fails when the certificate is not trusted", async () => {
    const dns = fakeDns({ "hooks.test": "127.0.0.1" });
    const result = await send({ url: `https://hooks.test:${server.port}/in`, lookup: dns });
    expect(result.networkError).toMatch(/^tls_error: /);
  });

  test("a kept-alive connection verified for one hostname never carries a request for another", async () => {
    const dns = fakeDns({ "hooks.test": "127.0.0.1", "other.test": "127.0.0.1" });
    const good = { url: `https://hooks.test:${server.port}/in`, lookup: dns, ca: CERT };
    expect((await send(good)).status).toBe(200);
    // Same address and port, and a connection for hooks.test is idle in its pool: other.test still
    // gets its own handshake, and its certificate check fails.
    const other = await send({ url: `https://other.test:${server.port}/in`, lookup: dns, ca: CERT });
    expect(other.networkError).toMatch(/^tls_error: /);
    expect((await send(good)).status).toBe(200);
  });
});

describe("kept-alive connections", () => {
  let server: ReturnType<typeof Bun.serve>;
  const ports: number[] = [];
  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req, srv) {
        await req.arrayBuffer();
        ports.push(srv.requestIP(req)?.port ?? 0);
        return new Response("ok");
      },
    });
  });
  afterAll(() => server.stop(true));

  test("requests to one destination reuse a connection", async () => {
    for (let i = 0; i < 5; i++)
      expect((await send({ url: `http://127.0.0.1:${server.port}/in` })).status).toBe(200);
    expect(ports).toHaveLength(5);
    expect(new Set(ports).size).toBe(1);
  });
});
