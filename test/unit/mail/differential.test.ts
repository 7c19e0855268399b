// Our parser against mailparser (nodemailer's parser, a dev dependency used only here) over every
// corpus message: subject, addresses, text, attachment count, filenames and SHA-256. A difference
// must be listed, with its reason, in the table of docs/parsing.md ("Where mailhook and mailparser
// differ"); an unlisted difference fails, and so does a listed one that no longer occurs.
// Runs only when MAILHOOK_CORPUS_DIR is set (test/support/paths.ts).
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { type AddressObject, type EmailAddress, type ParsedMail, simpleParser } from "mailparser";
import { sanitizeFilename } from "../../../services/mail/mime/filename.ts";
import { type ParsedMessage, parseMessage } from "../../../services/mail/parse.ts";
import { CORPUS_DIR, corpusEmailFiles, corpusPath, needsCorpus, REPO_ROOT } from "../../support/paths.ts";

const FIELDS = ["subject", "from", "to", "cc", "text", "attachments", "filenames", "sha256"] as const;
type Field = (typeof FIELDS)[number];

/** Whitespace runs are one space: line breaks and wrapping are presentation, not content. */
const squash = (text: string): string => text.replace(/\s+/g, " ").trim();

function theirAddresses(value: AddressObject | AddressObject[] | undefined): string[] {
  const out: string[] = [];
  const add = (address: EmailAddress): void => {
    if (address.group) address.group.forEach(add);
    else if (address.address) out.push(`${address.address.toLowerCase()} ${squash(address.name)}`);
  };
  for (const object of value === undefined ? [] : Array.isArray(value) ? value : [value])
    object.value.forEach(add);
  return out;
}

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex");
const sorted = (list: string[]): string => [...list].sort().join("\n");

/** The fields on which the two parses of one message disagree. */
function differences(ours: ParsedMessage, theirs: ParsedMail): Field[] {
  const found = new Set<Field>();
  const message = ours.message;
  if (squash(message.subject) !== squash(theirs.subject ?? "")) found.add("subject");
  for (const field of ["from", "to", "cc"] as const) {
    const mine = message[field].map((p) => `${p.email} ${squash(p.name)}`);
    if (mine.join("\n") !== theirAddresses(theirs[field]).join("\n")) found.add(field);
  }
  if (squash(message.text) !== squash(theirs.text ?? "")) found.add("text");
  const mine = ours.attachments;
  if (mine.length !== theirs.attachments.length) {
    found.add("attachments");
  } else {
    const theirHashes = theirs.attachments.map((a) => sha256(a.content));
    if (sorted(mine.map((a) => a.descriptor.sha256 ?? "")) !== sorted(theirHashes)) found.add("sha256");
    // Names are compared after our sanitising (docs/parsing.md "Filenames"); a part mailparser
    // leaves unnamed gets our `attachment-<n>.<ext>`, which is not a disagreement.
    const theirNames = theirs.attachments.map((a) => (a.filename ? sanitizeFilename(a.filename) : ""));
    mine.forEach((a, i) => {
      const name = theirNames[i];
      if (name && name !== a.descriptor.filename) found.add("filenames");
    });
  }
  return FIELDS.filter((f) => found.has(f));
}

/** The table of docs/parsing.md: fixture → the fields listed as differing, with a reason. */
function listedDifferences(): Map<string, Set<string>> {
  const doc = readFileSync(join(REPO_ROOT, "docs", "parsing.md"), "utf8");
  const section = doc.split("## Where mailhook and mailparser differ")[1]?.split(/\n## /)[0] ?? "";
  const listed = new Map<string, Set<string>>();
  for (const line of section.split("\n")) {
    const row = /^\| `([^`]+)` \| ([a-z0-9, ]+) \| ([a-z0-9, -]+) \|/.exec(line);
    if (!row?.[1] || !row[2]) continue;
    listed.set(row[1], new Set(row[2].split(",").map((f) => f.trim())));
  }
  return listed;
}

describe.skipIf(!CORPUS_DIR)(needsCorpus("differential parse against mailparser"), () => {
  test("every difference from mailparser on the corpus is listed in docs/parsing.md with its reason", async () => {
    const files = corpusEmailFiles();
    expect(files.length).toBeGreaterThan(300);
    const listed = listedDifferences();
    const unlisted: string[] = [];
    const stale: string[] = [];
    for (const file of files) {
      const raw = readFileSync(file);
      const name = relative(corpusPath("emails"), file);
      const ours = await parseMessage(new Uint8Array(raw), {
        receivedAt: new Date("2024-01-01T00:00:00Z"),
        inboundDomain: "in.localhost",
        newUuid: () => "00000000-0000-4000-8000-000000000000",
      });
      const theirs = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true });
      const found = differences(ours, theirs);
      const expected = listed.get(name) ?? new Set<string>();
      const extra = found.filter((f) => !expected.has(f));
      if (extra.length > 0) unlisted.push(`${name}: ${extra.join(", ")}`);
      const gone = [...expected].filter((f) => !found.includes(f as Field));
      if (gone.length > 0) stale.push(`${name}: ${gone.join(", ")}`);
    }
    expect({ unlisted, stale }).toEqual({ unlisted: [], stale: [] });
  }, 120_000);
});
