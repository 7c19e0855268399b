/**
 * Process-wide metrics in the Prometheus text exposition format (version 0.0.4,
 * https://prometheus.io/docs/instrumenting/exposition_formats/).
 *
 * Hand-rolled rather than prom-client: we need three counters, one histogram and scrape-time gauges,
 * which is ~150 lines, adds no dependency and no Node-specific default collectors (prom-client's
 * event-loop and GC collectors lean on perf_hooks details that differ under Bun). Domain code calls
 * the `metrics` object (`metrics.ingestAccepted.inc({ source: "smtp" })`); gauges that live in the
 * database are read at scrape time by the `/metrics` handler and rendered with {@link renderGauge}.
 *
 * Counters are per process: with several `serve`/`worker` processes, Prometheus sums them by `instance`.
 */

/** Label values of one sample, by label name. */
export type Labels<L extends string> = { readonly [K in L]: string };

/** Anything that renders itself in the exposition format. */
export interface Family {
  render(): string;
}

const families: Family[] = [];

/** Escapes a label value per the exposition format (backslash, double quote, line feed). */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function labelText(names: readonly string[], values: readonly string[], extra = ""): string {
  const parts = names.map((n, i) => `${n}="${escapeLabel(values[i] ?? "")}"`);
  if (extra) parts.push(extra);
  return parts.length ? `{${parts.join(",")}}` : "";
}

function formatNumber(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (n === Number.POSITIVE_INFINITY) return "+Inf";
  if (n === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(n);
}

function header(name: string, help: string, type: string): string {
  return `# HELP ${name} ${help.replace(/\\/g, "\\\\").replace(/\n/g, "\\n")}\n# TYPE ${name} ${type}\n`;
}

/** A monotonically increasing count, one series per label combination. */
export class Counter<L extends string = never> implements Family {
  private readonly series = new Map<string, { values: string[]; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
  ) {}

  /** Adds `by` (default 1, must be ≥ 0) to the series of `labels`. */
  inc(labels: Labels<L>, by = 1): void {
    if (!(by >= 0)) return;
    const values = this.labelNames.map((n) => labels[n]);
    const key = values.join("\u0000");
    const s = this.series.get(key);
    if (s) s.value += by;
    else this.series.set(key, { values, value: by });
  }

  /** Current value of one series (0 when never incremented); for tests and diagnostics. */
  get(labels: Labels<L>): number {
    return this.series.get(this.labelNames.map((n) => labels[n]).join("\u0000"))?.value ?? 0;
  }

  render(): string {
    let out = header(this.name, this.help, "counter");
    for (const s of this.series.values()) {
      out += `${this.name}${labelText(this.labelNames, s.values)} ${formatNumber(s.value)}\n`;
    }
    return out;
  }
}

/** A distribution over fixed cumulative buckets (`le` upper bounds), one series per label combination. */
export class Histogram<L extends string = never> implements Family {
  private readonly series = new Map<
    string,
    { values: string[]; counts: number[]; sum: number; count: number }
  >();

  /**
   * @param scale multiplies every observed value before bucketing (e.g. 0.001 so callers observe
   *   milliseconds while the metric is in seconds, Prometheus' base unit).
   */
  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    readonly buckets: readonly number[],
    readonly scale = 1,
  ) {}

  /** Records one observation (in the caller's unit; see `scale`). */
  observe(value: number, labels: Labels<L>): void {
    if (!Number.isFinite(value)) return;
    const v = value * this.scale;
    const values = this.labelNames.map((n) => labels[n]);
    const key = values.join("\u0000");
    let s = this.series.get(key);
    if (!s) {
      s = { values, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) {
      if (v <= (this.buckets[i] as number)) s.counts[i] = (s.counts[i] as number) + 1;
    }
    s.sum += v;
    s.count += 1;
  }

  /** Observation count of one series; for tests and diagnostics. */
  count(labels: Labels<L>): number {
    return this.series.get(this.labelNames.map((n) => labels[n]).join("\u0000"))?.count ?? 0;
  }

  render(): string {
    let out = header(this.name, this.help, "histogram");
    for (const s of this.series.values()) {
      this.buckets.forEach((b, i) => {
        out += `${this.name}_bucket${labelText(this.labelNames, s.values, `le="${formatNumber(b)}"`)} ${s.counts[i]}\n`;
      });
      out += `${this.name}_bucket${labelText(this.labelNames, s.values, 'le="+Inf"')} ${s.count}\n`;
      out += `${this.name}_sum${labelText(this.labelNames, s.values)} ${formatNumber(s.sum)}\n`;
      out += `${this.name}_count${labelText(this.labelNames, s.values)} ${s.count}\n`;
    }
    return out;
  }
}

/** One gauge sample read at scrape time. */
export interface GaugeSample {
  labels?: Readonly<Record<string, string>>;
  value: number;
}

/** Renders a gauge family from samples computed at scrape time (e.g. counts read from the database). */
export function renderGauge(name: string, help: string, samples: readonly GaugeSample[]): string {
  let out = header(name, help, "gauge");
  for (const s of samples) {
    const names = Object.keys(s.labels ?? {});
    out += `${name}${labelText(
      names,
      names.map((n) => s.labels?.[n] ?? ""),
    )} ${formatNumber(s.value)}\n`;
  }
  return out;
}

/** Adds a family to what {@link renderProcessMetrics} renders; returns it. */
export function register<F extends Family>(family: F): F {
  families.push(family);
  return family;
}

/** Every registered counter and histogram, in registration order. */
export function renderProcessMetrics(): string {
  return families.map((f) => f.render()).join("");
}

/** Content type of the text exposition format. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/** Seconds; covers a fast local receiver (5 ms) up to the 60 s maximum endpoint timeout. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The service's metrics. Label values are small closed sets (codes, sources, outcomes), never ids. */
export const metrics = {
  /** Messages stored with their events; `source` is `smtp` or `api`. */
  ingestAccepted: register(
    new Counter("mailhook_ingest_accepted_total", "Messages accepted by ingest.", ["source"]),
  ),
  /** Messages refused; `code` is the error code (`ingest.too_large`, `smtp.unknown_recipient`, …). */
  ingestRejected: register(
    new Counter("mailhook_ingest_rejected_total", "Messages rejected by ingest, by error code.", [
      "source",
      "code",
    ]),
  ),
  /** Duplicate messages (same Message-ID and bytes) that created nothing new. */
  ingestDuplicates: register(
    new Counter(
      "mailhook_ingest_duplicates_total",
      "Messages ingested again with the same Message-ID and bytes (stored once).",
      ["source"],
    ),
  ),
  /**
   * Group commits of the intake's writes (ingest/group-commit.ts): transactions sent, and the message
   * statements they carried (their ratio is the average batch size); `retried` counts statements of
   * failed batches that were run again one by one.
   */
  ingestCommits: register(
    new Counter("mailhook_ingest_commits_total", "Transactions the intake's group commit sent.", []),
  ),
  ingestCommittedStatements: register(
    new Counter(
      "mailhook_ingest_commit_statements_total",
      "Message store statements sent in group commits, by whether they were retried alone after a failed batch.",
      ["retried"],
    ),
  ),
  /**
   * Wall time of one delivery attempt, observed in milliseconds. `outcome` is the event status the
   * attempt led to: `delivered`, `retry` (retryable failure, attempts remain) or `dead`.
   */
  attemptLatency: register(
    new Histogram(
      "mailhook_delivery_attempt_duration_seconds",
      "Duration of webhook delivery attempts, by outcome.",
      ["outcome"],
      LATENCY_BUCKETS,
      0.001,
    ),
  ),
  /**
   * custom_json mapper runtime errors by `code` (`mapper.regex_timeout`, …); `stage` is `delivery`
   * (the event goes `dead`) or `preview` (the playground / `POST /v1/mapper/preview`).
   */
  mapperErrors: register(
    new Counter("mailhook_mapper_errors_total", "custom_json mapper runtime errors, by stage and code.", [
      "stage",
      "code",
    ]),
  ),
  /**
   * Messages accepted without a spam verdict because rspamd (`RSPAMD_URL`) did not give one: `reason`
   * is `timeout`, `unavailable` (connection refused or reset) or `bad_response`.
   */
  spamCheckFailures: register(
    new Counter(
      "mailhook_spam_check_failures_total",
      "Messages accepted without a spam verdict because the scanner failed, by reason.",
      ["reason"],
    ),
  ),
  /** SMTP authentications (SPF/DKIM/DMARC/ARC) that did not finish in time or failed (reported `temperror`). */
  authDegraded: register(
    new Counter(
      "mailhook_auth_degraded_total",
      "SMTP sender authentications reported temperror because they ran out of time or failed.",
      ["reason"],
    ),
  ),
} as const;
