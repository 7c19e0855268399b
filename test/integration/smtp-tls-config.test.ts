/** The STARTTLS key pair is checked at start: each way it can be unusable is a ConfigError naming it. */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../../services/config.ts";
import { loadTlsPair } from "../../services/ingest/smtp.ts";

const dir = mkdtempSync(join(tmpdir(), "mh-tlscfg-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A self-signed EC certificate and its key, as PEM files. */
function pair(name: string): { tlsCert: string; tlsKey: string } {
  const tlsCert = join(dir, `${name}.crt`);
  const tlsKey = join(dir, `${name}.key`);
  const r = Bun.spawnSync(
    ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"].concat(
      ["-keyout", tlsKey, "-out", tlsCert, "-days", "1", "-subj", "/CN=localhost"],
    ),
    { stderr: "pipe" },
  );
  if (r.exitCode !== 0) throw new Error(`openssl failed: ${r.stderr.toString()}`);
  return { tlsCert, tlsKey };
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
  const a = pair("a");
  const b = pair("b");

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
