/** The STARTTLS key pair is checked at start: each way it can be unusable is a ConfigError naming it. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../../services/config.ts";
import { loadTlsPair } from "../../services/ingest/smtp.ts";
import { selfSignedCert } from "../support/tls.ts";

const dir = mkdtempSync(join(tmpdir(), "mh-tlscfg-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A self-signed EC certificate and its key, as the config names them. */
function pair(): { tlsCert: string; tlsKey: string } {
  const { cert, key } = selfSignedCert();
  return { tlsCert: cert, tlsKey: key };
}

function problem(config: { tlsCert: string | null; tlsKey: string | null }): string {
  try {
    loadTlsPair(config);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems.join("\n");
  }
  throw new Error("expected a ConfigError");
}

describe("STARTTLS key pair", () => {
  const a = pair();
  const b = pair();

  test("a good pair is read; none configured is null", () => {
    const loaded = loadTlsPair(a);
    expect(loaded?.cert.toString()).toContain("BEGIN CERTIFICATE");
    expect(loaded?.key.toString()).toContain("PRIVATE KEY");
    expect(loadTlsPair({ tlsCert: null, tlsKey: null })).toBeNull();
  });

  test("a missing file, a file that is not PEM and a key of another certificate are each named", () => {
    expect(problem({ tlsCert: a.tlsCert, tlsKey: join(dir, "nope.key") })).toContain(
      `TLS_CERT/TLS_KEY: cannot read ${join(dir, "nope.key")}`,
    );
    const garbage = join(dir, "garbage.pem");
    writeFileSync(garbage, "not a certificate");
    expect(problem({ tlsCert: garbage, tlsKey: a.tlsKey })).toContain("not a usable PEM certificate");
    expect(problem({ tlsCert: a.tlsCert, tlsKey: b.tlsKey })).toContain("KEY_VALUES_MISMATCH");
  });
});
