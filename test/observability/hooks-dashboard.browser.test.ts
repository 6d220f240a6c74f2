/**
 * The dashboard's Webhooks table in real headless Chromium: it shows each endpoint of
 * `GET /v1/hooks` (scheme, handler) with its last delivery (outcome, the sender's event id, the
 * job) and follows new deliveries — a signed Stripe delivery, then its redelivery, posted while
 * the page polls. A hostile event id is shown as text. The page runs under its own
 * Content-Security-Policy; any script error fails the test.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness, testHandlers } from "../http/harness.ts";
import { githubSender, stripeSender } from "../webhooks/senders.ts";
import { noBrowser, useChromium, watchProblems } from "./browser.ts";

if (noBrowser) {
  console.warn(`webhooks dashboard browser tests skipped: ${noBrowser}`);
}

describe.skipIf(noBrowser !== undefined)("the dashboard's Webhooks in headless Chromium", () => {
  const browser = useChromium();
  let server: Harness | undefined;
  let page: Page | undefined;
  const problems: string[] = [];

  afterEach(async () => {
    await page?.close();
    await server?.close();
  });

  it("lists the endpoints and follows their deliveries", async () => {
    const stripe = stripeSender();
    const github = githubSender();
    server = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: {
        webhooks: {
          stripe: { verifier: stripe.verifier, handler: "echo" },
          github: { verifier: github.verifier, handler: "echo" },
        },
      },
    });
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    watchProblems(page, problems);
    await page.goto(`${server.origin}/dashboard?refresh=1`);
    const rows = page.locator("#hooks tr");
    await page.waitForFunction(() => document.querySelectorAll("#hooks tr td.id").length > 0);
    expect(await rows.count()).toBe(2);
    expect((await rows.nth(0).locator("td").allTextContents()).slice(0, 5)).toEqual([
      "stripe",
      "stripe",
      "echo",
      "0",
      "never",
    ]);

    const body = stripe.body("evt_<b>dash</b>");
    const first = await call(server.origin, "POST", "/v1/hooks/stripe", {
      body,
      headers: await stripe.sign(body, ""),
    });
    expect(first.status).toBe(202);
    await page.waitForFunction(
      () => document.querySelector("#hooks tr:nth-child(1) .badge")?.textContent === "accepted",
      undefined,
      { timeout: 10_000 },
    );
    const again = await call(server.origin, "POST", "/v1/hooks/stripe", {
      body,
      headers: await stripe.sign(body, ""),
    });
    expect(again.body.id).toBe(first.body.id);
    await page.waitForFunction(
      () => document.querySelector("#hooks tr:nth-child(1) .badge")?.textContent === "replayed",
      undefined,
      { timeout: 10_000 },
    );
    const cells = await rows.nth(0).locator("td").allTextContents();
    expect(cells[3]).toBe("2 (1 replayed)");
    expect(cells[4]).toMatch(/^(now|\d.* ago)$/);
    expect(cells.slice(5)).toEqual(["replayed", "evt_<b>dash</b>", first.body.id]);
    // Shown as text, never as markup.
    expect(await page.locator("#hooks b").count()).toBe(0);
    expect((await rows.nth(1).locator("td").allTextContents())[4]).toBe("never");
    expect(problems).toEqual([]);
  });
});
