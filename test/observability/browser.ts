/**
 * Debian's Chromium (`apt-get install chromium`), headless, driven by `playwright-core`. Never a
 * downloaded browser: when `/usr/bin/chromium` is missing the browser tests skip and say why.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";

export const CHROMIUM = "/usr/bin/chromium";

/** Why the browser tests cannot run here, or `undefined` when they can. */
export const noBrowser = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium; .ci/run does)`;

/** Launch headless Chromium. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
}

/**
 * One headless Chromium for the describe block it is called in: launched before its tests,
 * closed after them. Answers the browser (call it inside a test or hook).
 */
export function useChromium(): () => Browser {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  }, 30_000);
  afterAll(async () => {
    await browser?.close();
  });
  return () => {
    if (!browser) throw new Error("useChromium(): the browser is not launched yet");
    return browser;
  };
}

/** Collects `page`'s script errors and console errors into `problems` (a test expects none). */
export function watchProblems(page: Page, problems: string[]): void {
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
}

/**
 * `text` as the dashboard shows a value joined with others: between FSI and PDI (U+2068,
 * U+2069), so a direction override inside it cannot reverse its neighbours.
 */
export function isolated(text: string): string {
  return `\u2068${text}\u2069`;
}
