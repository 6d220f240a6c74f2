/**
 * The dashboard's live job detail in real headless Chromium against a real server (memory store,
 * the local queue delivering over HTTP): with the poll slowed to once a minute, an open job's
 * detail goes from running to succeeded, with its progress and result, as soon as it happens —
 * only its stream (`GET /v1/jobs/:id/stream`) can have told the page; and against a stream that
 * ends at once, the page connects again only after the stream's `retry:` wait, from the last event
 * id it read. Any script error or Content-Security-Policy violation fails the test.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import type { HandlerContext } from "../../src/engine/handlers.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness } from "../http/harness.ts";
import { gate } from "../support/gate.ts";
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

  /** A server whose one job runs until `release()`: answers once the job is `running`. */
  async function heldJob(): Promise<{ h: Harness; id: string; release: () => void }> {
    const { promise: released, open: release } = gate();
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: { hold: { run: () => released } },
    });
    server = h;
    try {
      const submitted = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "hold" } });
      const id = submitted.body.id as string;
      await expect
        .poll(async () => (await call(h.origin, "GET", `/v1/jobs/${id}`)).body.status)
        .toBe("running");
      return { h, id, release };
    } catch (error) {
      release();
      throw error;
    }
  }

  it("updates the open job from its stream, not the poll", async () => {
    const { promise: released, open: release } = gate();
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

  it("connects again after the stream's retry wait, from the last id it read", async () => {
    const { h, id, release } = await heldJob();
    try {
      const problems: string[] = [];
      const connections: { at: number; lastEventId: string | undefined }[] = [];
      let details = 0;
      page = await browser().newPage();
      const p = page;
      watchProblems(p, problems);
      p.on("request", (r) => {
        if (r.url() === `${h.origin}/v1/jobs/${id}`) details++;
      });
      // Every stream ends at once: the first with one event whose data line is 4 MiB (never kept
      // whole by the page), the others with a comment only.
      await p.route(`**/v1/jobs/${id}/stream`, async (route) => {
        const first = connections.length === 0;
        connections.push({
          at: Date.now(),
          lastEventId: route.request().headers()["last-event-id"],
        });
        await route.fulfill({
          status: 200,
          headers: { "content-type": "text/event-stream", "cache-control": "no-store" },
          body: first
            ? `retry: 700\n\nid: 7\nevent: status\ndata: {"x":"${"x".repeat(4 << 20)}"}\n\n`
            : "retry: 700\n\n: keep-alive\n\n",
        });
      });
      await p.goto(`${h.origin}/dashboard?refresh=60`);
      await p.getByRole("button", { name: `Show job ${id}` }).click();
      await expect.poll(() => connections.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);

      // Before, a stream that ended was opened again at once, hundreds of times a second.
      for (let i = 1; i < 3; i++) {
        expect(connections[i]!.at - connections[i - 1]!.at).toBeGreaterThanOrEqual(650);
      }
      expect(connections[0]!.lastEventId).toBeUndefined();
      expect(connections[1]!.lastEventId).toBe("7");
      expect(connections[2]!.lastEventId).toBe("7");
      // The event read the detail again: once on opening it, once for the event (the poll is a
      // minute away).
      await expect.poll(() => details).toBeGreaterThanOrEqual(2);
      expect(problems).toEqual([]);
    } finally {
      release();
    }
  });

  it("ends a stream whose id line is over its limit, and does not send that id again", async () => {
    const { h, id, release } = await heldJob();
    try {
      const problems: string[] = [];
      const connections: (string | undefined)[] = [];
      page = await browser().newPage();
      const p = page;
      watchProblems(p, problems);
      // The first stream's id line (whole in one read) is 100,000 characters.
      await p.route(`**/v1/jobs/${id}/stream`, async (route) => {
        const first = connections.length === 0;
        connections.push(route.request().headers()["last-event-id"]);
        await route.fulfill({
          status: 200,
          headers: { "content-type": "text/event-stream" },
          body: first
            ? `retry: 300\n\nid: ${"7".repeat(100_000)}\nevent: status\ndata: {}\n\n`
            : "retry: 300\n\nid: 8\nevent: status\ndata: {}\n\n",
        });
      });
      await p.goto(`${h.origin}/dashboard?refresh=60`);
      await p.getByRole("button", { name: `Show job ${id}` }).click();
      await expect.poll(() => connections.length, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
      expect(connections[0]).toBeUndefined();
      expect(connections[1]).toBeUndefined();
      expect(connections[2]).toBe("8");
      expect(problems).toEqual([]);
    } finally {
      release();
    }
  });

  it("shows the open job's new log lines while its stream is followed", async () => {
    const { promise: logged, open: next } = gate();
    const { promise: released, open: release } = gate();
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: {
        chatty: {
          run: async (_input: unknown, ctx: HandlerContext) => {
            await ctx.log("first line");
            await logged;
            // Neither its status nor its progress changes: the stream has nothing to tell.
            await ctx.log("second line");
            await released;
          },
        },
      },
    });
    server = h;
    try {
      const submitted = await call(h.origin, "POST", "/v1/jobs", { json: { handler: "chatty" } });
      const id = submitted.body.id as string;
      await expect
        .poll(async () => (await call(h.origin, "GET", `/v1/jobs/${id}/logs`)).body.items?.length)
        .toBe(1);
      const problems: string[] = [];
      let streams = 0;
      page = await browser().newPage();
      const p = page;
      watchProblems(p, problems);
      p.on("request", (r) => {
        if (r.url().endsWith("/stream")) streams++;
      });
      await p.goto(`${h.origin}/dashboard?refresh=1`);
      await p.getByRole("button", { name: `Show job ${id}` }).click();
      const log = () => p.locator("#job-logs").textContent();
      await expect.poll(log, { timeout: 10_000 }).toContain("first line");
      await expect.poll(() => streams).toBe(1);
      next();
      await expect.poll(log, { timeout: 10_000 }).toContain("second line");
      expect(streams).toBe(1);
      expect(problems).toEqual([]);
    } finally {
      release();
    }
  });
});
