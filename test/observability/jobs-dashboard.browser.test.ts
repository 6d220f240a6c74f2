/**
 * The dashboard's jobs list and job detail in real headless Chromium against a real server: the
 * filters (status, handler, schedule id) narrow the list through the API's own query parameters
 * and its cursor pages it; a job's ID opens its detail (status, attempts, progress with its time,
 * result, log, dependencies, a running job's cancel request); the Jobs card counts waiting jobs
 * and limited deliveries; and markup in a job's input, result, error, log or a refused filter is
 * shown as text, never parsed (no element is created from it). The page runs under its own
 * Content-Security-Policy; any script error or policy violation fails the test.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import type { Handlers } from "../../src/engine/handlers.ts";
import { JOB_LIST_FIELDS } from "../../src/http/dashboard/script-jobs.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { call, type Harness, startHarness, testHandlers, until } from "../http/harness.ts";
import { isolated, noBrowser, useChromium } from "./browser.ts";

if (noBrowser) {
  console.warn(`jobs dashboard browser tests skipped: ${noBrowser}`);
}

const FINAL = ["succeeded", "dead", "cancelled", "skipped"];
const MARKUP = "<img src=x onerror=window.__xss=1>";

describe.skipIf(noBrowser !== undefined)("the dashboard's jobs in headless Chromium", () => {
  const browser = useChromium();
  let server: Harness | undefined;
  let page: Page | undefined;
  let problems: string[] = [];
  let release: (() => void) | undefined;

  afterEach(async () => {
    await page?.close();
    page = undefined;
    release?.();
    release = undefined;
    await server?.close();
    server = undefined;
  });

  function handlers(): ReturnType<typeof testHandlers> & { handlers: Handlers } {
    const t = testHandlers();
    t.handlers.report = {
      run: async (_input, ctx) => {
        await ctx.progress({ done: 3, total: 4 });
        await ctx.log("step one", { batch: 7 });
        await ctx.log("careful", undefined, "warn");
        return { ok: true };
      },
    };
    t.handlers.hostile = {
      run: async (_input, ctx) => {
        await ctx.log(MARKUP, { html: "<script>window.__xss=2</script>" });
        throw new Error(MARKUP);
      },
    };
    release = () => t.latch.release();
    return t;
  }

  async function open(h: Harness, requests?: string[]): Promise<Page> {
    problems = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      // A refused filter (400) is logged by the browser as a failed fetch: expected.
      if (message.type() === "error" && !/status of 400/.test(message.text())) {
        problems.push(`console: ${message.text()}`);
      }
    });
    if (requests) {
      page.on("request", (r) => {
        if (r.resourceType() !== "fetch") return;
        // The list asks for its columns only; the rest of its query is what the tests read.
        const url = r.url().slice(h.origin.length);
        const listing = url.startsWith("/v1/jobs?");
        if (listing && !url.includes(`&fields=${encodeURIComponent(JOB_LIST_FIELDS)}`)) {
          problems.push(`the list asked for every field: ${url}`);
        }
        requests.push(listing ? url.replace(/&fields=[^&]*/, "") : url);
      });
    }
    await page.goto(`${h.origin}/dashboard?refresh=1`);
    return page;
  }

  async function submit(h: Harness, json: Record<string, unknown>): Promise<string> {
    const res = await call(h.origin, "POST", "/v1/jobs", { json: { input: null, ...json } });
    expect(res.status).toBe(202);
    return res.body.id as string;
  }

  async function settled(h: Harness, id: string): Promise<void> {
    await until(async () => {
      const job = await call(h.origin, "GET", `/v1/jobs/${encodeURIComponent(id)}`);
      return FINAL.includes(job.body.status as string);
    }, 10_000);
  }

  /** The IDs the list shows, top to bottom. */
  const listed = (p: Page) => p.locator("#jobs button.link").allTextContents();

  /** The detail's fields as label → text. */
  async function fields(p: Page): Promise<Record<string, string>> {
    const labels = await p.locator("#job-fields dt").allTextContents();
    const values = await p.locator("#job-fields dd").allTextContents();
    return Object.fromEntries(labels.map((label, i) => [label, values[i] ?? ""]));
  }

  it("filters by status, handler and schedule id, and pages with the API's cursor", async () => {
    const t = handlers();
    server = await startHarness({ store: new MemoryStore(), handlers: t.handlers });
    const echoes: string[] = [];
    for (let i = 0; i < 21; i++) echoes.push(await submit(server, { handler: "echo" }));
    const dead = await submit(server, { handler: "gated", retries: 0 });
    await call(server.origin, "POST", "/v1/schedules", {
      json: { id: "ticker", handler: "echo", schedule: "1s", maxRuns: 1 },
    });
    expect((await call(server.origin, "POST", "/v1/tick")).body.dispatched).toBe(1);
    let occurrence = "";
    await until(async () => {
      const runs = await call(server!.origin, "GET", "/v1/jobs?scheduleId=ticker");
      occurrence = (runs.body.items[0]?.id as string | undefined) ?? "";
      return runs.body.items[0]?.status === "succeeded";
    }, 10_000);
    for (const id of [...echoes, dead]) await settled(server, id);

    const requests: string[] = [];
    const p = await open(server, requests);
    await expect.poll(() => listed(p), { timeout: 10_000 }).toHaveLength(20);

    await p.getByLabel("Handler").fill("gated");
    await p.getByRole("button", { name: "Filter", exact: true }).click();
    await expect.poll(() => listed(p), { timeout: 10_000 }).toEqual([dead]);
    expect(requests).toContain("/v1/jobs?limit=20&handler=gated");
    await p.getByText("filtered: handler gated").waitFor();

    await p.getByRole("button", { name: "Clear" }).click();
    await p.getByLabel("Status").selectOption("dead");
    await expect.poll(() => listed(p), { timeout: 10_000 }).toEqual([dead]);
    expect(requests).toContain("/v1/jobs?limit=20&status=dead");
    await p.getByLabel("Status").selectOption("waiting");
    await p
      .getByRole("table", { name: "Recent jobs" })
      .getByText("No jobs match these filters.")
      .waitFor();

    await p.getByLabel("Status").selectOption("");
    await p.getByLabel("Schedule ID").fill("ticker");
    await p.getByLabel("Schedule ID").press("Enter");
    await expect.poll(() => listed(p), { timeout: 10_000 }).toEqual([occurrence]);
    expect(requests).toContain("/v1/jobs?limit=20&scheduleId=ticker");

    // 22 echo jobs (21 submitted, the schedule's occurrence): two pages of 20 and 2.
    await p.getByLabel("Schedule ID").fill("");
    await p.getByLabel("Handler").fill("echo");
    await p.getByRole("button", { name: "Filter", exact: true }).click();
    await expect.poll(() => listed(p), { timeout: 10_000 }).toHaveLength(20);
    const first = await listed(p);
    expect(first).not.toContain(dead);
    await p.getByRole("button", { name: "Older" }).click();
    await expect.poll(() => listed(p), { timeout: 10_000 }).toHaveLength(2);
    await p.getByText("page 2").waitFor();
    const second = await listed(p);
    expect(new Set([...first, ...second])).toEqual(new Set([...echoes, occurrence]));
    expect(requests.some((r) => /^\/v1\/jobs\?limit=20&handler=echo&cursor=./.test(r))).toBe(true);
    expect(await p.getByRole("button", { name: "Older" }).isDisabled()).toBe(true);
    await p.getByRole("button", { name: "Newer" }).click();
    await expect.poll(() => listed(p), { timeout: 10_000 }).toEqual(first);

    // A filter the API refuses is shown as its answer, in the table.
    await p.getByLabel("Handler").fill("no spaces allowed");
    await p.getByRole("button", { name: "Filter", exact: true }).click();
    await p
      .getByRole("table", { name: "Recent jobs" })
      .getByText(/Could not list jobs: 400/)
      .waitFor();
    expect(problems).toEqual([]);
  });

  it("shows a job's detail when its ID is clicked: progress, result, log, dependencies", async () => {
    const t = handlers();
    server = await startHarness({ store: new MemoryStore(), handlers: t.handlers });
    const report = await submit(server, { handler: "report", input: { n: 1 } });
    await settled(server, report);
    const after = await submit(server, { handler: "echo", after: [report], onFailure: "run" });
    await settled(server, after);
    const job = (await call(server.origin, "GET", `/v1/jobs/${report}`)).body;

    const p = await open(server);
    await p.getByRole("button", { name: `Show job ${after}` }).click();
    const detail = p.getByRole("region", { name: `Job ${after}` });
    await detail.waitFor();
    await expect
      .poll(() => fields(p), { timeout: 10_000 })
      .toMatchObject({
        Status: "succeeded",
        After: report,
        "On failure": "run",
      });

    // Its dependency opens from there.
    await detail.getByRole("button", { name: `Show job ${report}` }).click();
    await p.getByRole("region", { name: `Job ${report}` }).waitFor();
    await expect
      .poll(() => fields(p), { timeout: 10_000 })
      .toMatchObject({
        Status: "succeeded",
        "Cancel requested": "no",
        Handler: "report",
        After: "none",
      });
    const shown = await fields(p);
    expect(shown.Attempts).toMatch(/^1 \(up to \d+\)$/);
    expect(shown.Progress).toMatch(
      new RegExp(`^${isolated('\\{"done":3,"total":4\\}')} at (now|\\d.* ago)$`),
    );
    expect(await p.locator("#job-fields .progress [title]").getAttribute("title")).toBe(
      job.progress.at,
    );
    expect(JSON.parse((await p.locator("#job-input").textContent()) ?? "")).toEqual({ n: 1 });
    expect(JSON.parse((await p.locator("#job-result").textContent()) ?? "")).toEqual({ ok: true });
    expect(await p.locator("#job-error-box").isHidden()).toBe(true);

    const log = p.getByRole("table", { name: "Log" });
    await log.getByRole("row", { name: /step one/ }).waitFor();
    const rows = await log
      .locator("tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].slice(1).map((td) => td.textContent)),
      );
    expect(rows).toEqual([
      ["1", "info", "step one", '{"batch":7}'],
      ["1", "warn", "careful", ""],
    ]);
    await p.getByRole("button", { name: "Close job detail" }).click();
    await p.locator("#job-detail").waitFor({ state: "hidden" });
    expect(problems).toEqual([]);
  });

  it("counts a waiting job and shows a running job's dependents and cancel request", async () => {
    const t = handlers();
    // No cancel poll: the running job keeps `cancelRequested` until the test releases it.
    server = await startHarness({
      store: new MemoryStore(),
      handlers: t.handlers,
      engine: { cancelCheckMs: 0 },
    });
    const running = await submit(server, { handler: "latched" });
    await t.latch.running;
    const waiting = await submit(server, { handler: "echo", after: [running] });
    expect((await call(server.origin, "GET", `/v1/jobs/${waiting}`)).body.status).toBe("waiting");

    const p = await open(server);
    const jobsCard = async () => {
      const labels = await p.locator("#jobs-stats dt").allTextContents();
      const values = await p.locator("#jobs-stats dd").allTextContents();
      return Object.fromEntries(labels.map((label, i) => [label, values[i] ?? ""]));
    };
    await expect.poll(jobsCard, { timeout: 10_000 }).toMatchObject({
      Running: "1",
      "Waiting on dependencies": "1",
      "Limited deliveries (total)": "0",
      "Refused for placement (total)": "0",
    });

    await p.getByLabel("Status").selectOption("waiting");
    await expect.poll(() => listed(p), { timeout: 10_000 }).toEqual([waiting]);
    await p.getByRole("row", { name: new RegExp(`${waiting}.*waiting`) }).waitFor();
    await p.getByRole("button", { name: `Show job ${waiting}` }).click();
    await expect
      .poll(() => fields(p), { timeout: 10_000 })
      .toMatchObject({
        Status: "waiting",
        After: running,
        "On failure": "cancel",
        Progress: "none reported",
        Started: "–",
      });

    const cancel = await call(server.origin, "DELETE", `/v1/jobs/${running}`);
    expect(cancel.status).toBe(202);
    await p
      .getByRole("region", { name: `Job ${waiting}` })
      .getByRole("button", { name: `Show job ${running}` })
      .click();
    await expect
      .poll(() => fields(p), { timeout: 10_000 })
      .toMatchObject({
        Status: "running",
        "Cancel requested": "yes",
      });
    await p.getByLabel("Status").selectOption("running");
    await p
      .getByRole("row", { name: new RegExp(`${running}.*running cancel requested`) })
      .waitFor();
    expect(problems).toEqual([]);
  });

  it("shows markup in input, result, error, log and a refused filter as text, never as elements", async () => {
    const t = handlers();
    server = await startHarness({ store: new MemoryStore(), handlers: t.handlers });
    const input = { html: MARKUP, script: "<script>window.__xss=3</script>" };
    const echoed = await submit(server, { handler: "echo", input });
    const hostile = await submit(server, { handler: "hostile", input, retries: 0 });
    await settled(server, echoed);
    await settled(server, hostile);

    const p = await open(server);
    await p.getByRole("button", { name: `Show job ${echoed}` }).click();
    await expect
      .poll(() => p.locator("#job-result").textContent(), { timeout: 10_000 })
      .toContain(MARKUP);
    expect(JSON.parse((await p.locator("#job-input").textContent()) ?? "")).toEqual(input);
    expect(JSON.parse((await p.locator("#job-result").textContent()) ?? "")).toEqual(input);

    await p.getByRole("button", { name: `Show job ${hostile}` }).click();
    await expect
      .poll(() => p.locator("#job-error").textContent(), { timeout: 10_000 })
      .toBe(`${isolated("Error")}: ${isolated(MARKUP)}`);
    const log = p.getByRole("table", { name: "Log" });
    await log.getByText(MARKUP, { exact: true }).waitFor();
    await log.getByText('{"html":"<script>window.__xss=2</script>"}').waitFor();
    // The dead letter's and the list's error cells show it too.
    await p
      .getByRole("table", { name: "Dead letters" })
      .getByText(`${isolated("Error")}: ${isolated(MARKUP)}`)
      .waitFor();

    await p.getByLabel("Handler").fill(MARKUP);
    await p.getByRole("button", { name: "Filter", exact: true }).click();
    await p
      .getByRole("table", { name: "Recent jobs" })
      .getByText(/Could not list jobs: 400/)
      .waitFor();

    // Nothing was parsed: no image, no script but the page's own, no handler ran.
    expect(
      await p.evaluate(() => ({
        images: document.querySelectorAll("img").length,
        scripts: document.querySelectorAll("script").length,
        withHandlers: document.querySelectorAll("[onerror], [onload]").length,
        xss: (window as unknown as { __xss?: number }).__xss ?? null,
      })),
    ).toEqual({ images: 0, scripts: 1, withHandlers: 0, xss: null });
    expect(problems).toEqual([]);
  });
});
