/**
 * The dashboard's job detail, events and placement, in real headless Chromium against a real
 * server (memory store, the local queue delivering over HTTP): a job's lifecycle events oldest
 * first with their attempts and errors (`GET /v1/events?jobId=`), read on past the API's bound of
 * 1,000 events examined per request and then only from where the last read stopped; the job's
 * placement, the node that ran it, and a refusal marked "waiting for a matching node" while the
 * job is queued. Markup in an error or a placement is shown as text, never parsed. The page runs
 * under its own Content-Security-Policy; any script error or policy violation fails the test.
 */
import type { Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { accepted, jobSpec } from "../contract/fixtures.ts";
import { call, type Harness, startHarness, testHandlers, until } from "../http/harness.ts";
import { isolated, noBrowser, useChromium, watchProblems } from "./browser.ts";

if (noBrowser) {
  console.warn(`job events dashboard browser tests skipped: ${noBrowser}`);
}

const MARKUP = "<img src=x onerror=window.__xss=1>";

describe.skipIf(noBrowser !== undefined)("the dashboard's job events in headless Chromium", () => {
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

  async function start(engine: { instanceId: string }): Promise<Harness> {
    const t = testHandlers();
    t.handlers.hostile = {
      run: () => {
        throw new Error(MARKUP);
      },
    };
    server = await startHarness({ store: new MemoryStore(), handlers: t.handlers, engine });
    return server;
  }

  async function open(h: Harness, requests?: string[]): Promise<Page> {
    problems = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    watchProblems(page, problems);
    if (requests) {
      page.on("request", (r) => {
        if (r.resourceType() === "fetch") requests.push(r.url().slice(h.origin.length));
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

  async function statusOf(h: Harness, id: string): Promise<Record<string, unknown>> {
    return (await call(h.origin, "GET", `/v1/jobs/${encodeURIComponent(id)}`)).body;
  }

  /** The events table's rows: [type, attempt, error]. */
  const eventRows = (p: Page) =>
    p
      .getByRole("table", { name: "Events" })
      .locator("tbody tr")
      .evaluateAll((trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].slice(1).map((td) => td.textContent)),
      );

  /** The detail's fields as label → text. */
  async function fields(p: Page): Promise<Record<string, string>> {
    const labels = await p.locator("#job-fields dt").allTextContents();
    const values = await p.locator("#job-fields dd").allTextContents();
    return Object.fromEntries(labels.map((label, i) => [label, values[i] ?? ""]));
  }

  it("lists a job's events with attempts and errors, reading on past the scan's bound", async () => {
    const h = await start({ instanceId: "web-1" });
    const flaky = await submit(h, { handler: "flaky", input: { times: 1 } });
    const hostile = await submit(h, { handler: "hostile", retries: 0 });
    await until(async () => (await statusOf(h, flaky)).status === "succeeded", 10_000);
    await until(async () => (await statusOf(h, hostile)).status === "dead", 10_000);
    // A job whose cancel comes after 1,100 other events (another tenant's: not listed here).
    const late = await submit(h, { handler: "echo", delay: "1h" });
    for (let i = 0; i < 1_100; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, async () =>
          accepted(
            await h.store.submitJob(jobSpec({ tenant: "filler" }), {
              delayMs: 3_600_000,
              recoverGraceMs: 60_000,
            }),
          ),
        ),
      );
    }
    expect((await call(h.origin, "DELETE", `/v1/jobs/${late}`)).status).toBe(200);

    const requests: string[] = [];
    const p = await open(h, requests);
    await p.getByRole("button", { name: `Show job ${flaky}` }).click();
    await expect
      .poll(() => eventRows(p), { timeout: 10_000 })
      .toEqual([
        ["created", "", ""],
        ["started", "1", ""],
        ["failed", "1", `${isolated("Error")}: ${isolated("fail #1")}`],
        ["started", "2", ""],
        ["succeeded", "", ""],
      ]);
    const created = (await statusOf(h, flaky)).createdAt as string;
    const first = await p.getByRole("table", { name: "Events" }).locator("tbody td").first();
    expect(Date.parse((await first.getAttribute("title")) ?? "")).toBeGreaterThanOrEqual(
      Date.parse(created),
    );
    expect(await fields(p)).toMatchObject({ Placement: "any node", Node: "web-1" });
    expect(await fields(p)).not.toHaveProperty("Refused by");

    await p.getByRole("button", { name: `Show job ${hostile}` }).click();
    await expect
      .poll(() => eventRows(p), { timeout: 10_000 })
      .toEqual([
        ["created", "", ""],
        ["started", "1", ""],
        ["dead", "1", `${isolated("Error")}: ${isolated(MARKUP)}`],
      ]);

    await p.getByRole("button", { name: `Show job ${late}` }).click();
    await expect
      .poll(() => eventRows(p), { timeout: 10_000 })
      .toEqual([
        ["created", "", ""],
        ["cancelled", "", ""],
      ]);
    const mine = () =>
      requests.filter((r) =>
        r.startsWith(`/v1/events?limit=100&jobId=${encodeURIComponent(late)}`),
      );
    const since = (r: string) => new URL(r, h.origin).searchParams.get("since") ?? "";
    // The first read starts at a time before the job's creation; the scan stopped at its bound
    // (1,100 other events follow), so the panel read on from the event id the API gave.
    expect(since(mine()[0]!)).toMatch(/^\d+$/);
    expect(
      mine()
        .slice(1)
        .some((r) => /^\d+-\d+$/.test(since(r))),
    ).toBe(true);
    // Later polls go on from the last event read: no time, no rows twice.
    const before = mine().length;
    await expect.poll(() => mine().length, { timeout: 10_000 }).toBeGreaterThan(before + 1);
    expect(
      mine()
        .slice(before)
        .every((r) => /^\d+-\d+$/.test(since(r))),
    ).toBe(true);
    expect(await eventRows(p)).toEqual([
      ["created", "", ""],
      ["cancelled", "", ""],
    ]);
    expect(await p.locator("#job-events-state").isHidden()).toBe(true);

    expect(
      await p.evaluate(() => ({
        images: document.querySelectorAll("img").length,
        withHandlers: document.querySelectorAll("[onerror], [onload]").length,
        xss: (window as unknown as { __xss?: number }).__xss ?? null,
      })),
    ).toEqual({ images: 0, withHandlers: 0, xss: null });
    expect(problems).toEqual([]);
  });

  it("shows placement, the node, and a refusal as waiting for a matching node", async () => {
    const h = await start({ instanceId: "cpu-1" });
    const placement = { group: "gpu", capabilities: { gpu: MARKUP }, notNodes: ["cpu-9"] };
    const waiting = await submit(h, { handler: "echo", placement });
    await until(async () => (await statusOf(h, waiting)).refused !== undefined, 10_000);
    const job = await statusOf(h, waiting);
    expect(job.status).toBe("queued");
    const refused = job.refused as { node: string; reason: string; at: string };

    const p = await open(h);
    await p.getByRole("button", { name: `Show job ${waiting}` }).click();
    await expect.poll(() => fields(p), { timeout: 10_000 }).toHaveProperty("Refused by");
    const shown = await fields(p);
    expect(shown.Placement).toBe(
      `group gpu; capabilities ${isolated("gpu")}=${isolated(MARKUP)}; not nodes ${isolated("cpu-9")}`,
    );
    expect(shown.Node).toBe("–");
    expect(shown["Refused by"]).toMatch(
      new RegExp(
        `^waiting for a matching node ${isolated("cpu-1")}: ${literal(isolated(refused.reason))} (now|.* ago)$`,
      ),
    );
    expect(refused.reason).toMatch(/gpu/);
    const marker = p.locator("#job-fields .refused .waiting");
    expect(await marker.textContent()).toBe("waiting for a matching node");
    expect(await p.locator("#job-fields .refused [title]").getAttribute("title")).toMatch(
      /^\d{4}-\d{2}-\d{2}T/,
    );
    // Its events: created, no attempt (a refusal is not one).
    expect((await eventRows(p)).map((r) => r[0])).toEqual(["created"]);

    // Once it is no longer queued, the refusal stays shown but not as waiting.
    expect((await call(h.origin, "DELETE", `/v1/jobs/${waiting}`)).status).toBe(200);
    await expect
      .poll(() => p.locator("#job-fields .refused .waiting").count(), { timeout: 10_000 })
      .toBe(0);
    expect((await fields(p))["Refused by"]).toMatch(new RegExp(`^${isolated("cpu-1")}: `));
    await expect
      .poll(() => eventRows(p).then((rows) => rows.map((r) => r[0])), { timeout: 10_000 })
      .toEqual(["created", "cancelled"]);

    expect(
      await p.evaluate(() => ({
        images: document.querySelectorAll("img").length,
        xss: (window as unknown as { __xss?: number }).__xss ?? null,
      })),
    ).toEqual({ images: 0, xss: null });
    expect(problems).toEqual([]);
  });
});

/** `text` as a literal in a regular expression. */
function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
