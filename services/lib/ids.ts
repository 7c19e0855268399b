/**
 * Ids and secrets. Resource ids are typed and prefixed (`prj_`, `key_`, …) over a UUIDv7 so they sort
 * by creation time; event ids are plain UUIDs (docs/api.md, "Basics"). Ids are not injected: tests
 * compare shapes and prefixes, never exact values.
 */
import { randomBytes } from "node:crypto";

export type IdPrefix =
  | "prj"
  | "key"
  | "ep"
  | "rt"
  | "kid"
  | "msg"
  | "att"
  | "job"
  | "atm"
  | "mbx"
  | "dom"
  | "adr"
  | "ntf";

export function newUuid(): string {
  return Bun.randomUUIDv7();
}

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${Bun.randomUUIDv7().replaceAll("-", "")}`;
}

/** RFC 9562 layout, any version (ids here are v4, v7 and the synthetic v8), either case. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `id` is a UUID in its canonical text form (event ids are; anything else is simply not found). */
export function isUuid(id: string): boolean {
  return UUID.test(id);
}

/** URL-safe random token with `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString("base64url");
}

/** Lowercase hex SHA-256. */
export function sha256Hex(data: string | Uint8Array): string {
  return new Bun.CryptoHasher("sha256").update(data).digest("hex");
}
