import { describe, expect, test } from "bun:test";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createSecretBox,
  loadSecretsKey,
  readOrCreateSecretFile,
  safeEqual,
} from "../../../services/lib/crypto.ts";

describe("secret box", () => {
  const key = new Uint8Array(32).fill(7);

  test("round-trips and never repeats a ciphertext", () => {
    const box = createSecretBox(key);
    const a = box.seal("whsec_secret");
    const b = box.seal("whsec_secret");
    expect(a).not.toBe(b);
    expect(a).not.toContain("whsec_secret");
    expect(box.open(a)).toBe("whsec_secret");
  });

  test("refuses a tampered ciphertext or another key", () => {
    const box = createSecretBox(key);
    const sealed = box.seal("value");
    const [version, iv, ct] = sealed.split(".");
    const bytes = Buffer.from(ct ?? "", "base64url");
    // Flip one bit of the ciphertext and, separately, of the tag: each must fail authentication.
    for (const index of [0, bytes.length - 1]) {
      const flipped = Buffer.from(bytes);
      flipped[index] = (flipped[index] ?? 0) ^ 1;
      expect(() => box.open(`${version}.${iv}.${flipped.toString("base64url")}`)).toThrow();
    }
    expect(() => createSecretBox(new Uint8Array(32).fill(8)).open(sealed)).toThrow();
    expect(() => box.open("garbage")).toThrow();
  });

  test("generates the key file once with mode 0600", () => {
    const dir = mkdtempSync(join(tmpdir(), "mh-key-"));
    const k1 = loadSecretsKey(dir, null);
    const k2 = loadSecretsKey(dir, null);
    expect(k1).toEqual(k2);
    expect(k1).toHaveLength(32);
    expect(statSync(join(dir, "secrets.key")).mode & 0o777).toBe(0o600);
    expect(readOrCreateSecretFile(dir, "setup-token", () => "t1")).toBe("t1");
    expect(readOrCreateSecretFile(dir, "setup-token", () => "t2")).toBe("t1");
  });

  test("safeEqual compares exactly", () => {
    expect(safeEqual("abc", "abc")).toBe(true);
    expect(safeEqual("abc", "abd")).toBe(false);
    expect(safeEqual("abc", "abcd")).toBe(false);
  });
});
