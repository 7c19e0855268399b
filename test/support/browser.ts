/**
 * Debian's Chromium for the browser tests, driven by playwright-core: where it is, the flags it runs
 * with (headless, no background traffic), where screenshots go, and one launcher that fails with a
 * clear message when the browser is missing. `MAILHOOK_SKIP_BROWSER=1` skips the browser suites.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

/** Debian's Chromium (`.ci/run` installs it). */
export const CHROMIUM = "/usr/bin/chromium";

/** True when the browser suites are to be skipped. */
export const SKIP_BROWSER = process.env.MAILHOOK_SKIP_BROWSER === "1";

/** Where the browser suites leave their screenshots. */
export const SCREENSHOTS = join(import.meta.dir, "../../test-output/screenshots");

const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/**
 * Starts Chromium on a fresh profile, removed again when the context closes (and makes the screenshot
 * folder); throws if the browser is not installed.
 */
export async function launchChromium(): Promise<BrowserContext> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's Chromium (apt-get install -y chromium; .ci/run does) or set MAILHOOK_SKIP_BROWSER=1`,
    );
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), "mailhook-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1360, height: 860 },
  });
  context.on("close", () => rmSync(profile, { recursive: true, force: true }));
  return context;
}
