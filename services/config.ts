/**
 * The only reader of the environment (README.md#configuration). `loadConfig` parses every variable once at
 * start; a bad value stops start-up with one line per bad variable (`ConfigError`).
 */
import { isIP } from "node:net";
import { resolve } from "node:path";
import { DEFAULT_CODE_COPIES, MAX_CODE_COPIES } from "../mapper/copies.ts";
import { type DnsServer, parseDnsServer } from "./lib/dns.ts";
import { DEFAULT_RETRY_SCHEDULE_TEXT, parseRetrySchedule, RetryScheduleError } from "./lib/durations.ts";

/** Why a DATABASE_URL does not parse, without quoting it (it may hold a password). */
export const UNPARSABLE_URL =
  "DATABASE_URL is not a valid URL: percent-encode special characters in the user name and password " +
  "(# as %23, / as %2F, ? as %3F, @ as %40, a space as %20)";

/**
 * S3 connection settings, from `S3_BUCKET`, `S3_ENDPOINT`, `S3_REGION`, `S3_ACCESS_KEY_ID`,
 * `S3_SECRET_ACCESS_KEY`; what attachments/s3-store.ts connects with.
 */
export interface S3Config {
  bucket: string;
  /** e.g. `https://s3.eu-west-1.amazonaws.com` or a MinIO/R2 URL; omitted → AWS for `region` */
  endpoint?: string;
  region?: string;
  accessKeyId: string;
  secretAccessKey: string;
}

export interface Config {
  host: string;
  port: number;
  smtpHost: string;
  /** 0 disables the SMTP listener */
  smtpPort: number;
  dataDir: string;
  databaseUrl: string | null;
  publicBaseUrl: string;
  inboundDomain: string;
  /** null → generated once into `DATA_DIR/setup-token` */
  setupToken: string | null;
  allowPrivateEndpoints: boolean;
  /** delays before attempts 2..n, in ms */
  retrySchedule: number[];
  blobStore: "fs" | "s3";
  s3: S3Config | null;
  /** 32-byte key for AES-256-GCM; null → generated once into `DATA_DIR/secrets.key` */
  secretsKey: Uint8Array | null;
  /** per-project attachment storage quota */
  projectQuotaBytes: number;
  retentionDays: number;
  /** days a job that ended (a bulk replay done or failed, a notification given up) is kept */
  jobRetentionDays: number;
  tlsCert: string | null;
  tlsKey: string | null;
  smtpMaxConnections: number;
  /** concurrent SMTP connections per client address (IPv4-mapped IPv6 counts as IPv4); more → 421 4.7.0 */
  smtpMaxConnectionsPerIp: number;
  /** RCPT per SMTP transaction; more → 452 4.5.3 */
  smtpMaxRecipients: number;
  /** seconds an SMTP connection may stay open; then 421 4.4.2 once no DATA is in progress (ingest/smtp-limits.ts) */
  smtpSessionTimeoutS: number;
  /** seconds without a byte from an SMTP client that owes input before it is disconnected */
  smtpIdleTimeoutS: number;
  /** seconds a DATA transfer gets before the minimum rate applies */
  smtpDataTimeoutS: number;
  /** after that grace, each this many bytes received extend the DATA deadline by a second (a minimum rate) */
  smtpDataMinBytesPerS: number;
  /** largest JSON request body of the API, in bytes (the raw upload takes the message limit instead) */
  apiMaxJsonBytes: number;
  /** messages parsed at once per process (memory bound under bursts of large mail) */
  ingestConcurrency: number;
  workerConcurrency: number;
  /** consecutive retryable failures that open an endpoint's circuit (delivery/circuit.ts) */
  endpointFailureThreshold: number;
  /** mapper worker threads (piscina) per process */
  mapperThreads: number;
  /** `SENDER_AUTH_THREAD`: SMTP sender authentication runs on a thread of its own (trust/auth-thread.ts) */
  senderAuthThread: boolean;
  /** copies of the mapper's evaluator code a mapper's vars are spread over (mapper/copies.ts; 0: off) */
  mapperCodeCopies: number;
  /**
   * Delivery lease length in ms: how long a crashed worker's claimed events wait before another worker
   * takes them. Must outlast the longest attempt (endpoint `timeout_s`, at most 60 s) plus body building.
   */
  workerLeaseMs: number;
  /** how long start-up waits for an unreachable Postgres (seconds) */
  databaseWaitS: number;
  logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /** null → `/metrics` is open; set → it requires `Authorization: Bearer <token>` (api/ops.ts) */
  metricsToken: string | null;
  /** `DNS_SERVERS`: the resolvers every DNS lookup asks; null → the system's; [] (`none`) → no lookups (lib/dns.ts) */
  dnsServers: DnsServer[] | null;
  /** `TRUSTED_AUTHSERV_IDS`, lowercased: whose Authentication-Results count for mail not taken in over SMTP */
  trustedAuthservIds: string[];
  /** `RSPAMD_URL`: the rspamd worker that scores every message (`/checkv2`); null → no spam verdicts */
  rspamdUrl: string | null;
}

export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  }
}

type Env = Record<string, string | undefined>;

/** Parses the environment; throws `ConfigError` naming every bad variable. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string): string | null => {
    const v = env[name];
    return v === undefined || v.trim() === "" ? null : v.trim();
  };
  const int = (name: string, def: number, min: number, max: number): number => {
    const v = str(name);
    if (v === null) return def;
    if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
      problems.push(`${name}=${JSON.stringify(v)}: expected an integer from ${min} to ${max}`);
      return def;
    }
    return Number(v);
  };
  const bool = (name: string, def: boolean): boolean => {
    const v = str(name)?.toLowerCase();
    if (v === undefined) return def;
    if (["1", "true", "yes", "on"].includes(v)) return true;
    if (["0", "false", "no", "off"].includes(v)) return false;
    problems.push(`${name}=${JSON.stringify(v)}: expected true or false`);
    return def;
  };
  const hostValue = (name: string, def: string): string => {
    const v = str(name) ?? def;
    if (!(isIP(v) || /^[A-Za-z0-9.-]+$/.test(v))) problems.push(`${name}=${JSON.stringify(v)}: not a host`);
    return v;
  };

  const host = hostValue("HOST", "127.0.0.1");
  const port = int("PORT", 8080, 0, 65535);
  const smtpHost = hostValue("SMTP_HOST", "127.0.0.1");
  const smtpPort = int("SMTP_PORT", 2525, 0, 65535);
  const dataDir = resolve(str("DATA_DIR") ?? "./data");

  const databaseUrl = str("DATABASE_URL");
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push("DATABASE_URL: expected a postgres:// or postgresql:// URL");
  } else if (databaseUrl !== null && !URL.canParse(databaseUrl)) {
    // Never quote the value: it may hold a password.
    problems.push(`DATABASE_URL: ${UNPARSABLE_URL.replace("DATABASE_URL is ", "")}`);
  }

  let publicBaseUrl = str("PUBLIC_BASE_URL") ?? `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  try {
    const u = new URL(publicBaseUrl);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("scheme");
    publicBaseUrl = publicBaseUrl.replace(/\/+$/, "");
  } catch {
    problems.push(`PUBLIC_BASE_URL=${JSON.stringify(publicBaseUrl)}: expected an http(s) URL`);
  }

  const inboundDomain = (str("INBOUND_DOMAIN") ?? "in.localhost").toLowerCase();
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(inboundDomain)) {
    problems.push(`INBOUND_DOMAIN=${JSON.stringify(inboundDomain)}: not a domain name`);
  }

  const setupToken = str("SETUP_TOKEN");
  if (setupToken !== null && setupToken.length < 16) {
    problems.push("SETUP_TOKEN: must be at least 16 characters");
  }

  let retrySchedule: number[] = [];
  try {
    retrySchedule = parseRetrySchedule(str("RETRY_SCHEDULE") ?? DEFAULT_RETRY_SCHEDULE_TEXT);
  } catch (err) {
    if (!(err instanceof RetryScheduleError)) throw err;
    problems.push(`RETRY_SCHEDULE: ${err.message}`);
  }

  const blobStoreRaw = (str("BLOB_STORE") ?? "fs").toLowerCase();
  let blobStore: "fs" | "s3" = "fs";
  let s3: S3Config | null = null;
  if (blobStoreRaw === "s3") {
    blobStore = "s3";
    const missing = ["S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"].filter((n) => str(n) === null);
    for (const n of missing) problems.push(`${n}: required when BLOB_STORE=s3`);
    const endpoint = str("S3_ENDPOINT");
    if (endpoint !== null && !/^https?:\/\//.test(endpoint))
      problems.push("S3_ENDPOINT: expected an http(s) URL");
    s3 = {
      bucket: str("S3_BUCKET") ?? "",
      accessKeyId: str("S3_ACCESS_KEY_ID") ?? "",
      secretAccessKey: str("S3_SECRET_ACCESS_KEY") ?? "",
      ...(endpoint ? { endpoint } : {}),
      ...(str("S3_REGION") ? { region: str("S3_REGION") as string } : {}),
    };
  } else if (blobStoreRaw !== "fs") {
    problems.push(`BLOB_STORE=${JSON.stringify(blobStoreRaw)}: expected fs or s3`);
  }

  let secretsKey: Uint8Array | null = null;
  const keyText = str("SECRETS_KEY");
  if (keyText !== null) {
    const bytes = decodeKey(keyText);
    if (bytes === null) problems.push("SECRETS_KEY: expected 32 bytes as 64 hex characters or base64");
    secretsKey = bytes;
  }

  const tlsCert = str("TLS_CERT");
  const tlsKey = str("TLS_KEY");
  if ((tlsCert === null) !== (tlsKey === null)) problems.push("TLS_CERT and TLS_KEY: set both or neither");

  const logLevelRaw = (str("LOG_LEVEL") ?? str("MAILHOOK_LOG_LEVEL") ?? "info").toLowerCase();
  const levels = ["debug", "info", "warn", "error", "silent"] as const;
  const logLevel = levels.find((l) => l === logLevelRaw) ?? "info";
  if (!levels.some((l) => l === logLevelRaw))
    problems.push(`LOG_LEVEL=${JSON.stringify(logLevelRaw)}: expected one of ${levels.join(", ")}`);

  const metricsToken = str("METRICS_TOKEN");
  // RFC 6750 b64token characters: what a scraper can send in an Authorization header unquoted.
  if (metricsToken !== null && !/^[A-Za-z0-9._~+/-]+=*$/.test(metricsToken)) {
    problems.push("METRICS_TOKEN: expected letters, digits and - . _ ~ + / (optionally = at the end)");
  }

  const trust = trustSettings(str, problems);

  const config: Config = {
    host,
    port,
    smtpHost,
    smtpPort,
    dataDir,
    databaseUrl,
    publicBaseUrl,
    inboundDomain,
    setupToken,
    allowPrivateEndpoints: bool("ALLOW_PRIVATE_ENDPOINTS", false),
    retrySchedule,
    blobStore,
    s3,
    secretsKey,
    projectQuotaBytes: int("PROJECT_QUOTA_BYTES", 5 * 1024 ** 3, 0, Number.MAX_SAFE_INTEGER),
    retentionDays: int("RETENTION_DAYS", 30, 1, 36500),
    jobRetentionDays: int("JOB_RETENTION_DAYS", 7, 1, 36500),
    tlsCert,
    tlsKey,
    smtpMaxConnections: int("SMTP_MAX_CONNECTIONS", 100, 1, 100000),
    smtpMaxConnectionsPerIp: int("SMTP_MAX_CONNECTIONS_PER_IP", 10, 1, 100000),
    smtpMaxRecipients: int("SMTP_MAX_RECIPIENTS", 100, 1, 100000),
    smtpSessionTimeoutS: int("SMTP_SESSION_TIMEOUT_S", 600, 1, 86400),
    smtpIdleTimeoutS: int("SMTP_IDLE_TIMEOUT_S", 60, 1, 3600),
    smtpDataTimeoutS: int("SMTP_DATA_TIMEOUT_S", 60, 1, 3600),
    smtpDataMinBytesPerS: int("SMTP_DATA_MIN_BYTES_PER_S", 32 * 1024, 1, 1024 ** 3),
    apiMaxJsonBytes: int("API_MAX_JSON_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    ingestConcurrency: int("INGEST_CONCURRENCY", 4, 1, 256),
    workerConcurrency: int("WORKER_CONCURRENCY", 32, 1, 1024),
    endpointFailureThreshold: int("ENDPOINT_FAILURE_THRESHOLD", 20, 1, 100000),
    mapperThreads: int("MAPPER_THREADS", 1, 1, 64),
    senderAuthThread: bool("SENDER_AUTH_THREAD", false),
    mapperCodeCopies: int("MAPPER_CODE_COPIES", DEFAULT_CODE_COPIES, 0, MAX_CODE_COPIES),
    workerLeaseMs: int("WORKER_LEASE_MS", 120_000, 1000, 3_600_000),
    databaseWaitS: int("DATABASE_WAIT_S", 30, 0, 3600),
    logLevel,
    metricsToken,
    ...trust,
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** `DNS_SERVERS`, `TRUSTED_AUTHSERV_IDS` and `RSPAMD_URL` (docs/security.md, "Sender authentication"). */
function trustSettings(
  str: (name: string) => string | null,
  problems: string[],
): Pick<Config, "dnsServers" | "trustedAuthservIds" | "rspamdUrl"> {
  let dnsServers: DnsServer[] | null = null;
  const dnsText = str("DNS_SERVERS");
  if (dnsText?.toLowerCase() === "none") {
    // No lookups at all (an air-gapped install, tests): every DNS-based check is temperror.
    dnsServers = [];
  } else if (dnsText !== null) {
    dnsServers = [];
    for (const entry of dnsText.split(",")) {
      const server = parseDnsServer(entry);
      if (typeof server === "string") problems.push(`DNS_SERVERS: ${server}`);
      else dnsServers.push(server);
    }
  }
  const trustedAuthservIds = (str("TRUSTED_AUTHSERV_IDS") ?? "")
    .split(",")
    .map((id) => id.trim().toLowerCase())
    .filter((id) => id !== "");
  for (const id of trustedAuthservIds) {
    // RFC 8601 §2.2: an authserv-id is a value (a token or quoted string); in practice a host name.
    if (!/^[a-z0-9._-]+$/.test(id))
      problems.push(`TRUSTED_AUTHSERV_IDS: ${JSON.stringify(id)} is not a host name`);
  }
  let rspamdUrl = str("RSPAMD_URL");
  if (rspamdUrl !== null) {
    if (!URL.canParse(rspamdUrl) || !/^https?:$/.test(new URL(rspamdUrl).protocol)) {
      problems.push("RSPAMD_URL: expected an http(s) URL");
    } else rspamdUrl = rspamdUrl.replace(/\/+$/, "");
  }
  return { dnsServers, trustedAuthservIds, rspamdUrl };
}

function decodeKey(text: string): Uint8Array | null {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Uint8Array.from(Buffer.from(text, "hex"));
  const b = Buffer.from(text, "base64");
  return b.length === 32 ? Uint8Array.from(b) : null;
}
