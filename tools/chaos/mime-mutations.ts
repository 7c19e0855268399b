/**
 * Mutations of raw messages for the MIME fuzzer. Messages are handled as latin1 strings (one char per
 * byte, so every byte survives); each mutation takes a seeded random source, so a run is repeatable.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { sharedDataDir } from "../../test/support/paths.ts";

/** Where the corpus of real messages lives (`MAILHOOK_CORPUS_DIR`, see test/support/paths.ts). */
export const CORPUS_DIR = join(sharedDataDir("corpus"), "emails");

/** A seeded PRNG (mulberry32) returning floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Corpus files up to `maxBytes`, sorted by path (so a seed picks the same files on every machine). */
export function loadCorpus(maxBytes: number): string[] {
  const files = (readdirSync(CORPUS_DIR, { recursive: true }) as string[])
    .map((f) => join(CORPUS_DIR, f))
    .filter((f) => !f.endsWith(".md") && statSync(f).isFile() && statSync(f).size <= maxBytes)
    .sort();
  return files.map((f) => readFileSync(f).toString("latin1"));
}

type Rand = () => number;
const int = (r: Rand, n: number) => Math.floor(r() * n);
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[int(r, xs.length)] as T;

function headerEnd(m: string): number {
  const crlf = m.indexOf("\r\n\r\n");
  const lf = m.indexOf("\n\n");
  if (crlf < 0) return lf < 0 ? m.length : lf;
  return lf < 0 ? crlf : Math.min(crlf, lf);
}

function headerLines(m: string): { lines: string[]; rest: string } {
  const end = headerEnd(m);
  return { lines: m.slice(0, end).split(/\r?\n/), rest: m.slice(end) };
}

const CHARSETS = [
  "bogus-8",
  "utf-7",
  "x-unknown",
  "",
  "utf-16",
  "iso-2022-jp",
  "\u00ff\u00fe",
  "../../x",
  "utf-32be",
];
const CTES = [
  "base64",
  "quoted-printable",
  "x-uuencode",
  "8bit",
  "binary",
  "7bit",
  "gzip",
  "",
  "base64; x=1",
  "b\u0000",
];

/** Each mutation returns the new message; its name goes into failure reports. */
const MUTATIONS: Record<string, (m: string, r: Rand, other: string) => string> = {
  byteFlips(m, r) {
    const b = m.split("");
    for (let i = 0, n = 1 + int(r, 20); i < n && b.length > 0; i++)
      b[int(r, b.length)] = String.fromCharCode(int(r, 256));
    return b.join("");
  },
  truncate: (m, r) => m.slice(0, int(r, m.length + 1)),
  duplicateHeader(m, r) {
    const { lines, rest } = headerLines(m);
    const line = pick(r, lines);
    const copies = Array.from({ length: 1 + int(r, 50) }, () => line);
    lines.splice(int(r, lines.length + 1), 0, ...copies);
    return lines.join("\r\n") + rest;
  },
  removeHeader(m, r) {
    const { lines, rest } = headerLines(m);
    const name = pick(r, [
      "content-type",
      "message-id",
      "from",
      "mime-version",
      "content-transfer-encoding",
      "to",
    ]);
    return lines.filter((l) => !l.toLowerCase().startsWith(`${name}:`)).join("\r\n") + rest;
  },
  corruptBoundary(m, r) {
    const found = m.match(/boundary="?([^";\r\n]+)"?/i);
    if (!found?.[1]) return m.replace(/^/, 'Content-Type: multipart/mixed; boundary="x"\r\n');
    const b = found[1];
    const choice = int(r, 4);
    if (choice === 0) return m.split(`--${b}--`).join("");
    if (choice === 1)
      return m.replace(`boundary="${b}"`, 'boundary=""').replace(`boundary=${b}`, "boundary=");
    if (choice === 2) return m.split(`--${b}`).join(`--${b.slice(0, -1)}`);
    return m.replace(found[0], `boundary="${"-".repeat(int(r, 3000))}"`);
  },
  deepNesting(m, r) {
    const depth = 1 + int(r, pick(r, [10, 200, 2000]));
    let head = "";
    let tail = "";
    for (let i = 0; i < depth; i++) {
      head += `Content-Type: multipart/mixed; boundary="n${i}"\r\n\r\n--n${i}\r\n`;
      tail = `\r\n--n${i}--\r\n${tail}`;
    }
    return `From: a@b.c\r\nMIME-Version: 1.0\r\n${head}${m}${tail}`;
  },
  hugeHeaderLine(m, r) {
    const value = pick(r, ["a", "=?utf-8?B?YWJj?= ", "x@y.z, ", "\t"]).repeat(1000 + int(r, 200_000));
    return `${pick(r, ["Subject", "To", "X-Long", "References", "Content-Type"])}: ${value}\r\n${m}`;
  },
  bogusCharset: (m, r) =>
    /charset=/i.test(m)
      ? m.replace(/charset="?[^";\s]*"?/gi, () => `charset="${pick(r, CHARSETS)}"`)
      : `Content-Type: text/plain; charset=${pick(r, CHARSETS)}\r\n${m}`,
  randomCte(m, r) {
    const cte = pick(r, CTES);
    return /content-transfer-encoding:/i.test(m)
      ? m.replace(/content-transfer-encoding:[^\r\n]*/gi, `Content-Transfer-Encoding: ${cte}`)
      : `Content-Transfer-Encoding: ${cte}\r\n${m}`;
  },
  nuls(m, r) {
    const b = m.split("");
    for (let i = 0, n = 1 + int(r, 30); i < n; i++) b.splice(int(r, b.length + 1), 0, "\u0000");
    return b.join("");
  },
  longLine(m, r) {
    const at = int(r, m.length + 1);
    return m.slice(0, at) + pick(r, ["A", "=", "=\r", "\r"]).repeat(10_000 + int(r, 500_000)) + m.slice(at);
  },
  splice: (m, r, other) => m.slice(0, int(r, m.length + 1)) + other.slice(int(r, other.length + 1)),
  encodedWords: (m, r) =>
    `Subject: ${pick(r, ["=?bogus?Q?a=ZZ?=", "=?utf-8?B?####?=", "=?utf-8*en?Q?x?=", "=?=?=?", `=?utf-8?Q?${"=FF".repeat(5000)}?=`])}\r\nFrom: ${pick(r, ['"\\" <>', "@@@", "a@b.c <d@e.f> <g@h.i>", "=?x?B?AA==?= <x@y>", "<>"])}\r\n${m}`,
  lineEndings: (m, r) => (int(r, 2) === 0 ? m.replace(/\r\n/g, "\n") : m.replace(/\r?\n/g, "\r")),
  attachmentHeaders: (m, r) =>
    m.replace(/filename="?[^";\r\n]*"?/gi, () =>
      pick(r, [
        'filename="../../etc/passwd"',
        "filename*=UTF-8''%FF%FE",
        'filename=""',
        `filename="${"x".repeat(5000)}"`,
        "filename*0*=x; filename*99=y",
      ]),
    ),
};

/** Names of the mutations, in a fixed order. */
export const MUTATION_NAMES = Object.keys(MUTATIONS);

/** One to three random mutations of a random corpus message. */
export function mutateMessage(corpus: string[], r: Rand): { raw: Uint8Array; mutations: string[] } {
  let m = pick(r, corpus);
  const mutations: string[] = [];
  for (let i = 0, n = 1 + int(r, 3); i < n; i++) {
    const name = pick(r, MUTATION_NAMES);
    mutations.push(name);
    m = (MUTATIONS[name] as (m: string, r: Rand, other: string) => string)(m, r, pick(r, corpus));
  }
  return { raw: Buffer.from(m, "latin1"), mutations };
}
