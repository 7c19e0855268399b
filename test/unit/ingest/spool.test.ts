import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SpoolSlot, spoolPath, sweepSpool } from "../../../services/ingest/spool.ts";

/** Temp directories made by the tests, removed after each one. */
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const fresh = () => {
  const d = mkdtempSync(join(tmpdir(), "mh-spool-"));
  dirs.push(d);
  return d;
};

describe("sweepSpool", () => {
  test("removes the spool files of processes that are gone and keeps those of live ones", async () => {
    const dir = fresh();
    // Found by the crash suite (tools/chaos/crash.ts): a SIGKILLed serve left its spool files forever.
    writeFileSync(join(dir, "4242-1700000000000-00aa.eml"), "dead writer");
    writeFileSync(join(dir, "4343-1700000000000-00bb.eml"), "live writer");
    const mine = spoolPath(dir);
    writeFileSync(mine, "this process");
    writeFileSync(join(dir, "notes.txt"), "not a spool file");
    const removed = await sweepSpool(dir, (pid) => pid === 4343 || pid === process.pid);
    expect(removed).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(
      ["4343-1700000000000-00bb.eml", mine.slice(dir.length + 1), "notes.txt"].sort(),
    );
  });

  test("by default checks pids on this host: a pid that cannot exist is swept, our own is kept", async () => {
    const dir = fresh();
    writeFileSync(join(dir, "2147483646-1-aa.eml"), "x");
    const mine = spoolPath(dir);
    writeFileSync(mine, "y");
    expect(await sweepSpool(dir)).toBe(1);
    expect(readdirSync(dir)).toEqual([mine.slice(dir.length + 1)]);
  });

  test("a missing directory sweeps nothing", async () => {
    expect(await sweepSpool(join(fresh(), "absent"))).toBe(0);
  });
});

describe("SpoolSlot", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  async function* chunks(...parts: string[]): AsyncIterable<Uint8Array> {
    for (const p of parts) yield enc(p);
  }
  const opts = { limit: 1024, overflow: "drain" as const, keepBytes: 1024 };
  const sha = (s: string) => new Bun.CryptoHasher("sha256").update(s).digest("hex");

  test("one file serves message after message; a shorter message cuts the longer one's tail off", async () => {
    const dir = fresh();
    const slot = new SpoolSlot(dir);
    const first = await slot.spool(chunks("a much longer first ", "message"), opts);
    expect(readFileSync(first.path, "utf8")).toBe("a much longer first message");
    expect(first.sha256).toBe(sha("a much longer first message"));
    await slot.done(true);
    const second = await slot.spool(chunks("short"), opts);
    expect(second.path).toBe(first.path);
    expect(readFileSync(second.path, "utf8")).toBe("short");
    expect(second.size).toBe(5);
    expect(second.sha256).toBe(sha("short"));
    expect(new TextDecoder().decode(second.bytes)).toBe("short");
    await slot.done(true);
    expect(readdirSync(dir)).toHaveLength(1);
    await slot.close();
    expect(readdirSync(dir)).toEqual([]);
  });

  test("done(false) gives the file up (it may have been moved away): the next message gets a new one", async () => {
    const dir = fresh();
    const slot = new SpoolSlot(dir);
    const first = await slot.spool(chunks("one"), opts);
    await slot.done(false);
    expect(readdirSync(dir)).toEqual([]);
    const second = await slot.spool(chunks("two"), opts);
    expect(second.path).not.toBe(first.path);
    expect(readFileSync(second.path, "utf8")).toBe("two");
    await slot.done(true);
    await slot.close();
    expect(readdirSync(dir)).toEqual([]);
  });

  test("a source that fails mid-message removes the file and rethrows", async () => {
    const dir = fresh();
    const slot = new SpoolSlot(dir);
    await slot.spool(chunks("kept for reuse"), opts);
    await slot.done(true);
    async function* broken(): AsyncIterable<Uint8Array> {
      yield enc("partial");
      throw new Error("client went away");
    }
    await expect(slot.spool(broken(), opts)).rejects.toThrow("client went away");
    expect(readdirSync(dir)).toEqual([]);
  });

  test("closing while a message is in progress removes the file once the message is done", async () => {
    const dir = fresh();
    const slot = new SpoolSlot(dir);
    const spooled = await slot.spool(chunks("in flight"), opts);
    let closed = false;
    const closing = slot.close().then(() => {
      closed = true;
    });
    await Bun.sleep(1);
    // close() resolves only once the file is gone, so a graceful stop waiting for it leaves none behind
    expect(closed).toBe(false);
    expect(readFileSync(spooled.path, "utf8")).toBe("in flight");
    await slot.done(true);
    await closing;
    expect(closed).toBe(true);
    expect(readdirSync(dir)).toEqual([]);
  });

  test("past the limit the message is marked exceeded and only the limit's bytes are on disk", async () => {
    const dir = fresh();
    const slot = new SpoolSlot(dir);
    const big = await slot.spool(chunks("x".repeat(1000), "y".repeat(100)), opts);
    expect(big.exceeded).toBe(true);
    expect(big.size).toBe(1100);
    expect(statSync(big.path).size).toBe(1000);
    await slot.done(false);
    await slot.close();
  });
  test("deferBytes: a message under it is held in memory only; one that grows past it is written whole", async () => {
    const dir = fresh();
    const slot = new SpoolSlot(dir);
    const deferOpts = { ...opts, deferBytes: 16 };
    const first = await slot.spool(chunks("written ", "to the file ", "whole"), deferOpts);
    expect(first.written).toBeUndefined();
    expect(readFileSync(first.path, "utf8")).toBe("written to the file whole");
    expect(new TextDecoder().decode(first.bytes)).toBe("written to the file whole");
    await slot.done(true);
    // Small: nothing written, the file keeps the previous message; the bytes and hash are this one's.
    const small = await slot.spool(chunks("tiny ", "note"), deferOpts);
    expect(small.written).toBe(false);
    expect(new TextDecoder().decode(small.bytes)).toBe("tiny note");
    expect(small.sha256).toBe(sha("tiny note"));
    expect(small.size).toBe(9);
    expect(readFileSync(small.path, "utf8")).toBe("written to the file whole");
    await slot.done(true);
    // And the next larger message overwrites it correctly (its tail cut to its size).
    const third = await slot.spool(chunks("0123456789", "abcdefghij"), deferOpts);
    expect(readFileSync(third.path, "utf8")).toBe("0123456789abcdefghij");
    expect(third.sha256).toBe(sha("0123456789abcdefghij"));
    await slot.done(true);
    await slot.close();
    expect(readdirSync(dir)).toEqual([]);
  });
});
