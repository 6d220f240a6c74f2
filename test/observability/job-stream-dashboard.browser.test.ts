/**
 * The dashboard's live job detail in real headless Chromium against a real server (memory store,
 * the local queue delivering over HTTP): with the poll slowed to once a minute, an open job's
 * detail goes from running to succeeded, with its progress and result, as soon as it happens —
 * only its stream (`GET /v1/jobs/:id/stream`) can have told the page. Any script error or
 * Content-Security-Policy violation fails the test.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import type { HandlerContext } from "../../src/engine/handlers.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness } from "../http/harness.ts";
import { noBrowser, useChromium, watchProblems } from "./browser.ts";

if (noBrowser) {
  console.warn(`job stream dashboard browser tests skipped: ${noBrowser}`);
}

describe.skipIf(noBrowser !== undefined)("the dashboard's live job detail in Chromium", () => {
  const browser = useChromium();
  let server: Harness | undefined;
  let page: Page | undefined;

  afterEach(async () => {
    await page?.close();
    page = undefined;
    await server?.close();
    server = undefined;
  });

  it("updates the open job from its stream, not the poll", async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: {
        step: {
          run: async (_input: unknown, ctx: HandlerContext) => {
            await ctx.progress({ step: 1 });
            await released;
            return { done: true };
          },
        },
      },
    });
    server = h;
    const submitted = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "step" } });
    const id = submitted.body.id as string;
    await expect
      .poll(async () => (await call(h.origin, "GET", `/v1/jobs/${id}`)).body.progress?.value)
      .toEqual({ step: 1 });

    const problems: string[] = [];
    const streams: string[] = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    const p = page;
    watchProblems(p, problems);
    p.on("request", (r) => {
      if (r.url().endsWith("/stream")) streams.push(r.url().slice(h.origin.length));
    });
    await p.goto(`${h.origin}/dashboard?refresh=60`);
    await p.getByRole("button", { name: `Show job ${id}` }).click();
    const status = () => p.locator("#job-fields dt:text-is('Status') + dd").textContent();
    await expect.poll(status, { timeout: 10_000 }).toBe("running");
    await expect.poll(() => p.locator("#job-fields").textContent()).toContain('{"step":1}');
    expect(streams).toEqual([`/v1/jobs/${id}/stream`]);

    release();
    // The next poll is a minute away: only the stream can bring this.
    await expect.poll(status, { timeout: 10_000 }).toBe("succeeded");
    await expect.poll(() => p.locator("#job-result").textContent()).toContain('"done": true');
    expect(problems).toEqual([]);
  });
});
