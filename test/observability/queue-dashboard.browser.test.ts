/**
 * The dashboard's Queue card in real headless Chromium: on the Redis Streams transport it shows
 * the queue's figures from `/v1/stats` (length, pending, oldest pending age, delayed, consumers,
 * claims) and follows them as a worker reads; on the local transport the card stays hidden. The
 * page runs under its own Content-Security-Policy; any script error fails the test.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { call, type Harness, startHarness, testHandlers } from "../http/harness.ts";
import { REDIS_URL } from "../support/stores.ts";
import { noBrowser, useChromium, watchProblems } from "./browser.ts";

if (noBrowser) {
  console.warn(`queue dashboard browser tests skipped: ${noBrowser}`);
}

describe.skipIf(noBrowser !== undefined)("the dashboard's Queue card in headless Chromium", () => {
  const browser = useChromium();
  let server: Harness | undefined;
  let page: Page | undefined;
  let problems: string[] = [];
  const cleanups: (() => Promise<void>)[] = [];

  afterEach(async () => {
    await page?.close();
    page = undefined;
    await server?.close();
    server = undefined;
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function open(h: Harness): Promise<Page> {
    problems = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    watchProblems(page, problems);
    await page.goto(`${h.origin}/dashboard?refresh=1`);
    return page;
  }

  /** The card's figures as label → text. */
  async function figures(p: Page): Promise<Record<string, string>> {
    const labels = await p.locator("#queue-stats dt").allTextContents();
    const values = await p.locator("#queue-stats dd").allTextContents();
    return Object.fromEntries(labels.map((label, i) => [label, values[i] ?? ""]));
  }

  it("shows the Redis Streams queue and follows a worker's read", async () => {
    const redis = new Redis(REDIS_URL);
    const prefix = `qd-${randomUUID()}`;
    const streams = new RedisStreams({ redis, prefix });
    cleanups.push(async () => {
      await streams.close();
      const keys = await redis.keys(`{${prefix}}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    });
    server = await startHarness({
      store: new RedisStore({ client: fromIoredis(redis), prefix, dispatch: "streams" }),
      handlers: testHandlers().handlers,
      transport: streams,
    });
    for (const body of [{}, {}, { delay: "10m" }]) {
      const res = await call(server.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", input: null, ...body },
      });
      expect(res.status).toBe(202);
    }

    const p = await open(server);
    // The heading names the queue's kind.
    const card = p.getByRole("region", { name: "Queue redis-streams", exact: true });
    await card.waitFor();
    await p.locator("#queue-stats dd").first().waitFor();
    expect(await figures(p)).toEqual({
      Length: "3", // two due deliveries and the delayed one's wake-up entry
      Pending: "0",
      "Oldest pending": "–",
      Delayed: "1",
      Consumers: "0",
      "Claimed (all workers)": "0",
    });

    // A worker reads the two deliveries and does not acknowledge them (yet).
    await streams.open();
    expect(await streams.pull(10, 100)).toHaveLength(2);
    await p.waitForFunction(() => {
      const dds = [...document.querySelectorAll("#queue-stats dd")].map((d) => d.textContent);
      return dds[1] === "2"; // Pending
    });
    const read = await figures(p);
    expect(read).toMatchObject({ Length: "2", Pending: "2", Delayed: "1", Consumers: "1" });
    expect(read["Oldest pending"]).toMatch(/^\d+(\.\d+)? (ms|s)$/);
    expect(problems).toEqual([]);
  });

  it("hides the card on a transport without queue stats (local)", async () => {
    server = await startHarness({ store: new MemoryStore(), handlers: testHandlers().handlers });
    const p = await open(server);
    await p.locator("#jobs-stats dd").first().waitFor();
    expect(await p.locator("#queue-card").isHidden()).toBe(true);
    expect(await p.locator("#queue-stats dd").count()).toBe(0);
    expect(problems).toEqual([]);
  });
});
