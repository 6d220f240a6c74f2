/**
 * The dashboard's schedules table in real headless Chromium against a real server (memory store):
 * what it shows of a paused schedule, what its buttons say they did, and that a schedule's buttons
 * stay disabled while one of its actions is under way (a poll that redraws the table must not
 * offer them again: a second Delete answered 404 after the first had deleted it). The page runs
 * under its own Content-Security-Policy; any script error or policy violation fails the test.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness, testHandlers, until } from "../http/harness.ts";
import { noBrowser, useChromium, watchProblems } from "./browser.ts";

if (noBrowser) {
  console.warn(`schedules dashboard browser tests skipped: ${noBrowser}`);
}

describe.skipIf(noBrowser !== undefined)("the dashboard's schedules in headless Chromium", () => {
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

  async function start(horizonMs?: number): Promise<Harness> {
    server = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      ...(horizonMs ? { engine: { tick: { horizonMs } } } : {}),
    });
    return server;
  }

  async function open(h: Harness): Promise<Page> {
    problems = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    watchProblems(page, problems);
    page.on("dialog", (dialog) => void dialog.accept());
    await page.goto(`${h.origin}/dashboard?refresh=1`);
    return page;
  }

  /** The cells of the schedule row of `id`, once it shows `status`. */
  async function rowCells(p: Page, id: string, status: string): Promise<string[]> {
    const row = p.getByRole("row", { name: new RegExp(`^${id} `) });
    await row.getByRole("cell", { name: status, exact: true }).waitFor();
    return row.getByRole("cell").allTextContents();
  }

  it("shows no next run for a paused schedule (it fires nothing until resumed, and then from then on)", async () => {
    const h = await start();
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "held", handler: "echo", schedule: "5m" },
    });
    expect(Date.parse(created.body.nextRunAt)).toBeGreaterThan(Date.now());
    const paused = await call(h.origin, "POST", "/v1/schedules/held/pause");
    // The API keeps the time that was pending at the pause; a resume recomputes it from then.
    expect(paused.body).toMatchObject({ status: "paused", nextRunAt: created.body.nextRunAt });
    // Its first run an hour on: "5m" alone runs on the epoch's five-minute grid, and a page drawn
    // within a second of a grid time showed "now" for it.
    await call(h.origin, "POST", "/v1/schedules", {
      json: {
        id: "running",
        handler: "echo",
        schedule: "5m",
        startAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    });

    const p = await open(h);
    const [, , , , active] = await rowCells(p, "running", "active");
    expect(active).toMatch(/^in /);
    const [, , , , next] = await rowCells(p, "held", "paused");
    // Not "in 4m 59s": nothing runs then (and once that time passed, not "3m ago" either).
    expect(next).toBe("–");
    expect(problems).toEqual([]);
  });

  it("says a resume completed a paused schedule that had nothing left to fire", async () => {
    const h = await start();
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "capped", handler: "echo", schedule: "5m" },
    });
    await call(h.origin, "POST", "/v1/schedules/capped/pause");
    const patched = await call(h.origin, "PATCH", "/v1/schedules/capped", {
      json: { endAt: Date.parse(created.body.nextRunAt) - 1 },
    });
    expect(patched.body).toMatchObject({ status: "paused", nextRunAt: null });

    const p = await open(h);
    await rowCells(p, "capped", "paused");
    await p.getByRole("button", { name: "Resume schedule capped" }).click();
    await until(async () => {
      const s = await call(h.origin, "GET", "/v1/schedules/capped");
      return s.body.status === "completed";
    });
    await rowCells(p, "capped", "completed");
    const notice = p.getByRole("status");
    await notice.filter({ hasText: "capped" }).waitFor();
    // Not "Resumed capped.": it does not fire again.
    expect(await notice.textContent()).toMatch(/completed/);
    expect(problems).toEqual([]);
  });

  it("keeps a schedule's buttons disabled while its delete is under way, across polls", async () => {
    const h = await start();
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "victim", handler: "echo", schedule: "5m" },
    });
    const p = await open(h);
    await rowCells(p, "victim", "active");

    // The DELETE is held (a slow network) while the page polls every second.
    const deletes: string[] = [];
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    await p.route(`${h.origin}/v1/schedules/victim`, async (route) => {
      if (route.request().method() !== "DELETE") return route.continue();
      deletes.push(route.request().url());
      await held;
      await route.continue();
    });
    await p.getByRole("button", { name: "Delete schedule victim" }).click();
    await until(() => deletes.length === 1);
    // Two polls redraw the table (the schedule still exists: the DELETE has not reached it).
    for (let i = 0; i < 2; i++) {
      await p.waitForResponse((r) => r.url().endsWith("/v1/schedules?limit=100"));
    }
    await p.getByRole("row", { name: /^victim / }).waitFor();
    const again = p.getByRole("button", { name: "Delete schedule victim" });
    expect(await again.isDisabled()).toBe(true);
    expect(await p.getByRole("button", { name: "Pause schedule victim" }).isDisabled()).toBe(true);

    letGo();
    await p.getByRole("status").filter({ hasText: "Deleted victim." }).waitFor();
    await p.getByRole("cell", { name: "No schedules." }).waitFor();
    expect(deletes).toHaveLength(1);
    expect(problems).toEqual([]);
  });

  it("says when there are more schedules than the one page it shows", async () => {
    const h = await start();
    for (let i = 0; i < 101; i++) {
      const created = await call(h.origin, "POST", "/v1/schedules", {
        json: { id: `s-${String(i).padStart(3, "0")}`, handler: "echo", schedule: "1h" },
      });
      expect(created.status).toBe(201);
    }
    const page1 = await call(h.origin, "GET", "/v1/schedules?limit=100");
    expect(page1.body.items).toHaveLength(100);
    expect(page1.body.cursor).toEqual(expect.any(String));

    const p = await open(h);
    await p.getByRole("cell", { name: page1.body.items[0].id, exact: true }).waitFor();
    // 100 rows, and no word that a 101st exists: it looked deleted.
    await p.getByRole("cell", { name: /there are more/ }).waitFor({ timeout: 5_000 });
    expect(problems).toEqual([]);
  });

  it("does not draw a poll's answer from before a pause over the table the pause drew", async () => {
    const h = await start();
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "flip", handler: "echo", schedule: "5m" },
    });
    const p = await open(h);
    await rowCells(p, "flip", "active");
    // Every drawing of the table, as the status its row showed.
    await p.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { seen: string[] }).seen = seen;
      new MutationObserver(() => {
        const row = [...document.querySelectorAll("#schedules tr")].find(
          (tr) => tr.querySelector("td")?.textContent === "flip",
        );
        seen.push(row?.querySelectorAll("td")[3]?.textContent ?? "none");
      }).observe(document.getElementById("schedules")!, { childList: true });
    });
    const seen = () => p.evaluate(() => (window as unknown as { seen: string[] }).seen.slice());

    // A poll's read of the schedules is answered (active) and held back, as a slow network would.
    let stall = true;
    let held: (() => void) | undefined;
    let letGo!: () => void;
    const released = new Promise<void>((resolve) => {
      letGo = resolve;
    });
    let afterRelease = 0;
    let releasedYet = false;
    await p.route(`${h.origin}/v1/schedules?limit=100`, async (route) => {
      if (releasedYet) afterRelease += 1;
      if (!stall) return route.continue();
      stall = false;
      const response = await route.fetch();
      held = () => void route.fulfill({ response });
      await released;
    });
    await until(() => held !== undefined);
    // Meanwhile the user pauses it: the page draws it paused.
    await p.getByRole("button", { name: "Pause schedule flip" }).click();
    await p.getByRole("button", { name: "Resume schedule flip" }).waitFor();
    const pausedAt = (await seen()).lastIndexOf("paused");
    expect(pausedAt).toBeGreaterThanOrEqual(0);

    // The held answer arrives, then a later poll is drawn.
    releasedYet = true;
    held!();
    letGo();
    await until(() => afterRelease >= 1);
    await until(async () => (await seen()).length > pausedAt + 1);
    await p.getByRole("button", { name: "Resume schedule flip" }).waitFor();
    const drawn = (await seen()).slice(pausedAt);
    // Without a guard: ["paused", "active", "paused"]: a Pause button again, for a poll's time.
    expect(drawn).not.toContain("active");
    expect(problems).toEqual([]);
  });

  it("shows a once-a-minute cron's next run as the occurrence the tick dispatched ahead, and no last run in the future", async () => {
    // The production horizon of a once-a-minute tick: the occurrence of the coming minute is
    // dispatched (and counted in `runs`, its fire time `lastRunAt`) up to 65 s before it fires.
    const h = await start(65_000);
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "minutely", handler: "echo", schedule: "* * * * *" },
    });
    await call(h.origin, "POST", "/v1/tick");
    const s = (await call(h.origin, "GET", "/v1/schedules/minutely")).body;
    expect(Date.parse(s.lastRunAt)).toBeGreaterThan(Date.now());
    expect(Date.parse(s.nextRunAt)).toBeGreaterThan(Date.parse(s.lastRunAt));

    const p = await open(h);
    await rowCells(p, "minutely", "active");
    const headers = await p
      .locator("table[aria-labelledby='h-schedules'] thead th")
      .allTextContents();
    const cells = p.getByRole("row", { name: /^minutely / }).getByRole("cell");
    const texts = await cells.allTextContents();
    // Not "Last run: in 43 s".
    const last = headers.indexOf("Last run");
    if (last >= 0) expect(texts[last]).not.toMatch(/^in /);
    // Not "Next run: in 1m 43s" (nextRunAt), when it runs at lastRunAt, 43 s from now.
    const next = cells.nth(headers.indexOf("Next run"));
    expect(await next.getAttribute("title")).toContain(s.lastRunAt);
    expect(problems).toEqual([]);
  });
});
