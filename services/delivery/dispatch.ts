/**
 * One outbound webhook request (docs/delivery.md), with the SSRF guard applied to the dialled address.
 *
 * How the address is pinned under Bun: the hostname is resolved and checked once (ssrf.ts), then
 * `fetch` is given a URL whose host is that IP literal, the original `Host` header (RFC 9110 §7.2),
 * and — for https — `tls.serverName` = the hostname. Bun then sends SNI for the hostname and
 * verifies the certificate against it, not against the IP (tested in delivery-dispatch.test.ts).
 * Nothing re-resolves the name, so DNS rebinding cannot change where we connect.
 *
 * Connections are kept alive and reused, one pool ({@link sessionFor}) per destination as the endpoint
 * names it — scheme, hostname, port and trusted CAs — never shared between two: a TLS connection
 * verified for one hostname is never handed a request for another hostname that resolves to the same
 * address (it opens its own and verifies its own certificate). Reuse saves a TCP (and TLS) handshake
 * per attempt: opening a connection per request cost the delivery bench about 40 % more system CPU.
 * An idle connection is closed after {@link IDLE_S} s (up to about 12 s: Bun's idle timer is coarse),
 * so reuse mostly happens within a burst to one endpoint, and a receiver's own idle timeout (5 s for a
 * Node server) seldom races a request onto a connection it is closing; when one does, the attempt
 * fails as `connection_reset` and is retried like any other network failure.
 *
 * Other guarantees: POST only; redirects are returned, never followed (`redirect: "manual"`); the
 * whole attempt, DNS and body read included, is bounded by `timeoutMs`; at most
 * `responseCapBytes` of the body are read, then the connection is dropped, so a huge or endless
 * response costs the worker nothing; environment proxies are bypassed (they would dial the
 * unchecked name); `Accept-Encoding: identity` and no decompression keep the cap meaningful.
 */
import { type Lookup, resolveTarget } from "../lib/ssrf.ts";

/** Bytes of a body kept as preview in attempt captures (docs/api.md: 16 KiB). */
export const BODY_PREVIEW_BYTES = 16 * 1024;

/** Default cap on response bytes read before the connection is dropped. */
export const DEFAULT_RESPONSE_CAP_BYTES = 64 * 1024;

/** Seconds an idle kept-alive connection stays open (Bun rounds it up to its timer's 4 s steps). */
export const IDLE_S = 4;

/** Most destinations with a pool of their own; the least recently used one is closed beyond it. */
const MAX_SESSIONS = 256;

const sessions = new Map<string, Bun.FetchSession>();

/**
 * The keep-alive pool of a destination: its scheme, hostname and port as the endpoint URL gives them,
 * and the extra CAs trusted. For https the pool's connections send the hostname as SNI and verify the
 * certificate against it, so every connection in a pool is verified for that one hostname.
 */
function sessionFor(url: URL, ca: string | string[] | undefined): Bun.FetchSession {
  const key = `${url.protocol}//${url.host}${ca === undefined ? "" : `\n${[ca].flat().join("\n")}`}`;
  let session = sessions.get(key);
  if (session) {
    // most recently used last: the map's first entry is the one to close when there are too many
    sessions.delete(key);
    sessions.set(key, session);
    return session;
  }
  const serverName = url.hostname.startsWith("[") ? undefined : url.hostname;
  session = new Bun.FetchSession({
    keepAlive: { idleTimeout: IDLE_S },
    proxy: false,
    ...(url.protocol === "https:" ? { tls: { serverName, ...(ca ? { ca } : {}) } } : {}),
  });
  sessions.set(key, session);
  if (sessions.size > MAX_SESSIONS) {
    const [oldest, old] = sessions.entries().next().value as [string, Bun.FetchSession];
    sessions.delete(oldest);
    old.close(); // its idle connections; requests in flight finish
  }
  return session;
}

/** Inputs of {@link sendWebhook}. */
export interface SendWebhookInput {
  /** Endpoint URL, `http:` or `https:`. */
  url: string;
  /** Request headers as sent (signatures, content type, custom headers); `Host` is set here. */
  headers: Readonly<Record<string, string>>;
  /** The exact body bytes (strings are sent as UTF-8; a Blob, such as a file, is streamed). */
  body: string | Uint8Array | Blob;
  /** Bound of the whole attempt in ms (the endpoint's `timeout_s` × 1000). */
  timeoutMs: number;
  /** `ALLOW_PRIVATE_ENDPOINTS`: skip the SSRF address check. */
  allowPrivate: boolean;
  /** Response bytes read before dropping the connection. Default 64 KiB. */
  responseCapBytes?: number;
  /** DNS resolver; defaults to the system resolver. */
  lookup?: Lookup;
  /** Extra trusted CA certificates (PEM), e.g. a private PKI or a test's self-signed cert. */
  ca?: string | string[];
  /** Monotonic clock in ms for latency; defaults to `performance.now`. */
  clock?: () => number;
}

/** What one attempt produced; `status` 0 and a `networkError` when no response arrived. */
export interface DispatchResult {
  status: number;
  /** Response headers, lowercase names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** First 16 KiB of the response body, decoded as UTF-8 (invalid bytes replaced). */
  bodyPreview: string;
  /** True when the body was longer than the read cap and the connection was dropped. */
  bodyTruncated: boolean;
  latencyMs: number;
  /** `timeout after N ms`, `ssrf_blocked:<ip>`, `dns_error: …`, `connection_refused: …`, etc. */
  networkError: string | null;
  /** The IP that was (or would have been) dialled, when resolution succeeded. */
  connectedAddress?: string;
}

/**
 * Sends one webhook attempt. Never throws for network conditions: every failure is a result with
 * `networkError`, so the caller records it as an attempt.
 */
export async function sendWebhook(input: SendWebhookInput): Promise<DispatchResult> {
  const clock = input.clock ?? (() => performance.now());
  const started = clock();
  const controller = new AbortController();
  const timeoutError = `timeout after ${input.timeoutMs} ms`;
  const partial: Partial<DispatchResult> = {};
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve("timeout");
    }, input.timeoutMs);
  });
  try {
    // The race bounds steps that cannot be aborted (DNS) as well as those that can.
    const outcome = await Promise.race([attempt(input, controller.signal, partial), timedOut]);
    if (outcome === "timeout") {
      return finish(partial, started, clock, timeoutError);
    }
    return { ...outcome, latencyMs: Math.round(clock() - started) };
  } finally {
    clearTimeout(timer);
    controller.abort(); // drops the connection if the body was not read to its end
  }
}

async function attempt(
  input: SendWebhookInput,
  signal: AbortSignal,
  partial: Partial<DispatchResult>,
): Promise<Omit<DispatchResult, "latencyMs">> {
  const empty = { status: 0, headers: {}, bodyPreview: "", bodyTruncated: false };
  let url: URL;
  try {
    url = new URL(input.url);
  } catch {
    return { ...empty, networkError: "invalid_url: not a URL" };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return { ...empty, networkError: `invalid_url: unsupported scheme ${url.protocol}` };
  }
  if (url.username !== "" || url.password !== "") {
    return { ...empty, networkError: "invalid_url: credentials in the URL are not supported" };
  }

  const resolved = await resolveTarget(url.hostname, {
    allowPrivate: input.allowPrivate,
    lookup: input.lookup,
  });
  if (!resolved.ok) return { ...empty, networkError: resolved.networkError };
  const ip = resolved.address.address;
  partial.connectedAddress = ip;

  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  const hostLiteral = resolved.address.family === 6 ? `[${ip}]` : ip;
  const pinned = `${url.protocol}//${hostLiteral}:${port}${url.pathname}${url.search}`;
  let headers: Headers;
  try {
    headers = new Headers(input.headers);
  } catch (error) {
    // e.g. a custom header value with CR/LF: recorded as a failed attempt rather than thrown.
    return {
      ...empty,
      networkError: `invalid_header: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  headers.set("host", url.host);
  if (!headers.has("accept-encoding")) headers.set("accept-encoding", "identity");

  let response: Response;
  try {
    response = await fetch(pinned, {
      method: "POST",
      headers,
      body: requestBody(input.body),
      redirect: "manual",
      signal,
      proxy: false,
      decompress: false,
      // the pool of this destination; its TLS settings (SNI, CAs) are the session's
      session: sessionFor(url, input.ca),
    });
  } catch (error) {
    return { ...empty, connectedAddress: ip, networkError: describeError(error) };
  }

  partial.status = response.status;
  partial.headers = headerRecord(response.headers);
  const read = await readCapped(response, input.responseCapBytes ?? DEFAULT_RESPONSE_CAP_BYTES, partial);
  return {
    status: response.status,
    headers: partial.headers,
    bodyPreview: preview(read.bytes),
    bodyTruncated: read.truncated,
    networkError: read.error,
    connectedAddress: ip,
  };
}

async function readCapped(
  response: Response,
  cap: number,
  partial: Partial<DispatchResult>,
): Promise<{ bytes: Uint8Array; truncated: boolean; error: string | null }> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  const collected = () => {
    const bytes = concat(chunks, Math.min(total, cap));
    partial.bodyPreview = preview(bytes);
    return bytes;
  };
  if (!response.body) return { bytes: new Uint8Array(), truncated: false, error: null };
  const reader = response.body.getReader();
  try {
    // `<=` so a body of exactly `cap` bytes is read to its end and not reported as truncated.
    while (total <= cap) {
      const { done, value } = await reader.read();
      if (done) return { bytes: collected(), truncated: false, error: null };
      chunks.push(value);
      total += value.byteLength;
      collected();
    }
    // Over the cap: stop here; the caller's abort closes the connection.
    reader.cancel().catch(() => {});
    return { bytes: collected(), truncated: true, error: null };
  } catch (error) {
    return { bytes: collected(), truncated: false, error: `body_read_error: ${describeError(error)}` };
  }
}

function finish(
  partial: Partial<DispatchResult>,
  started: number,
  clock: () => number,
  networkError: string,
): DispatchResult {
  return {
    status: partial.status ?? 0,
    headers: partial.headers ?? {},
    bodyPreview: partial.bodyPreview ?? "",
    bodyTruncated: false,
    latencyMs: Math.round(clock() - started),
    networkError,
    ...(partial.connectedAddress ? { connectedAddress: partial.connectedAddress } : {}),
  };
}

function headerRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    out[name] = value; // Headers already joins repeats with ", " (set-cookie aside, which is fine here)
  });
  return out;
}

function concat(chunks: readonly Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let offset = 0;
  for (const c of chunks) {
    if (offset >= length) break;
    const part = c.subarray(0, length - offset);
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

function preview(bytes: Uint8Array): string {
  // `stream: true` drops a character cut by the cap rather than emitting U+FFFD for it.
  return new TextDecoder("utf-8").decode(bytes.subarray(0, BODY_PREVIEW_BYTES), { stream: true });
}

const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;

function describeError(error: unknown): string {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  const c = typeof code === "string" ? code : undefined;
  if (c === "ECONNREFUSED" || c === "ConnectionRefused") return `connection_refused: ${c}`;
  if (c === "ECONNRESET" || c === "ConnectionClosed") return `connection_reset: ${c}`;
  if (c && TLS_CODE.test(c)) return `tls_error: ${c}`;
  const message = error instanceof Error ? error.message.split(". For more information")[0] : String(error);
  return `network_error: ${c ?? message}`;
}

/**
 * The body as fetch takes it: a view that spans a whole ArrayBuffer of its own is sent as it is; any
 * other view (of a shared or pooled buffer) is copied, so fetch gets an ArrayBuffer-backed view whatever
 * the caller's buffer is. A Blob (a file of the blob store) is passed on: fetch streams it.
 */
function requestBody(body: string | Uint8Array | Blob): string | Uint8Array<ArrayBuffer> | Blob {
  if (typeof body === "string" || body instanceof Blob) return body;
  const { buffer } = body;
  const whole = body.byteOffset === 0 && body.byteLength === buffer.byteLength;
  return whole && buffer instanceof ArrayBuffer ? new Uint8Array(buffer) : new Uint8Array(body);
}
