/**
 * The dashboard's job detail and tables with values that are hostile by size or by direction, in
 * real headless Chromium against a real server (memory store, the local queue delivering over
 * HTTP): a 600 KB result is shown cut to 64 Ki characters on one line, naming what is left out
 * (indented and laid out whole on every poll, it blocked the page for two seconds of every
 * three); and a value holding a direction override (U+202E) is isolated between FSI and PDI, so
 * it cannot reverse the values joined beside it ("gpj.exe" read as "exe.jpg"). Any script error
 * or Content-Security-Policy violation fails the test. The jobs list downloads its columns only,
 * not that result.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import type { HandlerContext } from "../../src/engine/handlers.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness } from "../http/harness.ts";
import { isolated, noBrowser, useChromium, watchProblems } from "./browser.ts";

if (noBrowser) {
  console.warn(`hostile values dashboard browser tests skipped: ${noBrowser}`);
}

const RLO = "\u202e";

describe.skipIf(noBrowser !== undefined)("the dashboard with hostile values in Chromium", () => {
  const browser = useChromium();
  let server: Harness | undefined;
  let page: Page | undefined;

  afterEach(async () => {
    await page?.close();
    page = undefined;
    await server?.close();
    server = undefined;
  });

  it("cuts a large result, and isolates each joined value's direction", async () => {
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: {
        zeros: { run: (input: unknown) => new Array(input as number).fill(0) },
        boom: {
          run: () => {
            throw new Error(`rejected upload ${RLO}gpj.exe`);
          },
          retries: 0,
        },
      },
    });
    server = h;
    const big = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "zeros", input: 300_000, tags: [`${RLO}AAA`, "BBB"] },
    });
    const failed = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "boom" } });
    for (const id of [big.body.id, failed.body.id]) {
      await expect
        .poll(async () => (await call(h.origin, "GET", `/v1/jobs/${id}`)).body.status, {
          timeout: 10_000,
        })
        .toMatch(/succeeded|dead/);
    }

    const problems: string[] = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    const p = page;
    watchProblems(p, problems);
    // What each read of the jobs list downloads: its columns, not the 600 KB result.
    const listSizes: Promise<number>[] = [];
    p.on("response", (r) => {
      if (r.url().startsWith(`${h.origin}/v1/jobs?`)) {
        listSizes.push(r.body().then((body) => body.length));
      }
    });
    await p.goto(`${h.origin}/dashboard?refresh=60`);
    await p.getByRole("button", { name: `Show job ${big.body.id}` }).click();
    const result = () => p.locator("#job-result").textContent();
    await expect.poll(result, { timeout: 10_000 }).toContain("more characters");
    const shown = (await result()) ?? "";
    // 600,001 characters of JSON: the first 65,536, then what is left out, on one line.
    expect(shown.startsWith("[0,0,0")).toBe(true);
    expect(shown).toContain(`534,465 more characters: GET v1/jobs/${big.body.id} has it whole`);
    expect(shown.length).toBeLessThan(70_000);
    const tags = await p.locator("#job-fields dt:text-is('Tags') + dd").textContent();
    expect(tags).toBe(`${isolated(`${RLO}AAA`)}, ${isolated("BBB")}`);

    // The failed job's error in the jobs table: name and message each isolated.
    const row = p.locator("tr", {
      has: p.getByRole("button", { name: `Show job ${failed.body.id}` }),
    });
    await expect
      .poll(() => row.locator("td.error").textContent(), { timeout: 10_000 })
      .toBe(`${isolated("Error")}: ${isolated(`rejected upload ${RLO}gpj.exe`)}`);
    const sizes = await Promise.all(listSizes);
    expect(sizes.length).toBeGreaterThan(0);
    expect(Math.max(...sizes)).toBeLessThan(2_000);
    expect(problems).toEqual([]);
  });

  it("isolates a job's progress and its events' errors", async () => {
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: {
        spoof: {
          run: async (_input: unknown, ctx: HandlerContext) => {
            await ctx.progress(`ok${RLO}`);
            throw Object.assign(new Error("payment of $100 approved"), { name: `Notice${RLO}` });
          },
          retries: 0,
        },
      },
    });
    server = h;
    const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "spoof" } });
    const id = job.body.id as string;
    await expect
      .poll(async () => (await call(h.origin, "GET", `/v1/jobs/${id}`)).body.status, {
        timeout: 10_000,
      })
      .toBe("dead");
    const problems: string[] = [];
    page = await browser().newPage();
    const p = page;
    watchProblems(p, problems);
    await p.goto(`${h.origin}/dashboard?refresh=60`);
    await p.getByRole("button", { name: `Show job ${id}` }).click();
    // The progress value beside its time ("at 8.86 s ago" read backwards before).
    const progress = p.locator("#job-fields dt:text-is('Progress') + dd span.value");
    await expect
      .poll(() => progress.textContent(), { timeout: 10_000 })
      .toBe(isolated(`"ok${RLO}"`));
    // The failure in the job's events: name and message each isolated, as in the jobs table.
    const failure = p.locator("#job-events td.error").filter({ hasText: "payment" });
    await expect
      .poll(() => failure.first().textContent(), { timeout: 10_000 })
      .toBe(`${isolated(`Notice${RLO}`)}: ${isolated("payment of $100 approved")}`);
    expect(problems).toEqual([]);
  });
});
