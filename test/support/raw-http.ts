/**
 * HTTP/1.1 over a raw socket, for tests of what a listener does with a body while it is still arriving:
 * a declared `Content-Length` or `Transfer-Encoding: chunked`, a body sent with backpressure, and the
 * answer read as soon as it comes — sending stops then, so an endless body shows whether the server
 * cut it off. (`fetch` buffers or waits for its own upload, so it cannot show either.)
 */
import { connect, type Socket } from "node:net";

/** What came back, and how much of the body had been written when it did. */
export interface RawResponse {
  /** 0 when the connection closed without a status line */
  status: number;
  headers: Record<string, string>;
  /** the response body as text */
  text: string;
  /** body bytes written to the socket before the answer arrived */
  sent: number;
}

/** How the body is framed and what it is. */
export interface RawBody {
  /** the body in parts (sending stops once an answer arrives) */
  chunks: Iterable<Uint8Array>;
  /** chunked framing; otherwise `contentLength` is declared */
  chunked?: boolean;
  /** the declared length when not chunked */
  contentLength?: number;
}

function parse(buffer: Buffer, sent: number): RawResponse | null {
  const end = buffer.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const [statusLine = "", ...lines] = buffer.subarray(0, end).toString("latin1").split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(":");
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  const body = buffer.subarray(end + 4);
  const length = Number(headers["content-length"] ?? 0);
  if (body.length < length) return null;
  const status = Number(statusLine.split(" ")[1] ?? 0);
  return { status, headers, text: body.subarray(0, length).toString("utf8"), sent };
}

function frame(chunk: Uint8Array, chunked: boolean): Uint8Array {
  if (!chunked) return chunk;
  return Buffer.concat([Buffer.from(`${chunk.byteLength.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]);
}

/** Writes `data`, waiting for the socket to drain; false when the exchange is over. */
function write(socket: Socket, data: Uint8Array, over: () => boolean): Promise<boolean> {
  if (over() || socket.destroyed) return Promise.resolve(false);
  if (socket.write(data)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (more: boolean) => () => {
      socket.off("drain", onDrain);
      socket.off("close", onClose);
      resolve(more && !over());
    };
    const onDrain = done(true);
    const onClose = done(false);
    socket.once("drain", onDrain);
    socket.once("close", onClose);
  });
}

/**
 * Sends `METHOD path` with `headers` and `body` to 127.0.0.1:`port` and resolves with the first complete
 * answer (or what there was when the connection closed).
 */
export function rawRequest(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: RawBody,
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let sent = 0;
    let answer: RawResponse | null = null;
    const finish = () => {
      socket.destroy();
      resolve(answer ?? { status: 0, headers: {}, text: received.toString("latin1"), sent });
    };
    socket.on("data", (data: Buffer) => {
      received = Buffer.concat([received, data]);
      answer ??= parse(received, sent);
      if (answer) finish();
    });
    socket.on("close", finish);
    // A reset after the server answered and stopped reading is expected; the answer is what counts.
    socket.on("error", (err) => (answer || received.length > 0 ? finish() : reject(err)));
    socket.once("connect", async () => {
      const framing = body.chunked
        ? { "transfer-encoding": "chunked" }
        : { "content-length": String(body.contentLength ?? 0) };
      const head = Object.entries({ host: "127.0.0.1", ...headers, ...framing })
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join("");
      const over = () => answer !== null;
      if (!(await write(socket, Buffer.from(`${method} ${path} HTTP/1.1\r\n${head}\r\n`), over))) return;
      for (const chunk of body.chunks) {
        if (!(await write(socket, frame(chunk, body.chunked ?? false), over))) return;
        sent += chunk.byteLength;
      }
      if (body.chunked) await write(socket, Buffer.from("0\r\n\r\n"), over);
    });
  });
}

/** `bytes` cut into parts of `size` (64 KiB by default). */
export function* partsOf(bytes: Uint8Array, size = 64 * 1024): Generator<Uint8Array> {
  for (let i = 0; i < bytes.byteLength; i += size) yield bytes.subarray(i, i + size);
}

/** The same part again and again, up to `total` bytes (a bound, so a regression fails instead of hanging). */
export function* repeated(part: Uint8Array, total: number): Generator<Uint8Array> {
  for (let n = 0; n < total; n += part.byteLength) yield part;
}
