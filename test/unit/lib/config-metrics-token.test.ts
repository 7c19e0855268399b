import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig } from "../../../services/config.ts";

describe("METRICS_TOKEN", () => {
  test("is unset by default, so /metrics stays open", () => {
    expect(loadConfig({}).metricsToken).toBeNull();
    expect(loadConfig({ METRICS_TOKEN: "  " }).metricsToken).toBeNull();
  });

  test("keeps a token a scraper can send as a bearer credential", () => {
    for (const token of ["scrape-token_0123456789", "abc.DEF~ghi+/jkl==", "x"]) {
      expect(loadConfig({ METRICS_TOKEN: token }).metricsToken).toBe(token);
    }
  });

  test("refuses a token that cannot be sent unquoted in an Authorization header, naming the variable", () => {
    for (const token of ["two words", 'quote"d', "comma,separated", "=leading", "ünïcode"]) {
      let error: unknown;
      try {
        loadConfig({ METRICS_TOKEN: token });
      } catch (e) {
        error = e;
      }
      expect(error, token).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems.join("\n")).toContain("METRICS_TOKEN");
      expect((error as ConfigError).message).not.toContain(token);
    }
  });
});
