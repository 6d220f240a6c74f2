/**
 * Debian's Chromium (`apt-get install chromium`), headless, driven by `playwright-core`. Never a
 * downloaded browser: when `/usr/bin/chromium` is missing the browser tests skip and say why.
 */
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

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
