/**
 * A raw SMTP client over `node:net` for the edge cases a real client library hides: pipelining,
 * dot-stuffing on the wire, oversized streams, and hanging up mid-DATA. Replies are parsed per
 * RFC 5321 §4.2 (multi-line replies end with the line whose fourth character is a space).
 */
import { connect, type Socket } from "node:net";

export interface SmtpReply {
  code: number;
  /** the text of every line, without the code */
  lines: string[];
  /** all lines joined with "\n", codes included */
  raw: string;
}

export class RawSmtp {
  greeting!: SmtpReply;
  #buffer = "";
  #pending: string[] = [];
  #replies: SmtpReply[] = [];
  #waiters: ((r: SmtpReply) => void)[] = [];
  #closed = false;

  private constructor(readonly socket: Socket) {
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => this.#onData(chunk));
    socket.on("close", () => {
      this.#closed = true;
    });
    socket.on("error", () => undefined);
  }

  /** Connects (from `localAddress` when given, e.g. another loopback address) and reads the greeting. */
  static async connect(port: number, host = "127.0.0.1", localAddress?: string): Promise<RawSmtp> {
    const socket = connect({ port, host, ...(localAddress ? { localAddress } : {}) });
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    const client = new RawSmtp(socket);
    client.greeting = await client.reply();
    return client;
  }

  get closed(): boolean {
    return this.#closed;
  }

  #onData(chunk: string): void {
    this.#buffer += chunk;
    let at = this.#buffer.indexOf("\r\n");
    while (at >= 0) {
      const line = this.#buffer.slice(0, at);
      this.#buffer = this.#buffer.slice(at + 2);
      this.#pending.push(line);
      if (line.charAt(3) !== "-") {
        const reply: SmtpReply = {
          code: Number(line.slice(0, 3)),
          lines: this.#pending.map((l) => l.slice(4)),
          raw: this.#pending.join("\n"),
        };
        this.#pending = [];
        const waiter = this.#waiters.shift();
        if (waiter) waiter(reply);
        else this.#replies.push(reply);
      }
      at = this.#buffer.indexOf("\r\n");
    }
  }

  /** The next reply (waits up to `timeoutMs`). */
  reply(timeoutMs = 20_000): Promise<SmtpReply> {
    const ready = this.#replies.shift();
    if (ready) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("no SMTP reply in time")), timeoutMs);
      this.#waiters.push((r) => {
        clearTimeout(timer);
        resolve(r);
      });
    });
  }

  /** Writes bytes as they are (no CRLF added), respecting socket back-pressure. */
  async write(data: string | Uint8Array): Promise<void> {
    const chunk = typeof data === "string" ? Buffer.from(data, "latin1") : data;
    if (!this.socket.write(chunk)) await new Promise((r) => this.socket.once("drain", r));
  }

  /** Sends one command line and returns its reply. */
  async command(line: string): Promise<SmtpReply> {
    await this.write(`${line}\r\n`);
    return this.reply();
  }

  /** EHLO, MAIL FROM and RCPT TO for each address; returns the RCPT replies. */
  async envelope(from: string, to: string[]): Promise<SmtpReply[]> {
    await this.command("EHLO client.test");
    const mail = await this.command(`MAIL FROM:<${from}>`);
    if (mail.code !== 250) throw new Error(`MAIL FROM refused: ${mail.raw}`);
    const replies: SmtpReply[] = [];
    for (const rcpt of to) replies.push(await this.command(`RCPT TO:<${rcpt}>`));
    return replies;
  }

  /** DATA, the message dot-stuffed (RFC 5321 §4.5.2), the terminating dot; returns the final reply. */
  async data(message: Uint8Array | string, timeoutMs?: number): Promise<SmtpReply> {
    const go = await this.command("DATA");
    if (go.code !== 354) return go;
    await this.write(dotStuff(message));
    await this.write(".\r\n");
    return this.reply(timeoutMs);
  }

  async quit(): Promise<void> {
    if (!this.#closed) await this.command("QUIT").catch(() => undefined);
    this.socket.destroy();
  }

  /** Hangs up without QUIT. */
  destroy(): void {
    this.socket.destroy();
  }
}

/** Dot-stuffs a message for DATA and makes sure it ends with CRLF. */
export function dotStuff(message: Uint8Array | string): string {
  let text = typeof message === "string" ? message : Buffer.from(message).toString("latin1");
  if (!text.endsWith("\r\n")) text += "\r\n";
  return text.replace(/(^|\r\n)\./g, "$1..");
}
