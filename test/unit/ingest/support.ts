// Shared helpers for the ingest tests: fixture loading, CRLF message building and fixed parse options.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { ParseOptions } from "../../../services/mail/parse.ts";

export const FIXTURES = join(import.meta.dir, "../../fixtures/emails");

export function fixture(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(FIXTURES, name)));
}

/** A message from lines, joined with CRLF as SMTP delivers it. */
export function eml(...lines: string[]): Uint8Array {
  return new TextEncoder().encode(lines.join("\r\n"));
}

export const opts: ParseOptions = {
  receivedAt: new Date("2024-05-06T07:08:09.750Z"),
  inboundDomain: "in.localhost",
  newUuid: () => "0b6f9a9e-1c2d-4e3f-8a9b-0c1d2e3f4a5b",
};

export function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

export const TINY_PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64",
);
