/**
 * The hand-rolled Prometheus registry: exposition format, label escaping, cumulative histogram buckets.
 */
import { describe, expect, test } from "bun:test";
import { Counter, Histogram, renderGauge } from "../../../services/lib/metrics.ts";

describe("metrics registry", () => {
  test("a counter renders HELP, TYPE and one line per label combination", () => {
    const c = new Counter("t_requests_total", "Requests.", ["code"]);
    c.inc({ code: "a" });
    c.inc({ code: "a" }, 2);
    c.inc({ code: "b" });
    c.inc({ code: "b" }, -5); // counters never go down
    expect(c.render()).toBe(
      '# HELP t_requests_total Requests.\n# TYPE t_requests_total counter\nt_requests_total{code="a"} 3\nt_requests_total{code="b"} 1\n',
    );
    expect(c.get({ code: "a" })).toBe(3);
    expect(c.get({ code: "zzz" })).toBe(0);
  });

  test("label values escape backslash, double quote and line feed", () => {
    const c = new Counter("t_escape_total", "Escapes.", ["v"]);
    c.inc({ v: 'a\\b"c\nd' });
    expect(c.render()).toContain('t_escape_total{v="a\\\\b\\"c\\nd"} 1\n');
  });

  test("histogram buckets are cumulative, scaled, and end with +Inf, _sum and _count", () => {
    const h = new Histogram("t_latency_seconds", "Latency.", ["outcome"], [0.01, 0.1, 1], 0.001);
    for (const ms of [5, 50, 50, 500, 5000]) h.observe(ms, { outcome: "success" });
    h.observe(Number.NaN, { outcome: "success" }); // ignored
    const lines = h.render().split("\n");
    expect(lines).toContain('t_latency_seconds_bucket{outcome="success",le="0.01"} 1');
    expect(lines).toContain('t_latency_seconds_bucket{outcome="success",le="0.1"} 3');
    expect(lines).toContain('t_latency_seconds_bucket{outcome="success",le="1"} 4');
    expect(lines).toContain('t_latency_seconds_bucket{outcome="success",le="+Inf"} 5');
    expect(lines).toContain('t_latency_seconds_count{outcome="success"} 5');
    const sum = lines.find((l) => l.startsWith("t_latency_seconds_sum"));
    expect(Number(sum?.split(" ")[1])).toBeCloseTo(5.605, 6);
    expect(h.count({ outcome: "success" })).toBe(5);
  });

  test("a gauge renders samples with and without labels", () => {
    expect(renderGauge("t_g", "G.", [{ value: 1 }, { labels: { q: "x" }, value: 2.5 }])).toBe(
      '# HELP t_g G.\n# TYPE t_g gauge\nt_g 1\nt_g{q="x"} 2.5\n',
    );
  });
});
