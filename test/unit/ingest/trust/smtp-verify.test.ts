// The SMTP evaluation (smtp-verify.ts) against mailauth's authenticate(): over messages of every shape
// that matters to SPF, DKIM, DMARC and ARC (passing, tampered, unsigned, several signatures, l=, simple
// and relaxed canonicalisation over bodies past mailauth's 64 KiB slices, no body, an empty header
// section, bare LFs, ARC sets, group and multiple From fields, the null sender), both give the same
// verdict, and the same per-signature status and comment. DNS answers come from a fixed zone.
import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { dkimSign, sealMessage, spf } from "mailauth";
import { DkimVerifier } from "mailauth/lib/dkim/dkim-verifier";
import {
  fromMailauth,
  hasBareLf,
  type SmtpClientFacts,
  verdictMemos,
  verifyDirect,
  verifySmtp,
  viaAuthenticate,
} from "../../../../services/ingest/trust/smtp-verify.ts";
import { buildMail, emailFixture } from "../../../support/raw-mail.ts";

function rsaKey() {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 1024 });
  const p = publicKey.export({ type: "spki", format: "der" }).toString("base64");
  return {
    privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    record: `v=DKIM1; k=rsa; p=${p}`,
  };
}
const GOOD = rsaKey();
const OTHER = rsaKey();
const FWD = rsaKey();

const TXT: Record<string, string> = {
  "good.test": "v=spf1 ip4:127.0.0.1 -all",
  "_dmarc.good.test": "v=DMARC1; p=reject",
  "s1._domainkey.good.test": GOOD.record,
  "other.test": "v=spf1 ip4:127.0.0.1 -all",
  "s1._domainkey.other.test": OTHER.record,
  "soft.test": "v=spf1 ~all",
  "fail.test": "v=spf1 ip4:192.0.2.1 -all",
  "_dmarc.fail.test": "v=DMARC1; p=quarantine; adkim=s",
  "fwd.test": "v=spf1 ip4:127.0.0.1 -all",
  "arc._domainkey.fwd.test": FWD.record,
};

async function resolve(name: string, rrtype = "A"): Promise<unknown> {
  const txt = TXT[name.toLowerCase().replace(/\.$/, "")];
  if (rrtype === "TXT" && txt) return [[txt]];
  throw Object.assign(new Error(`${rrtype} ${name}`), { code: "ENOTFOUND" });
}

const OPTS = { resolve, mta: "mx.in.test", spfDeadlineMs: 3000 };

async function sign(
  raw: Uint8Array | string,
  domain: string,
  privateKey: string,
  extra: Record<string, unknown> = {},
): Promise<Buffer> {
  const key = { signingDomain: domain, selector: "s1", privateKey, ...extra };
  const r = await dkimSign(Buffer.from(raw), { ...key, signatureData: [key] });
  if (r.errors.length > 0) throw new Error(JSON.stringify(r.errors));
  return Buffer.concat([Buffer.from(r.signatures), Buffer.from(raw)]);
}

const edit = (raw: Buffer, from: string, to: string) =>
  Buffer.from(raw.toString("latin1").replace(from, to), "latin1");

const FACTS: SmtpClientFacts = { ip: "127.0.0.1", helo: "mail.good.test", mailFrom: "alice@good.test" };
const bigText = `${"A line of text with trailing space   \r\n\r\n\t tabbed  line\r\n".repeat(2500)}\r\n\r\n\r\n`;

interface Case {
  name: string;
  raw: () => Promise<Buffer> | Buffer;
  facts?: Partial<SmtpClientFacts>;
}

const cases: Case[] = [
  {
    name: "aligned signature, SPF pass",
    raw: () => sign(buildMail({ from: "Alice <alice@good.test>" }), "good.test", GOOD.privateKey),
  },
  {
    name: "signed by another domain",
    raw: () => sign(buildMail({ from: "CEO <ceo@good.test>" }), "other.test", OTHER.privateKey),
    facts: { mailFrom: "bounce@other.test", helo: "mx.other.test" },
  },
  {
    name: "body changed after signing",
    raw: async () =>
      edit(
        await sign(buildMail({ from: "alice@good.test", text: "Pay 1001." }), "good.test", GOOD.privateKey),
        "1001",
        "9999",
      ),
  },
  {
    name: "signed header changed after signing",
    raw: async () =>
      edit(
        await sign(buildMail({ from: "alice@good.test", subject: "hello" }), "good.test", GOOD.privateKey),
        "Subject: hello",
        "Subject: [x] hello",
      ),
  },
  {
    name: "unsigned, SPF softfail",
    raw: () => Buffer.from(buildMail({ from: "x@soft.test" })),
    facts: { mailFrom: "x@soft.test" },
  },
  {
    name: "unsigned, SPF fail, strict DKIM alignment record",
    raw: () => sign(buildMail({ from: "x@fail.test" }), "other.test", OTHER.privateKey),
    facts: { mailFrom: "x@fail.test", helo: "fail.test" },
  },
  {
    name: "two signatures, one of them aligned",
    raw: async () =>
      sign(
        await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey),
        "other.test",
        OTHER.privateKey,
      ),
  },
  {
    name: "a key that is not in DNS",
    raw: () =>
      sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey, { selector: "gone" }),
  },
  {
    name: "a large body, relaxed",
    raw: () => sign(buildMail({ from: "alice@good.test", text: bigText }), "good.test", GOOD.privateKey),
  },
  {
    name: "a large body, simple/simple",
    raw: () =>
      sign(buildMail({ from: "alice@good.test", text: bigText }), "good.test", GOOD.privateKey, {
        canonicalization: "simple/simple",
      }),
  },
  {
    name: "a large body with a body length limit, content appended",
    raw: async () =>
      Buffer.concat([
        await sign(buildMail({ from: "alice@good.test", text: bigText }), "good.test", GOOD.privateKey, {
          maxBodyLength: 1000,
        }),
        Buffer.from("appended\r\n"),
      ]),
  },
  {
    name: "no body (no empty line)",
    raw: () => Buffer.from("From: alice@good.test\r\nSubject: x\r\nTo: b@in.test\r\n"),
  },
  {
    name: "signed, no body",
    raw: () =>
      sign("From: alice@good.test\r\nSubject: x\r\nTo: b@in.test\r\n\r\n", "good.test", GOOD.privateKey),
  },
  { name: "an empty header section", raw: () => Buffer.from("\r\nFrom: alice@good.test\r\n\r\nbody\r\n") },
  { name: "empty", raw: () => Buffer.alloc(0) },
  { name: "no From", raw: () => Buffer.from("Subject: x\r\nTo: b@in.test\r\n\r\nbody\r\n") },
  {
    name: "two From fields",
    raw: () => Buffer.from("From: alice@good.test\r\nFrom: eve@other.test\r\nSubject: x\r\n\r\nbody\r\n"),
  },
  {
    name: "a group in From",
    raw: () =>
      sign(
        "From: team: alice@good.test, bob@good.test;\r\nSubject: x\r\n\r\nbody\r\n",
        "good.test",
        GOOD.privateKey,
      ),
  },
  {
    name: "Received fields and a Return-Path",
    raw: async () =>
      Buffer.concat([
        Buffer.from(
          "Return-Path: <x@other.test>\r\nReceived: from mx.other.test (mx.other.test [192.0.2.7]) by mx.in.test; Mon, 6 May 2024 07:08:09 +0000\r\n",
        ),
        await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey),
      ]),
  },
  {
    name: "the null sender, a HELO address",
    raw: () => sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey),
    facts: { mailFrom: "", helo: "127.0.0.1" },
  },
  {
    name: "the null sender, no HELO",
    raw: () => sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey),
    facts: { mailFrom: "", helo: "" },
  },
  {
    name: "bare LFs (the stream path)",
    raw: async () =>
      Buffer.from(
        (
          await sign(
            buildMail({ from: "alice@good.test", text: "one\r\ntwo\r\n" }),
            "good.test",
            GOOD.privateKey,
          )
        )
          .toString("latin1")
          .replace("one\r\n", "one\n"),
        "latin1",
      ),
  },
  {
    name: "an ARC-sealed forward with a broken signature",
    raw: async () => {
      const original = await sign(
        buildMail({ from: "alice@good.test", subject: "hello" }),
        "good.test",
        GOOD.privateKey,
      );
      const forwarded = edit(original, "Subject: hello", "Subject: [list] hello");
      const seal = await sealMessage(forwarded, {
        signingDomain: "fwd.test",
        selector: "arc",
        privateKey: FWD.privateKey,
        authResults: "fwd.test; dkim=pass header.d=good.test",
        cv: "none",
      });
      return Buffer.concat([seal, forwarded]);
    },
    facts: { mailFrom: "list@fwd.test", helo: "mx.fwd.test" },
  },
  {
    name: "an ARC set whose seal is broken",
    raw: async () => {
      const original = await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey);
      const seal = await sealMessage(original, {
        signingDomain: "fwd.test",
        selector: "arc",
        privateKey: FWD.privateKey,
        authResults: "fwd.test; dkim=pass",
        cv: "none",
      });
      return edit(Buffer.concat([seal, original]), "cv=none", "cv=pass");
    },
  },
  ...["nodemailer-example.eml", "crlf-attachments.eml", "rfc822-parts.eml", "latin1-body.eml"].map(
    (name) => ({
      name: `fixture ${name}, signed`,
      raw: () => sign(emailFixture(name), "good.test", GOOD.privateKey),
    }),
  ),
];

/** What is compared beyond `message.auth`: each check's result and comment. */
function detail(r: Awaited<ReturnType<typeof viaAuthenticate>> | Awaited<ReturnType<typeof verifyDirect>>) {
  return {
    dkim: (r.dkim?.results ?? []).map((s) => ({
      result: s.status?.result,
      comment: s.status?.comment,
      domain: s.signingDomain,
      aligned: s.status?.result === "pass" ? s.status?.aligned : undefined,
    })),
    spf: r.spf ? { result: r.spf.status?.result, comment: r.spf.status?.comment } : null,
    dmarc: r.dmarc
      ? { result: r.dmarc.status?.result, comment: r.dmarc.status?.comment, policy: r.dmarc.policy }
      : null,
    arc: r.arc ? { result: r.arc.status?.result, comment: r.arc.status?.comment } : null,
  };
}

describe("SMTP evaluation: the direct path gives authenticate()'s verdicts", () => {
  for (const c of cases) {
    test(c.name, async () => {
      const raw = await c.raw();
      const facts = { ...FACTS, ...c.facts };
      const reference = await viaAuthenticate(raw, facts, OPTS);
      const expected = fromMailauth(reference);
      expect(await verifySmtp(raw, facts, OPTS)).toEqual(expected);
      if (!hasBareLf(raw)) {
        const direct = await verifyDirect(raw, facts, OPTS);
        expect(fromMailauth(direct)).toEqual(expected);
        expect(detail(direct)).toEqual(detail(reference));
      }
    });
  }

  test("the cases cover every verdict the service reports", async () => {
    const seen = {
      spf: new Set<string>(),
      dkim: new Set<string>(),
      dmarc: new Set<string>(),
      arc: new Set<string>(),
    };
    for (const c of cases) {
      const a = await verifySmtp(await c.raw(), { ...FACTS, ...c.facts }, OPTS);
      seen.spf.add(a.spf.result);
      for (const s of a.dkim) seen.dkim.add(`${s.result}${s.aligned ? "+aligned" : ""}`);
      seen.dmarc.add(a.dmarc.result);
      seen.arc.add(a.arc.result);
    }
    expect([...seen.spf].sort()).toEqual(["fail", "none", "pass", "softfail"]);
    expect([...seen.dkim].sort()).toEqual(["fail", "neutral", "pass", "pass+aligned"]);
    expect([...seen.dmarc].sort()).toEqual(["fail", "none", "pass"]);
    expect([...seen.arc].sort()).toEqual(["fail", "none", "pass"]);
  });

  // patches/mailauth@*.patch adds `formatResults: false`; an upgrade that loses the patch shows here.
  test("mailauth leaves out its header texts with formatResults: false, and keeps them by default", async () => {
    const facts = { ip: "127.0.0.1", helo: "mail.good.test", sender: "alice@good.test", mta: "mx.in.test" };
    const plain = await spf({ ...facts, resolver: resolve } as Parameters<typeof spf>[0]);
    const bare = await spf({ ...facts, resolver: resolve, formatResults: false } as Parameters<
      typeof spf
    >[0]);
    expect(plain.status.result).toBe("pass");
    expect(bare.status).toEqual(plain.status);
    expect(typeof plain.info).toBe("string");
    expect(typeof plain.header).toBe("string");
    expect(bare.info).toBeUndefined();
    expect(bare.header).toBeUndefined();

    const raw = await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey);
    const results = async (formatResults?: false) => {
      const v = new DkimVerifier({
        resolver: resolve,
        ...(formatResults === false ? { formatResults } : {}),
      });
      const split = raw.indexOf("\r\n\r\n") + 4;
      await v.emitHeaders(raw.subarray(0, split));
      await v.nextChunk(raw.subarray(split));
      await v.finalChunk();
      return v.results;
    };
    const [withInfo, without] = [await results(), await results(false)];
    expect(without.map((r) => r.status)).toEqual(withInfo.map((r) => r.status));
    expect(withInfo[0]?.info).toContain("dkim=pass");
    expect(without[0]?.info).toBeUndefined();
  });

  // The patch also keeps each key record it has parsed: a record that changes is parsed again.
  test("a DKIM key record seen before is reused only while the record is the same", async () => {
    const raw = await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey);
    const facts = { ...FACTS, mailFrom: "alice@good.test" };
    const dkimOf = async (record: string) => {
      const zone = async (name: string, rrtype = "A") =>
        name === "s1._domainkey.good.test" && rrtype === "TXT" ? [[record]] : resolve(name, rrtype);
      const r = await verifyDirect(raw, facts, { ...OPTS, resolve: zone });
      return fromMailauth(r).dkim.map((d) => d.result);
    };
    expect(await dkimOf(GOOD.record)).toEqual(["pass"]);
    expect(await dkimOf(GOOD.record)).toEqual(["pass"]);
    // another key under the same name: the signature no longer verifies
    expect(await dkimOf(OTHER.record)).toEqual(["fail"]);
    // a revoked key (empty p=)
    expect(await dkimOf("v=DKIM1; k=rsa; p=")).not.toContain("pass");
    expect(await dkimOf(GOOD.record)).toEqual(["pass"]);
  });

  test("an SPF verdict is reused for the same client while its DNS answers stay cached unchanged", async () => {
    const raw = await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey);
    let record = "v=spf1 ip4:127.0.0.1 -all";
    let until = Date.now() + 60_000;
    const asked: string[] = [];
    const zone = async (name: string, rrtype = "A") => {
      asked.push(`${rrtype} ${name}`);
      return name === "memo.test" && rrtype === "TXT" ? [[record]] : resolve(name, rrtype);
    };
    // The answers this zone gives are "cached" until `until`, except those of another client's names.
    const expiry = (name: string, rrtype: string) => (name === "memo.test" && rrtype === "TXT" ? until : 0);
    const memos = verdictMemos();
    const spfOf = async (facts: Partial<SmtpClientFacts>) => {
      asked.length = 0;
      const r = await verifyDirect(
        raw,
        { ...FACTS, mailFrom: "bob@memo.test", ...facts },
        { ...OPTS, resolve: zone, expiry, memos },
      );
      return { result: fromMailauth(r).spf.result, askedSpf: asked.includes("TXT memo.test") };
    };
    expect(await spfOf({})).toEqual({ result: "pass", askedSpf: true });
    expect(await spfOf({})).toEqual({ result: "pass", askedSpf: false });
    // another address, HELO name or sender is another client
    expect(await spfOf({ ip: "192.0.2.9" })).toEqual({ result: "fail", askedSpf: true });
    expect(await spfOf({ helo: "other.good.test" })).toEqual({ result: "pass", askedSpf: true });
    expect(await spfOf({ mailFrom: "carol@memo.test" })).toEqual({ result: "pass", askedSpf: true });
    // The record changes; while the answer it was computed from stays cached the verdict stands (it is
    // what a lookup would still answer); once that answer is replaced, SPF is evaluated again.
    record = "v=spf1 -all";
    expect(await spfOf({})).toEqual({ result: "pass", askedSpf: false });
    until += 1;
    expect(await spfOf({})).toEqual({ result: "fail", askedSpf: true });
    // An answer that is not cached (expiry 0) keeps nothing: every message asks.
    until = 0;
    expect(await spfOf({})).toEqual({ result: "fail", askedSpf: true });
    expect(await spfOf({})).toEqual({ result: "fail", askedSpf: true });
    // A lookup that fails (temperror) is never kept, even with the rest cached.
    const failing = async (name: string, rrtype = "A") => {
      asked.push(`${rrtype} ${name}`);
      if (name === "flaky.test") throw Object.assign(new Error("timeout"), { code: "ETIMEOUT" });
      return resolve(name, rrtype);
    };
    for (let i = 0; i < 2; i++) {
      asked.length = 0;
      const r = await verifyDirect(
        raw,
        { ...FACTS, mailFrom: "x@flaky.test" },
        { ...OPTS, resolve: failing, expiry: () => 1, memos },
      );
      expect(fromMailauth(r).spf.result).toBe("temperror");
      expect(asked).toContain("TXT flaky.test");
    }
  });

  test("a DMARC verdict is reused for what DMARC reads of a message while its DNS answers stay cached unchanged", async () => {
    let policy = "reject";
    let until = Date.now() + 60_000;
    const asked: string[] = [];
    const zone = async (name: string, rrtype = "A") => {
      asked.push(`${rrtype} ${name}`);
      if (name === "_dmarc.good.test" && rrtype === "TXT") return [[`v=DMARC1; p=${policy}`]];
      return resolve(name, rrtype);
    };
    // every answer, and every "no such name", is cached until `until`
    const expiry = () => until;
    const memos = verdictMemos();
    const dmarcOf = async (raw: Buffer, facts: Partial<SmtpClientFacts> = {}) => {
      asked.length = 0;
      const r = await verifyDirect(raw, { ...FACTS, ...facts }, { ...OPTS, resolve: zone, expiry, memos });
      const auth = fromMailauth(r);
      return {
        result: auth.dmarc.result,
        policy: auth.dmarc.policy,
        aligned: auth.dkim.map((d) => d.aligned),
        asked: asked.includes("TXT _dmarc.good.test"),
      };
    };
    const alice = () => sign(buildMail({ from: "Alice <alice@good.test>" }), "good.test", GOOD.privateKey);
    expect(await dmarcOf(await alice())).toEqual({
      result: "pass",
      policy: "reject",
      aligned: [true],
      asked: true,
    });
    // another message of the same sender, signed again: the same inputs, the verdict is reused
    expect(await dmarcOf(await alice())).toEqual({
      result: "pass",
      policy: "reject",
      aligned: [true],
      asked: false,
    });
    // another author, or a signature that fails and SPF that fails: other inputs, evaluated
    const bob = await sign(buildMail({ from: "bob@good.test" }), "good.test", GOOD.privateKey);
    expect(await dmarcOf(bob)).toEqual({ result: "pass", policy: "reject", aligned: [true], asked: true });
    const forged = edit(await alice(), "Subject:", "Subject: re:");
    expect(await dmarcOf(forged, { ip: "192.0.2.9" })).toEqual({
      result: "fail",
      policy: "reject",
      aligned: [false],
      asked: true,
    });
    expect(await dmarcOf(forged, { ip: "192.0.2.9" })).toEqual({
      result: "fail",
      policy: "reject",
      aligned: [false],
      asked: false,
    });
    // the record changes, and once the cached answer is replaced the new policy applies
    policy = "none";
    until += 1;
    expect(await dmarcOf(await alice())).toEqual({
      result: "pass",
      policy: "none",
      aligned: [true],
      asked: true,
    });
  });

  test("an SPF record that reads the clock (the %{t} macro) keeps no verdict", async () => {
    const raw = await sign(buildMail({ from: "alice@good.test" }), "good.test", GOOD.privateKey);
    const asked: string[] = [];
    const zone = async (name: string, rrtype = "A") => {
      asked.push(`${rrtype} ${name}`);
      if (name === "clock.test" && rrtype === "TXT")
        return [["v=spf1 ip4:127.0.0.1 exists:%{t}.clock.test -all"]];
      return resolve(name, rrtype);
    };
    // every answer cached, unchanged: only the record's %{t} stops the verdict from being kept
    const until = Date.now() + 60_000;
    const memos = verdictMemos();
    for (let i = 0; i < 2; i++) {
      asked.length = 0;
      const r = await verifyDirect(
        raw,
        { ...FACTS, mailFrom: "a@clock.test" },
        { ...OPTS, resolve: zone, expiry: () => until, memos },
      );
      expect(fromMailauth(r).spf.result).toBe("pass");
      expect(asked).toContain("TXT clock.test");
    }
  });

  test("a message with bare LFs is recognised; CRLF only is not", () => {
    expect(hasBareLf(Buffer.from("a\r\nb\nc"))).toBe(true);
    expect(hasBareLf(Buffer.from("\na"))).toBe(true);
    expect(hasBareLf(Buffer.from("a\r\nb\r\n"))).toBe(false);
  });
});
