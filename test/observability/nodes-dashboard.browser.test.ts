/**
 * The dashboard's Nodes card and Fleet table in real headless Chromium: they show the nodes of
 * `GET /v1/nodes` (live and stale, with their roles, host, transport, load and capabilities) and
 * follow a node going stale; on a serverless platform the table shows the route's note. The page
 * runs under its own Content-Security-Policy; any script error fails the test.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { NodeInfo } from "../../src/store/port.ts";
import { type Harness, startHarness, testHandlers } from "../http/harness.ts";
import { isolated, noBrowser, useChromium, watchProblems } from "./browser.ts";

if (noBrowser) {
  console.warn(`nodes dashboard browser tests skipped: ${noBrowser}`);
}

function nodeInfo(id: string, overrides: Partial<NodeInfo> = {}): NodeInfo {
  return {
    id,
    roles: ["api", "worker"],
    version: "2.0.0",
    handlers: ["echo"],
    capabilities: { region: "eu", gpu: "a100" },
    concurrency: 10,
    inFlight: 4,
    transport: "streams",
    hostname: "box-1",
    pid: 321,
    startedAt: Date.UTC(2026, 0, 1),
    ...overrides,
  };
}

describe.skipIf(noBrowser !== undefined)("the dashboard's Nodes in headless Chromium", () => {
  const browser = useChromium();
  let server: Harness | undefined;
  let page: Page | undefined;
  let problems: string[] = [];

  afterEach(async () => {
    await page?.close();
    page = undefined;
    await server?.close();
    server = undefined;
  });

  async function open(h: Harness): Promise<Page> {
    problems = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    watchProblems(page, problems);
    await page.goto(`${h.origin}/dashboard?refresh=1`);
    return page;
  }

  async function card(p: Page): Promise<Record<string, string>> {
    const labels = await p.locator("#nodes-stats dt").allTextContents();
    const values = await p.locator("#nodes-stats dd").allTextContents();
    return Object.fromEntries(labels.map((label, i) => [label, values[i] ?? ""]));
  }

  it("lists the fleet and follows a node going stale", async () => {
    // The store's clock moves on when the test says so: node-b goes stale then, not when a slow
    // page load happens to outlast its TTL.
    let skew = 0;
    const store = new MemoryStore({ clock: () => Date.now() + skew });
    await store.heartbeatNode(nodeInfo("node-a"), 600_000);
    await store.heartbeatNode(nodeInfo("node-b", { inFlight: 1, capabilities: {} }), 20_000);
    server = await startHarness({
      store,
      handlers: testHandlers().handlers,
      app: { platform: "node" },
    });
    const p = await open(server);
    await p.getByRole("region", { name: "Nodes", exact: true }).waitFor();
    await p.locator("#nodes-stats dd").first().waitFor();
    expect(await card(p)).toEqual({
      Live: "2",
      Stale: "0",
      "In flight": "5 / 20",
      Deployment: "node",
    });
    const rows = p.locator("#nodes tr");
    expect(await rows.count()).toBe(2);
    const first = await rows.nth(0).locator("td").allTextContents();
    expect(first.slice(0, 8)).toEqual([
      "node-a",
      "live",
      "api, worker",
      "box-1:321",
      "streams",
      "4 / 10",
      `${isolated("region")}=${isolated("eu")}, ${isolated("gpu")}=${isolated("a100")}`,
      "2.0.0",
    ]);
    expect(first[8]).toMatch(/^(now|\d.* ago)$/);
    expect((await rows.nth(1).locator("td").allTextContents())[6]).toBe("–");

    // node-b's TTL passes (it is dropped only after ten): the next poll shows it stale.
    skew = 30_000;
    await p.waitForFunction(
      () => document.querySelector("#nodes tr:nth-child(2) .badge")?.textContent === "stale",
      undefined,
      { timeout: 10_000 },
    );
    expect(await card(p)).toMatchObject({ Live: "1", Stale: "1", "In flight": "4 / 10" });
    expect(problems).toEqual([]);
  });

  it("shows the note of a serverless platform", async () => {
    server = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: { platform: "vercel" },
    });
    const p = await open(server);
    await p.locator("#nodes td.empty").waitFor();
    expect(await p.locator("#nodes td.empty").textContent()).toMatch(
      /^vercel is serverless: no long-lived nodes/,
    );
    expect(await card(p)).toEqual({
      Live: "0",
      Stale: "0",
      "In flight": "–",
      Deployment: "vercel",
    });
    expect(problems).toEqual([]);
  });
});
