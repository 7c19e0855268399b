/**
 * Secrets at rest: signing secrets and endpoint header values are sealed with AES-256-GCM.
 * Sealed form: `v1.<base64url iv(12)>.<base64url ciphertext||tag(16)>`. The key comes from `SECRETS_KEY`
 * or is generated once into `DATA_DIR/secrets.key` (mode 0600).
 */
import { createCipheriv, createDecipheriv, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

export function createSecretBox(key: Uint8Array): SecretBox {
  if (key.length !== 32) throw new Error("secrets key must be 32 bytes");
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
      return `v1.${iv.toString("base64url")}.${ct.toString("base64url")}`;
    },
    open(sealed) {
      const [version, ivText, ctText] = sealed.split(".");
      if (version !== "v1" || !ivText || !ctText) throw new Error("not a sealed secret");
      const iv = Buffer.from(ivText, "base64url");
      const all = Buffer.from(ctText, "base64url");
      const decipher = createDecipheriv("aes-256-gcm", key, iv);
      decipher.setAuthTag(all.subarray(all.length - 16));
      return Buffer.concat([decipher.update(all.subarray(0, all.length - 16)), decipher.final()]).toString(
        "utf8",
      );
    },
  };
}

/** Reads `DATA_DIR/<name>` or creates it (mode 0600) with `make()`; returns its content. */
export function readOrCreateSecretFile(dataDir: string, name: string, make: () => string): string {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, name);
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  const value = make();
  writeFileSync(path, `${value}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(path, 0o600);
  return value;
}

export function loadSecretsKey(dataDir: string, configured: Uint8Array | null): Uint8Array {
  if (configured) return configured;
  const hex = readOrCreateSecretFile(dataDir, "secrets.key", () => randomBytes(32).toString("hex"));
  return Uint8Array.from(Buffer.from(hex, "hex"));
}

/** Constant-time string comparison (lengths compared first; lengths of tokens are not secret). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
