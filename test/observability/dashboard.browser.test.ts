/**
 * The dashboard in real headless Chromium against a real server: it shows a schedule created over
 * the API, its Pause button pauses it (the API then says so), a dead letter's Retry re-runs it, and
 * with auth on it asks for a key and shows the API's refusal of a read-only one. Mounted inside
 * another app (`outer.route("/api/tickwork", app)`, also at `…/dashboard/` under `strict: false`)
 * it reads and acts under that prefix. The page runs
 * under its own Content-Security-Policy; any script error or policy violation fails the test.
 */
import { Hono } from "hono";
import type { Request as BrowserRequest, Page } from "playwright-core";
import { afterEach, describe, expect, it } from "vitest";
import { hashKey } from "../../src/config/keys.ts";
import type { TenantConfig } from "../../src/config/schema.ts";
import { JOB_LIST_FIELDS } from "../../src/http/dashboard/script-jobs.ts";
import { call, type Harness, startHarness, testHandlers, until } from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { noBrowser, useChromium } from "./browser.ts";

const factories = storeFactories.filter((f) => f.name === "memory" || f.name === "redis");

if (noBrowser) {
  console.warn(`dashboard browser tests skipped: ${noBrowser}`);
}

describe.skipIf(noBrowser !== undefined)("the dashboard in headless Chromium", () => {
  const browser = useChromium();
  let handle: StoreHandle | undefined;
  let server: Harness | undefined;
  let page: Page | undefined;
  /** Script errors, console errors and CSP violations seen by the page. */
  let problems: string[] = [];

  afterEach(async () => {
    await page?.close();
    page = undefined;
    await server?.close();
    server = undefined;
    await handle?.cleanup();
    handle = undefined;
  });

  async function open(h: Harness): Promise<Page> {
    return openAt(`${h.origin}/dashboard?refresh=1`);
  }

  /** Open the page at `url`, collecting problems; `onRequest` sees every request it makes. */
  async function openAt(url: string, onRequest?: (request: BrowserRequest) => void): Promise<Page> {
    problems = [];
    page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
    if (onRequest) page.on("request", onRequest);
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      // The browser logs a failed fetch (our 401/403s) as a console error; those are expected.
      if (message.type() === "error" && !/status of 40[13]/.test(message.text())) {
        problems.push(`console: ${message.text()} (${message.location().url})`);
      }
    });
    await page.goto(url);
    return page;
  }

  it.each(factories)(
    "pauses a schedule with its button on $name; the API reports it paused",
    async (factory) => {
      handle = await factory.make();
      server = await startHarness({ store: handle.store, handlers: testHandlers().handlers });
      const created = await call(server.origin, "POST", "/v1/schedules", {
        json: { id: "nightly-report", handler: "echo", schedule: "0 3 * * *", tz: "Europe/Berlin" },
      });
      expect(created.status).toBe(201);

      const p = await open(server);
      const row = p.getByRole("row", { name: /nightly-report/ });
      await row.waitFor();
      expect(await row.getByRole("cell").allTextContents()).toEqual(
        expect.arrayContaining(["nightly-report", "echo", "0 3 * * * (Europe/Berlin)", "active"]),
      );
      await p.getByRole("button", { name: "Pause schedule nightly-report" }).click();

      await until(async () => {
        const s = await call(server!.origin, "GET", "/v1/schedules/nightly-report");
        return s.body.status === "paused";
      }, 10_000);
      // The page follows: the row now offers Resume.
      await p.getByRole("button", { name: "Resume schedule nightly-report" }).waitFor();
      await p.getByRole("status").filter({ hasText: "Paused nightly-report" }).waitFor();
      expect(problems).toEqual([]);
    },
  );

  it("works under a base path (its API calls start from the page's own path)", async () => {
    handle = await factories[0]!.make();
    server = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      app: { basePath: "/api/tickwork" },
    });
    const base = `${server.origin}/api/tickwork`;
    await call(base, "POST", "/v1/schedules", {
      json: { id: "under-base", handler: "echo", schedule: "5m" },
    });
    problems = [];
    page = await browser().newPage();
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    await page.goto(`${base}/dashboard`);
    await page.getByRole("row", { name: /under-base/ }).waitFor();
    expect(await page.locator("#instance").textContent()).toBe(
      `answered by ${server.engine.options.instanceId}`,
    );
    expect(problems).toEqual([]);
  });

  it.each([
    {
      name: 'under outer.route("/api/tickwork", app), at …/dashboard',
      outer: () => new Hono(),
      page: "/dashboard",
    },
    {
      // A relative fetch("v1/stats") would resolve under …/dashboard/ here.
      name: "under an outer app with strict: false, at …/dashboard/",
      outer: () => new Hono({ strict: false }),
      page: "/dashboard/",
    },
  ])("loads its data and acts $name, every call under the prefix", async ({ outer, page: at }) => {
    handle = await factories[0]!.make();
    const prefix = "/api/tickwork";
    server = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      basePath: prefix,
      wrap: (app) => outer().route(prefix, app),
    });
    const base = `${server.origin}${prefix}`;
    await call(base, "POST", "/v1/schedules", {
      json: { id: "mounted", handler: "echo", schedule: "5m" },
    });
    const calls: string[] = [];
    const p = await openAt(`${base}${at}`, (request) => {
      if (request.resourceType() === "fetch") calls.push(`${request.method()} ${request.url()}`);
    });
    await p.getByRole("row", { name: /mounted/ }).waitFor();
    await p.getByRole("button", { name: "Pause schedule mounted" }).click();
    await p.getByRole("status").filter({ hasText: "Paused mounted" }).waitFor();
    expect((await call(base, "GET", "/v1/schedules/mounted")).body.status).toBe("paused");
    expect(calls).toEqual(
      expect.arrayContaining([
        `GET ${base}/v1/stats`,
        `GET ${base}/v1/schedules?limit=100`,
        `GET ${base}/v1/jobs?limit=20&fields=${encodeURIComponent(JOB_LIST_FIELDS)}`,
        `GET ${base}/v1/dlq?limit=20`,
        `POST ${base}/v1/schedules/mounted/pause`,
      ]),
    );
    for (const url of calls) expect(url).toMatch(/^(GET|POST|DELETE) \S+\/api\/tickwork\/v1\//);
    expect(problems).toEqual([]);
  });

  it("retries a dead letter with its button, and shows jobs with their status", async () => {
    handle = await factories[0]!.make();
    const t = testHandlers();
    server = await startHarness({ store: handle.store, handlers: t.handlers });
    const submitted = await call(server.origin, "POST", "/v1/jobs", {
      json: { handler: "gated", input: null, retries: 0 },
    });
    const id = submitted.body.id as string;
    await call(server.origin, "GET", `/v1/jobs/${id}?wait=10s`);
    expect((await call(server.origin, "GET", "/v1/dlq")).body.items).toHaveLength(1);

    const p = await open(server);
    const dead = p
      .getByRole("table", { name: "Dead letters" })
      .getByRole("row", { name: new RegExp(id) });
    await dead.waitFor();
    expect(await dead.textContent()).toContain("the gate is closed");
    t.gate.open = true;
    await p.getByRole("button", { name: `Retry dead job ${id}` }).click();

    await until(async () => {
      const job = await call(server!.origin, "GET", `/v1/jobs/${id}`);
      return job.body.status === "succeeded";
    }, 10_000);
    const jobs = p.getByRole("table", { name: "Recent jobs" });
    await jobs.getByRole("row", { name: new RegExp(`${id}.*succeeded`) }).waitFor();
    await p.getByRole("table", { name: "Dead letters" }).getByText("No dead letters.").waitFor();
    expect(problems).toEqual([]);
  });

  it("asks for a key on 401 and shows the API's 403 when a read-only key tries to act", async () => {
    handle = await factories[0]!.make();
    // The app's own key auth: tenant t1 with a read-only key and a key that manages schedules.
    const tenants: TenantConfig[] = [
      {
        id: "t1",
        keys: [
          { hash: await hashKey("reader-key"), scopes: ["read"] },
          { hash: await hashKey("writer-key"), scopes: ["read", "schedules:write"] },
        ],
      },
    ];
    server = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      app: { tenants },
    });
    const created = await call(server.origin, "POST", "/v1/schedules", {
      json: { id: "hourly", handler: "echo", schedule: "@hourly" },
      headers: { authorization: "Bearer writer-key" },
    });
    expect(created.status).toBe(201);

    const p = await open(server);
    const key = p.getByRole("textbox", { name: "Key" });
    await key.waitFor();
    await key.fill("reader-key");
    await p.getByRole("button", { name: "Use this key" }).click();
    await p.getByRole("row", { name: /hourly/ }).waitFor();
    expect(await p.evaluate(() => sessionStorage.getItem("tickwork.apiKey:/"))).toBe("reader-key");

    await p.getByRole("button", { name: "Pause schedule hourly" }).click();
    await p
      .getByRole("status")
      .filter({ hasText: '403: this API key lacks the "schedules:write" scope' })
      .waitFor();
    const s = await call(server.origin, "GET", "/v1/schedules/hourly", {
      headers: { authorization: "Bearer writer-key" },
    });
    expect(s.body.status).toBe("active");
    expect(problems).toEqual([]);
  });
});
