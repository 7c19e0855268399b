/**
 * A local webhook receiver for tests: listens on an ephemeral port, records every request (headers,
 * raw body bytes, arrival time) and answers as the test tells it — status, headers, latency, body
 * size, an endless chunked body, or a dropped connection. Modelled on svix's test receiver whose
 * status the test flips.
 *
 * ```ts
 * const rx = await startReceiver();
 * rx.setBehaviour({ status: 503, headers: { "retry-after": "1" } }); // every request from now on
 * rx.enqueue({ status: 500 }, { reset: true });                       // the next two, then the default
 * rx.setBehaviour((req) => ({ status: req.index < 2 ? 500 : 200 }));   // decided per request
 * const [first] = await rx.waitForRequests(1);
 * await rx.close();
 * ```
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** How the receiver answers one request. Every field is optional; `{}` is a plain 200 "ok". */
export interface ReceiverBehaviour {
  /** Status code; default 200. */
  status?: number;
  /** Response headers, e.g. `{ "retry-after": "30" }` or `{ location: "…" }`. */
  headers?: Record<string, string>;
  /** Response body; default "ok". */
  body?: string | Uint8Array;
  /** Instead of `body`, this many filler bytes ("x"), sent chunked. */
  bodySize?: number;
  /** Send a chunked body that never ends, until the client goes away. */
  endless?: boolean;
  /** Wait this long before answering (or before resetting). */
  delayMs?: number;
  /** Destroy the connection without a response (client sees a reset / closed socket). */
  reset?: boolean;
  /** Send status, headers and this many body bytes, then destroy the connection. */
  resetAfterBytes?: number;
}

/** Decides the behaviour for one request; sees the request as recorded (body included). */
export type BehaviourFn = (request: ReceivedRequest) => ReceiverBehaviour;

/** One recorded request. */
export interface ReceivedRequest {
  /** 0-based arrival order. */
  index: number;
  method: string;
  /** Path and query as received. */
  path: string;
  /** Lowercase names; repeats joined with ", ". */
  headers: Record<string, string>;
  /** Raw `[name, value, name, value, …]` as received, original spelling. */
  rawHeaders: string[];
  /** Raw body bytes as received. */
  body: Uint8Array;
  /** The body decoded as UTF-8. */
  text: string;
  /** `Date.now()` when the request head arrived. */
  receivedAt: number;
  /** Body bytes written back to the client so far. */
  bytesSent: number;
  /** `Date.now()` when the response ended or the connection closed; unset while still open. */
  closedAt?: number;
}

/** A running receiver. */
export interface Receiver {
  /** Base URL, e.g. `http://127.0.0.1:41234`; any path is accepted. */
  url: string;
  port: number;
  /** Every request so far, in arrival order (live array). */
  requests: ReceivedRequest[];
  /** Sets the default behaviour (a spec or a function of the request). */
  setBehaviour(behaviour: ReceiverBehaviour | BehaviourFn): void;
  /** Queues one-shot behaviours, used by the next requests in order before the default. */
  enqueue(...behaviours: ReceiverBehaviour[]): void;
  /** Resolves once at least `count` requests arrived; rejects after `timeoutMs` (default 5000). */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Forgets recorded requests and queued behaviours; the default behaviour stays. */
  clear(): void;
  /** Stops listening and destroys open connections (endless bodies included). */
  close(): Promise<void>;
}

const FILLER = new Uint8Array(16 * 1024).fill(0x78);

/** Starts a receiver on 127.0.0.1 (or `host`) and an ephemeral port. */
export async function startReceiver(
  options: { behaviour?: ReceiverBehaviour | BehaviourFn; host?: string } = {},
): Promise<Receiver> {
  let fallback: ReceiverBehaviour | BehaviourFn = options.behaviour ?? {};
  let queue: ReceiverBehaviour[] = [];
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  let arrivals = 0;

  const server = createServer((req, res) => {
    const record: ReceivedRequest = {
      index: arrivals++,
      method: req.method ?? "",
      path: req.url ?? "/",
      headers: joinHeaders(req),
      rawHeaders: req.rawHeaders,
      body: new Uint8Array(),
      text: "",
      receivedAt: Date.now(),
      bytesSent: 0,
    };
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      record.body = new Uint8Array(Buffer.concat(chunks));
      record.text = new TextDecoder().decode(record.body);
      requests.push(record);
      const next = queue.shift() ?? (typeof fallback === "function" ? fallback(record) : fallback);
      respond(req, res, record, next);
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, options.host ?? "127.0.0.1", () => resolve());
  });
  const { port, address, family } = server.address() as AddressInfo;
  const hostPart = family === "IPv6" || address.includes(":") ? `[${address}]` : address;

  return {
    url: `http://${hostPart}:${port}`,
    port,
    requests,
    setBehaviour(behaviour) {
      fallback = behaviour;
    },
    enqueue(...behaviours) {
      queue.push(...behaviours);
    },
    async waitForRequests(count, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        if (Date.now() > deadline) {
          throw new Error(
            `receiver: expected ${count} requests within ${timeoutMs} ms, got ${requests.length}`,
          );
        }
        await new Promise((r) => setTimeout(r, 5));
      }
      return requests.slice();
    },
    clear() {
      requests.length = 0;
      queue = [];
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function respond(
  req: IncomingMessage,
  res: ServerResponse,
  record: ReceivedRequest,
  behaviour: ReceiverBehaviour,
): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  res.on("close", () => {
    clearTimeout(timer);
    record.closedAt = Date.now();
  });
  const act = () => {
    if (behaviour.reset) {
      req.socket.destroy();
      return;
    }
    const streamed =
      behaviour.endless || behaviour.bodySize !== undefined || behaviour.resetAfterBytes !== undefined;
    res.writeHead(behaviour.status ?? 200, behaviour.headers ?? {});
    if (!streamed) {
      const body = behaviour.body ?? "ok";
      record.bytesSent = typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
      res.end(body);
      return;
    }
    if (behaviour.resetAfterBytes !== undefined) {
      const n = behaviour.resetAfterBytes;
      res.write(FILLER.subarray(0, Math.min(n, FILLER.length)), () => req.socket.destroy());
      record.bytesSent = Math.min(n, FILLER.length);
      return;
    }
    pump(res, record, behaviour.endless ? Number.POSITIVE_INFINITY : (behaviour.bodySize ?? 0));
  };
  if (behaviour.delayMs) timer = setTimeout(act, behaviour.delayMs);
  else act();
}

/** Writes filler until `remaining` bytes are sent or the client goes away, honouring backpressure. */
function pump(res: ServerResponse, record: ReceivedRequest, total: number): void {
  const write = () => {
    while (!res.destroyed && record.bytesSent < total) {
      const chunk = FILLER.subarray(0, Math.min(FILLER.length, total - record.bytesSent));
      record.bytesSent += chunk.byteLength;
      if (!res.write(chunk)) return; // resume on "drain"
    }
    if (!res.destroyed) res.end();
  };
  res.on("drain", write);
  write();
}

function joinHeaders(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = (req.rawHeaders[i] ?? "").toLowerCase();
    const value = req.rawHeaders[i + 1] ?? "";
    out[name] = name in out ? `${out[name]}, ${value}` : value;
  }
  return out;
}
