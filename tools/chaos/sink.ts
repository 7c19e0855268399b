/**
 * The recording webhook receiver of the chaos suites. Every request is logged with its
 * `X-Idempotency-Key`, `webhook-id`, the event id of the generic@1 body, when it arrived and when its
 * response ended (or its connection closed), and how it was answered. How to answer is decided per
 * request by a function of the key and how many requests for that key came before, so a suite can
 * fail each event a bounded number of times. Plain `node:http`, because a connection reset needs the
 * raw socket.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** How to answer one request. */
export type Answer =
  | { kind: "ok"; delayMs?: number }
  | { kind: "status"; status: number; headers?: Record<string, string> }
  /** answer 200 only after `delayMs`, past the endpoint's timeout: the service gives up first */
  | { kind: "slow"; delayMs: number }
  /** destroy the connection without a response */
  | { kind: "reset" };

/** One request as the receiver saw it. */
export interface Delivery {
  key: string;
  webhookId: string;
  /** `event.id` of the generic@1 body; null when the body is not one */
  eventId: string | null;
  answer: Answer;
  /** `Date.now()` when the request head arrived */
  start: number;
  /** `Date.now()` when the response ended or the connection closed; null while open */
  end: number | null;
}

/** Decides the answer for a request; `seen` counts earlier requests with the same key. */
export type Decide = (key: string, seen: number) => Answer;

/** A running recording receiver. */
export interface Sink {
  url: string;
  /** every request, in arrival order */
  deliveries: Delivery[];
  /** per key: when the first 2xx response was written */
  firstOk: Map<string, number>;
  /** keys answered 2xx at least once */
  okCount(): number;
  close(): Promise<void>;
}

/** Starts a sink on 127.0.0.1 and an ephemeral port; by default every request gets 200. */
export async function startSink(decide: Decide = () => ({ kind: "ok" })): Promise<Sink> {
  const deliveries: Delivery[] = [];
  const seen = new Map<string, number>();
  const firstOk = new Map<string, number>();
  const sockets = new Set<Socket>();

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const start = Date.now();
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const key = String(req.headers["x-idempotency-key"] ?? "");
      const n = seen.get(key) ?? 0;
      seen.set(key, n + 1);
      const answer = decide(key, n);
      const d: Delivery = {
        key,
        webhookId: String(req.headers["webhook-id"] ?? ""),
        eventId: eventIdOf(Buffer.concat(chunks).toString("utf8")),
        answer,
        start,
        end: null,
      };
      deliveries.push(d);
      let timer: ReturnType<typeof setTimeout> | undefined;
      res.on("close", () => {
        clearTimeout(timer);
        d.end ??= Date.now();
      });
      const ok = () => {
        res.end("ok", () => {
          if (!firstOk.has(key)) firstOk.set(key, Date.now());
        });
      };
      switch (answer.kind) {
        case "ok":
          if (answer.delayMs) timer = setTimeout(ok, answer.delayMs);
          else ok();
          break;
        case "slow":
          // A receiver that did the work but answered too late: the service has given up by then.
          timer = setTimeout(() => res.end("late"), answer.delayMs);
          break;
        case "status":
          res.writeHead(answer.status, answer.headers ?? {});
          res.end(`chaos ${answer.status}`);
          break;
        case "reset":
          req.socket.destroy();
          break;
      }
    });
  });
  server.keepAliveTimeout = 5000;
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    firstOk,
    okCount: () => firstOk.size,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

function eventIdOf(body: string): string | null {
  try {
    const id = (JSON.parse(body) as { event?: { id?: unknown } }).event?.id;
    return typeof id === "string" ? id : null;
  } catch {
    return null;
  }
}

/**
 * The receiver-side invariants: `webhook-id` equals `X-Idempotency-Key`, and a key seen several
 * times was always for the same event (keys map 1:1 to events). Returns one line per violation.
 */
export function keyViolations(deliveries: Delivery[]): string[] {
  const out: string[] = [];
  const eventOfKey = new Map<string, string | null>();
  const keyOfEvent = new Map<string, string>();
  for (const d of deliveries) {
    if (d.webhookId !== d.key) out.push(`webhook-id ${d.webhookId} != X-Idempotency-Key ${d.key}`);
    const prev = eventOfKey.get(d.key);
    if (prev !== undefined && prev !== d.eventId)
      out.push(`key ${d.key} seen for events ${prev} and ${d.eventId}`);
    eventOfKey.set(d.key, d.eventId);
    if (d.eventId) {
      const k = keyOfEvent.get(d.eventId);
      if (k !== undefined && k !== d.key) out.push(`event ${d.eventId} seen with keys ${k} and ${d.key}`);
      keyOfEvent.set(d.eventId, d.key);
    }
  }
  return out;
}

/** Counts 2xx deliveries beyond the first per key (at-least-once duplicates). */
export function duplicateCount(deliveries: Delivery[]): number {
  const ok = new Map<string, number>();
  for (const d of deliveries) if (d.answer.kind === "ok") ok.set(d.key, (ok.get(d.key) ?? 0) + 1);
  let dup = 0;
  for (const n of ok.values()) dup += n - 1;
  return dup;
}
