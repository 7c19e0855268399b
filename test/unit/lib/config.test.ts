import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../../services/config.ts";

describe("loadConfig", () => {
  test("applies the documented defaults to an empty environment", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      host: "127.0.0.1",
      port: 8080,
      smtpHost: "127.0.0.1",
      smtpPort: 2525,
      databaseUrl: null,
      publicBaseUrl: "http://127.0.0.1:8080",
      inboundDomain: "in.localhost",
      setupToken: null,
      allowPrivateEndpoints: false,
      retrySchedule: [0, 30_000, 120_000, 600_000, 1_800_000],
      blobStore: "fs",
      projectQuotaBytes: 5 * 1024 ** 3,
      retentionDays: 30,
      jobRetentionDays: 7,
      workerLeaseMs: 120_000,
      mapperCodeCopies: 8,
    });
    expect(c.dataDir).toEndWith("/data");
  });

  test("reads every variable", () => {
    const c = loadConfig({
      HOST: "0.0.0.0",
      PORT: "9000",
      SMTP_PORT: "0",
      DATA_DIR: "/tmp/mh",
      DATABASE_URL: "postgres://u@h/db",
      PUBLIC_BASE_URL: "https://hooks.example.com/",
      INBOUND_DOMAIN: "In.Example.COM",
      SETUP_TOKEN: "a-very-long-setup-token",
      ALLOW_PRIVATE_ENDPOINTS: "true",
      RETRY_SCHEDULE: "1s,2s",
      BLOB_STORE: "s3",
      S3_BUCKET: "b",
      S3_ACCESS_KEY_ID: "k",
      S3_SECRET_ACCESS_KEY: "s",
      S3_ENDPOINT: "http://127.0.0.1:9000",
      SECRETS_KEY: "ab".repeat(32),
      WORKER_LEASE_MS: "5000",
      MAPPER_CODE_COPIES: "0",
    });
    expect(c).toMatchObject({
      host: "0.0.0.0",
      port: 9000,
      smtpPort: 0,
      dataDir: "/tmp/mh",
      databaseUrl: "postgres://u@h/db",
      publicBaseUrl: "https://hooks.example.com",
      inboundDomain: "in.example.com",
      allowPrivateEndpoints: true,
      retrySchedule: [1000, 2000],
      workerLeaseMs: 5000,
      mapperCodeCopies: 0,
      blobStore: "s3",
      s3: { bucket: "b", accessKeyId: "k", secretAccessKey: "s", endpoint: "http://127.0.0.1:9000" },
    });
    expect(c.secretsKey).toHaveLength(32);
  });

  test("names every bad variable at once", () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: "http",
        DATABASE_URL: "mysql://x",
        RETRY_SCHEDULE: "soon",
        BLOB_STORE: "s3",
        ALLOW_PRIVATE_ENDPOINTS: "maybe",
        PUBLIC_BASE_URL: "ftp://x",
        SECRETS_KEY: "short",
        SETUP_TOKEN: "short",
        INBOUND_DOMAIN: "bad domain",
        TLS_CERT: "/x.pem",
        WORKER_LEASE_MS: "10",
        MAPPER_CODE_COPIES: "65",
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).message;
    for (const name of [
      "PORT",
      "DATABASE_URL",
      "RETRY_SCHEDULE",
      "S3_BUCKET",
      "ALLOW_PRIVATE_ENDPOINTS",
      "PUBLIC_BASE_URL",
      "SECRETS_KEY",
      "SETUP_TOKEN",
      "INBOUND_DOMAIN",
      "TLS_KEY",
      "WORKER_LEASE_MS",
      "MAPPER_CODE_COPIES",
    ]) {
      expect(text).toContain(name);
    }
  });

  test("a DATABASE_URL that does not parse is refused without quoting it (it may hold a password)", () => {
    let error: unknown;
    try {
      loadConfig({ DATABASE_URL: "postgres://app:pa#ss@db.internal:5432/mh" });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const text = (error as ConfigError).message;
    expect(text).toContain("DATABASE_URL: not a valid URL: percent-encode special characters");
    expect(text).not.toContain("pa#ss");
    expect(text).not.toContain("db.internal");
  });
});
