// Blob-stored message bodies (attachments/body-blobs.ts): written piece by piece to a store that takes
// pieces, and read back exactly.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { refOfBytes } from "../../../services/attachments/blob-store.ts";
import {
  bodyBlobBytes,
  bodyBlobChunks,
  putBody,
  readBody,
} from "../../../services/attachments/body-blobs.ts";
import { FsBlobStore } from "../../../services/attachments/fs-store.ts";

let dir: string;
let store: FsBlobStore;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mailhook-body-blobs-"));
  store = new FsBlobStore(join(dir, "blobs"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const MiB = 1024 * 1024;
/** A body over one piece whose piece boundaries fall inside surrogate pairs, among 2- and 3-byte characters. */
const body = `${"é".repeat(MiB - 1)}🎉${"€".repeat(MiB - 3)}🎉🎉x\ud800 lone high, then a lone low \udc00.`;

describe("bodyBlobChunks", () => {
  test("the pieces are together exactly the body's UTF-8 bytes, never a surrogate pair cut", () => {
    // each piece is copied as it comes: the next one is encoded into the same buffer
    const pieces: Buffer[] = [];
    for (const piece of bodyBlobChunks(body)) pieces.push(Buffer.from(piece));
    expect(pieces.length).toBe(3);
    expect(Buffer.compare(Buffer.concat(pieces), Buffer.from(bodyBlobBytes(body)))).toBe(0);
  });
});

describe("putBody", () => {
  test("a large body is written piece by piece under the key of its whole bytes, and read back exactly", async () => {
    const whole = bodyBlobBytes(body);
    const ref = await putBody({ blobs: store }, body);
    expect(ref).toEqual(refOfBytes(whole));
    const stored = Buffer.from(await new Response(await store.read(ref.key)).arrayBuffer());
    expect(Buffer.compare(stored, Buffer.from(whole))).toBe(0);
    // the text of those bytes: the body, its lone surrogates written (and so read) as U+FFFD
    const expected = body.slice(0, -"\ud800 lone high, then a lone low \udc00.".length);
    expect(
      (await readBody({ blobs: store }, ref.key)) === `${expected}\ufffd lone high, then a lone low \ufffd.`,
    ).toBe(true);
  });

  test("a body that starts with a byte-order mark is read back with it", async () => {
    const text = `\ufeff${"plain ASCII line\n".repeat(80_000)}`;
    const ref = await putBody({ blobs: store }, text);
    expect((await readBody({ blobs: store }, ref.key)) === text).toBe(true);
  });

  test("a store that takes no pieces gets the whole bytes", async () => {
    const puts: number[] = [];
    const blobs = {
      kind: "s3" as const,
      put: async (bytes: Uint8Array) => {
        puts.push(bytes.byteLength);
        return refOfBytes(bytes);
      },
      stat: async () => null,
      read: async () => new Blob([]),
      delete: async () => {},
    };
    const ref = await putBody({ blobs }, body);
    expect(puts).toEqual([bodyBlobBytes(body).byteLength]);
    expect(ref).toEqual(refOfBytes(bodyBlobBytes(body)));
  });
});
