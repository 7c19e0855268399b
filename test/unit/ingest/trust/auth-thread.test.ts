// Sender authentication on its thread (auth-thread.ts): the same verdicts as on the calling thread, for
// a message in memory and for a spool file; every DNS lookup made through the caller's resolver; lookups
// that wait do not hold up other messages; and a thread stuck in a message is replaced, its messages
// reading temperror and the next one evaluated again.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dkimSign } from "mailauth";
import { authThread } from "../../../../services/ingest/trust/auth-thread.ts";
import { authenticateSmtp } from "../../../../services/ingest/trust/smtp-auth.ts";
import type { DnsResolver } from "../../../../services/lib/dns.ts";
import { buildMail } from "../../../support/raw-mail.ts";

const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 1024 });
const TXT: Record<string, string> = {
  "good.test": "v=spf1 ip4:127.0.0.1 -all",
  "_dmarc.good.test": "v=DMARC1; p=reject",
  "s1._domainkey.good.test": `v=DKIM1; k=rsa; p=${publicKey.export({ type: "spki", format: "der" }).toString("base64")}`,
};

/** A resolver serving TXT; `hold` names lookups that wait until released; `keepFor` ms as its cache would. */
function zoneResolver(keepFor = 0) {
  const asked: string[] = [];
  const held = new Map<string, () => void>();
  const hold = new Set<string>();
  const resolve = async (name: string, rrtype = "A") => {
    asked.push(`${rrtype} ${name}`);
    if (hold.has(name)) await new Promise<void>((r) => held.set(name, r));
    const txt = TXT[name.toLowerCase()];
    if (rrtype === "TXT" && txt) return [[txt]];
    throw Object.assign(new Error(`query ${rrtype} ${name}: ENOTFOUND`), { code: "ENOTFOUND" });
  };
  const expiryOf = () => (keepFor > 0 ? Date.now() + keepFor : 0);
  return { resolver: { resolve, expiryOf } as unknown as DnsResolver, asked, hold, held };
}

async function signed(): Promise<Buffer> {
  const raw = buildMail({ from: "Alice <alice@good.test>" });
  const key = {
    signingDomain: "good.test",
    selector: "s1",
    privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
  const r = await dkimSign(Buffer.from(raw), { ...key, signatureData: [key] });
  return Buffer.concat([Buffer.from(r.signatures), Buffer.from(raw)]);
}

/** The message with its signed Subject changed after signing. */
const edit = (raw: Buffer) =>
  Buffer.from(raw.toString("latin1").replace(/^Subject: (.*)$/m, "Subject: $1!"), "latin1");

const FACTS = { ip: "127.0.0.1", helo: "mail.good.test", mailFrom: "alice@good.test" };
const PASS = {
  source: "smtp",
  spf: { result: "pass", domain: "good.test" },
  dkim: [{ result: "pass", domain: "good.test", selector: "s1", aligned: true }],
  dmarc: { result: "pass", policy: "reject", domain: "good.test" },
  arc: { result: "none" },
};
const dir = mkdtempSync(join(tmpdir(), "mh-auth-thread-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
// The thread loads its modules before it takes messages (until then the caller's thread evaluates).
beforeAll(() => authThread().started(), 60_000);

describe("sender authentication thread", () => {
  test("a message in memory and a spool file get the verdict of the calling thread; DNS goes through the caller's resolver", async () => {
    const raw = await signed();
    const path = join(dir, "spooled.eml");
    writeFileSync(path, raw);
    const here = zoneResolver();
    const there = zoneResolver();
    const local = await authenticateSmtp(raw, FACTS, {
      resolver: here.resolver,
      mta: "mx.in.test",
      inProcess: true,
    });
    expect(local).toEqual(PASS as never);
    // A view into a larger buffer: only its own bytes are the message.
    const view = new Uint8Array(Buffer.concat([Buffer.from("junk"), raw, Buffer.from("junk")])).subarray(
      4,
      4 + raw.length,
    );
    expect(await authenticateSmtp(view, FACTS, { resolver: there.resolver, mta: "mx.in.test" })).toEqual(
      local,
    );
    expect(await authenticateSmtp({ path }, FACTS, { resolver: there.resolver, mta: "mx.in.test" })).toEqual(
      local,
    );
    expect(there.asked.slice(0, here.asked.length).sort()).toEqual([...here.asked].sort());
    expect(there.asked).toContain("TXT s1._domainkey.good.test");
  });

  test("a lookup that waits holds up only its own message; a DNS failure reads temperror", async () => {
    const raw = await signed();
    const slow = zoneResolver();
    slow.hold.add("_dmarc.good.test");
    const fast = zoneResolver();
    const waiting = authenticateSmtp(raw, FACTS, { resolver: slow.resolver, mta: "mx.in.test" });
    expect(await authenticateSmtp(raw, FACTS, { resolver: fast.resolver, mta: "mx.in.test" })).toEqual(
      PASS as never,
    );
    expect(slow.held.has("_dmarc.good.test")).toBe(true);
    slow.held.get("_dmarc.good.test")?.();
    expect(await waiting).toEqual(PASS as never);

    const failing = {
      resolve: async (name: string, rrtype = "A") => {
        throw Object.assign(new Error(`query ${rrtype} ${name}: ETIMEOUT`), { code: "ETIMEOUT" });
      },
    } as unknown as DnsResolver;
    const auth = await authenticateSmtp(raw, FACTS, { resolver: failing, mta: "mx.in.test" });
    expect(auth.spf.result).toBe("temperror");
    expect(auth.dmarc.result).toBe("temperror");
    expect(auth.dkim.map((s) => s.result)).toEqual(["temperror"]);
  });

  test("on the calling thread, messages asked for in one turn are evaluated together, each to its own verdict", async () => {
    const z = zoneResolver(60_000);
    const opts = { resolver: z.resolver, mta: "mx.in.test", inProcess: true };
    const raws = await Promise.all([signed(), signed(), signed()]);
    const [a, b, c] = await Promise.all([
      authenticateSmtp(raws[0] as Buffer, FACTS, opts),
      authenticateSmtp(raws[1] as Buffer, { ...FACTS, ip: "192.0.2.7" }, opts),
      authenticateSmtp(edit(raws[2] as Buffer), FACTS, opts),
    ]);
    expect(a).toEqual(PASS as never);
    expect(b.spf).toEqual({ result: "fail", domain: "good.test" });
    expect(b.dmarc.result).toBe("pass"); // DKIM still aligns
    expect(c.spf.result).toBe("pass");
    expect(c.dkim.map((s) => s.result)).toEqual(["fail"]);
  });

  test("verdicts are kept per resolver: another resolver's cache, even with the same expiries, is asked again", async () => {
    const until = Date.now() + 60_000;
    const resolverWith = (spf: string) => {
      const asked: string[] = [];
      const resolve = async (name: string, rrtype = "A") => {
        asked.push(`${rrtype} ${name}`);
        if (name === "good.test" && rrtype === "TXT") return [[spf]];
        const txt = TXT[name.toLowerCase()];
        if (rrtype === "TXT" && txt) return [[txt]];
        throw Object.assign(new Error(`query ${rrtype} ${name}: ENOTFOUND`), { code: "ENOTFOUND" });
      };
      return { resolver: { resolve, expiryOf: () => until } as unknown as DnsResolver, asked };
    };
    const passing = resolverWith("v=spf1 ip4:127.0.0.1 -all");
    const failing = resolverWith("v=spf1 -all");
    const spfOf = async (r: ReturnType<typeof resolverWith>) => {
      r.asked.length = 0;
      const auth = await authenticateSmtp(await signed(), FACTS, {
        resolver: r.resolver,
        mta: "mx.in.test",
        inProcess: true,
      });
      return { spf: auth.spf.result, asked: r.asked.includes("TXT good.test") };
    };
    expect(await spfOf(passing)).toEqual({ spf: "pass", asked: true });
    expect(await spfOf(passing)).toEqual({ spf: "pass", asked: false });
    expect(await spfOf(failing)).toEqual({ spf: "fail", asked: true });
    expect(await spfOf(passing)).toEqual({ spf: "pass", asked: false });
  });

  test("a thread stuck in a message is replaced: that message and those it held read temperror, the next one passes", async () => {
    // 60,000 continuation lines: mailauth's header parsing is quadratic in them (seconds of CPU). The
    // intake never hands such a header over (unauthenticable); here it keeps the thread busy.
    const stuck = Buffer.from(`From: alice@good.test\r\nX-Long: a${"\r\n b".repeat(60_000)}\r\n\r\nbody\r\n`);
    const z = zoneResolver();
    const opts = { resolver: z.resolver, mta: "mx.in.test", deadlineMs: 300 };
    // The other message's DMARC lookup waits (and is never answered), so that it is still on the thread
    // when the thread is replaced, whichever of the two the thread got to first.
    const waiting = zoneResolver();
    waiting.hold.add("_dmarc.good.test");
    const raw = await signed();
    const [first, second] = await Promise.all([
      authenticateSmtp(stuck, FACTS, opts),
      authenticateSmtp(raw, FACTS, { ...opts, resolver: waiting.resolver, deadlineMs: 3000 }),
    ]);
    expect(first.spf.result).toBe("temperror");
    expect(second.spf.result).toBe("temperror");
    expect(second.dkim).toEqual([]);
    // Evaluated again: on this thread while the replacement starts, then on the new thread.
    expect(
      await authenticateSmtp(await signed(), FACTS, { resolver: z.resolver, mta: "mx.in.test" }),
    ).toEqual(PASS as never);
    await authThread().started();
    expect(
      await authenticateSmtp(await signed(), FACTS, { resolver: z.resolver, mta: "mx.in.test" }),
    ).toEqual(PASS as never);
  }, 30_000);

  test("the thread reuses an answer for as long as the resolver keeps it cached, then asks again", async () => {
    const raw = await signed();
    const opts = (z: ReturnType<typeof zoneResolver>) => ({
      resolver: z.resolver,
      mta: "mx.in.test",
      deadlineMs: 3000,
    });
    // kept for a while (the thread's copies are process-wide, so this test comes last and keeps them
    // briefly): the second message asks for nothing, negative answers included
    const warm = zoneResolver(5_000);
    expect(await authenticateSmtp(new Uint8Array(raw), FACTS, opts(warm))).toEqual(PASS as never);
    const first = warm.asked.length;
    expect(first).toBeGreaterThan(0);
    expect(await authenticateSmtp(new Uint8Array(raw), FACTS, opts(warm))).toEqual(PASS as never);
    expect(warm.asked.length).toBe(first);
    // not cached by the resolver: every message asks again
    const cold = zoneResolver(0);
    expect(await authenticateSmtp(new Uint8Array(raw), FACTS, opts(cold))).toEqual(PASS as never);
    const once = cold.asked.length;
    expect(await authenticateSmtp(new Uint8Array(raw), FACTS, opts(cold))).toEqual(PASS as never);
    expect(cold.asked.length).toBe(2 * once);
  });
});
