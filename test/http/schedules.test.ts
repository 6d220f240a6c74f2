/**
 * `/v1/schedules` and the tick over a real socket, on the memory store and on Redis; occurrences
 * are delivered by the local queue to the app's own worker route.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import {
  call,
  expectProblem,
  type Harness,
  snapshot,
  startHarness,
  testHandlers,
  until,
} from "./harness.ts";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const berlinTime = (iso: string) =>
  new Intl.DateTimeFormat("en-GB", {
    timeZone: "Europe/Berlin",
    hour: "2-digit",
    minute: "2-digit",
  }).format(new Date(iso));

describe.each(storeFactories)("schedules over HTTP on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;

  beforeEach(async () => {
    handle = await factory.make();
    h = await startHarness({ store: handle.store, handlers: testHandlers().handlers });
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  const daily = {
    id: "daily-report",
    handler: "echo",
    schedule: "0 9 * * *",
    tz: "Europe/Berlin",
    input: { type: "sales" },
    priority: 7,
    timeout: "5m",
    retries: 3,
    maxRuns: 30,
    startAt: null,
    endAt: null,
    misfire: "once",
    overlap: "allow",
    jitter: "0s",
  };

  it("creates a schedule (201), replaces it (200), reads and lists it", async () => {
    const created = await call(h.origin, "POST", "/v1/schedules", { json: daily });
    expect(created.status).toBe(201);
    expect(created.headers.get("location")).toBe("/v1/schedules/daily-report");
    expect(created.body).toEqual({
      id: "daily-report",
      handler: "echo",
      schedule: "0 9 * * *",
      tz: "Europe/Berlin",
      status: "active",
      input: { type: "sales" },
      priority: 7,
      timeout: 300_000,
      retries: 3,
      maxRuns: 30,
      misfire: "once",
      overlap: "allow",
      jitter: 0,
      tags: [],
      nextRunAt: expect.stringMatching(ISO),
      runs: 0,
      createdAt: expect.stringMatching(ISO),
      updatedAt: expect.stringMatching(ISO),
    });
    expect(berlinTime(created.body.nextRunAt)).toBe("09:00");

    const replaced = await call(h.origin, "POST", "/v1/schedules", {
      json: { ...daily, input: { type: "refunds" }, jitter: "30s", endAt: "2099-01-01T00:00:00Z" },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.headers.get("location")).toBeNull();
    expect(replaced.body).toMatchObject({
      id: "daily-report",
      input: { type: "refunds" },
      jitter: 30_000,
      endAt: "2099-01-01T00:00:00.000Z",
      nextRunAt: created.body.nextRunAt,
      createdAt: created.body.createdAt,
    });

    const read = await call(h.origin, "GET", "/v1/schedules/daily-report");
    expect(read.body).toEqual(replaced.body);
    const listed = await call(h.origin, "GET", "/v1/schedules?handler=echo&status=active");
    expect(listed.body).toEqual({ items: [replaced.body] });
    expect((await call(h.origin, "GET", "/v1/schedules?status=paused")).body).toEqual({
      items: [],
    });
    expectProblem(await call(h.origin, "GET", "/v1/schedules/nope"), 404);
  });

  it("pages the listing newest first", async () => {
    for (const id of ["a", "b", "c"]) {
      await call(h.origin, "POST", "/v1/schedules", {
        json: { id, handler: "echo", schedule: "1h" },
      });
      await new Promise((r) => setTimeout(r, 5));
    }
    const page1 = await call(h.origin, "GET", "/v1/schedules?limit=2");
    expect(page1.body.items.map((s: { id: string }) => s.id)).toEqual(["c", "b"]);
    const page2 = await call(h.origin, "GET", `/v1/schedules?limit=2&cursor=${page1.body.cursor}`);
    expect(page2.body.items.map((s: { id: string }) => s.id)).toEqual(["a"]);
    expect(page2.body.cursor).toBeUndefined();
  });

  it("patches a schedule and recomputes nextRunAt; refuses a patch of id or a bad cron", async () => {
    const created = await call(h.origin, "POST", "/v1/schedules", { json: daily });
    const patched = await call(h.origin, "PATCH", "/v1/schedules/daily-report", {
      json: { schedule: "0 18 * * *", priority: 2, tags: ["evening"], maxRuns: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      schedule: "0 18 * * *",
      priority: 2,
      tags: ["evening"],
      status: "active",
    });
    expect(patched.body.maxRuns).toBeUndefined();
    expect(berlinTime(patched.body.nextRunAt)).toBe("18:00");
    expect(patched.body.nextRunAt).not.toBe(created.body.nextRunAt);

    const state = await snapshot(h.store);
    const renamed = await call(h.origin, "PATCH", "/v1/schedules/daily-report", {
      json: { id: "other" },
    });
    expectProblem(renamed, 400);
    const badCron = await call(h.origin, "PATCH", "/v1/schedules/daily-report", {
      json: { schedule: "61 * * * *" },
    });
    expectProblem(badCron, 422);
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/nope", { json: { priority: 1 } }),
      404,
    );
    expect(await snapshot(h.store)).toBe(state);
  });

  it("refuses a window whose startAt is not before its endAt: 400 in a create, 422 in a PATCH", async () => {
    const window = { startAt: "2031-01-01T00:00:00.000Z", endAt: "2030-01-01T00:00:00.000Z" };
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { ...daily, ...window },
    });
    expectProblem(created, 400);
    expect(created.body.errors).toEqual([
      { path: "endAt", message: "startAt must be before endAt" },
    ]);
    await call(h.origin, "POST", "/v1/schedules", {
      json: { ...daily, endAt: window.endAt },
    });
    const state = await snapshot(h.store);
    // Judged with the stored endAt it leaves alone.
    const patched = await call(h.origin, "PATCH", "/v1/schedules/daily-report", {
      json: { startAt: window.startAt },
    });
    expectProblem(patched, 422);
    expect(patched.body.type).toBe("urn:tickwork:problem:invalid_window");
    expect(await snapshot(h.store)).toBe(state);
  });

  it("checks a schedule's input against its handler's schema as submit does (422, nothing written)", async () => {
    const refused = { handler: "typed", input: { n: "one" } };
    const submitted = await call(h.origin, "POST", "/v1/jobs", { json: refused });
    expectProblem(submitted, 422);
    const state = await snapshot(h.store);

    // Create: the same problem, issues and all, as the submit of that handler and input.
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "typed-daily", schedule: "0 9 * * *", ...refused },
    });
    expectProblem(created, 422);
    expect(created.body).toEqual(submitted.body);
    expect(created.body.errors).toEqual([{ path: "input.n", message: expect.any(String) }]);
    expect(await snapshot(h.store)).toBe(state);

    const good = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "typed-daily", handler: "typed", schedule: "0 9 * * *", input: { n: 1 } },
    });
    expect(good.status).toBe(201);
    const echo = await call(h.origin, "POST", "/v1/schedules", { json: daily });
    expect(echo.status).toBe(201);
    const written = await snapshot(h.store);

    // Replace: the new definition is checked like a new one.
    const replaced = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "typed-daily", handler: "typed", schedule: "0 9 * * *", input: { n: "two" } },
    });
    expectProblem(replaced, 422);
    expect(replaced.body.errors).toEqual(created.body.errors);
    // Patch of the input alone, checked against the stored handler.
    const inputOnly = await call(h.origin, "PATCH", "/v1/schedules/typed-daily", {
      json: { input: { n: "three" } },
    });
    expectProblem(inputOnly, 422);
    expect(inputOnly.body.errors).toEqual(created.body.errors);
    // Patch of the handler alone, checked against the stored input ({ type: "sales" }, no `n`).
    const handlerOnly = await call(h.origin, "PATCH", "/v1/schedules/daily-report", {
      json: { handler: "typed" },
    });
    expectProblem(handlerOnly, 422, /input does not match handler "typed"/);
    expect(handlerOnly.body.errors).toEqual([{ path: "input.n", message: expect.any(String) }]);
    expect(await snapshot(h.store)).toBe(written);

    // The same patches with a pair the schema accepts go through.
    const fixed = await call(h.origin, "PATCH", "/v1/schedules/daily-report", {
      json: { handler: "typed", input: { n: 2 } },
    });
    expect(fixed.status).toBe(200);
    expect(fixed.body).toMatchObject({ handler: "typed", input: { n: 2 } });
    const retyped = await call(h.origin, "PATCH", "/v1/schedules/typed-daily", {
      json: { input: { n: 3 } },
    });
    expect(retyped.status).toBe(200);
    expect(retyped.body.input).toEqual({ n: 3 });
  });

  it("pauses and resumes a schedule", async () => {
    await call(h.origin, "POST", "/v1/schedules", { json: daily });
    const paused = await call(h.origin, "POST", "/v1/schedules/daily-report/pause");
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ id: "daily-report", status: "paused" });
    expect((await call(h.origin, "GET", "/v1/schedules?status=paused")).body.items).toHaveLength(1);
    const resumed = await call(h.origin, "POST", "/v1/schedules/daily-report/resume");
    expect(resumed.body).toMatchObject({
      id: "daily-report",
      status: "active",
      nextRunAt: expect.stringMatching(ISO),
    });
    expectProblem(await call(h.origin, "POST", "/v1/schedules/nope/pause"), 404);
    expectProblem(await call(h.origin, "POST", "/v1/schedules/nope/resume"), 404);
  });

  it("deletes a schedule", async () => {
    await call(h.origin, "POST", "/v1/schedules", { json: daily });
    const deleted = await call(h.origin, "DELETE", "/v1/schedules/daily-report");
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: "daily-report", status: "deleted" });
    expectProblem(await call(h.origin, "GET", "/v1/schedules/daily-report"), 404);
    expectProblem(await call(h.origin, "DELETE", "/v1/schedules/daily-report"), 404);
  });

  it("fires on the tick and lists its runs newest first", async () => {
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "every-second", handler: "echo", schedule: "1s", input: { n: 1 } },
    });
    expect(created.status).toBe(201);
    await new Promise((r) =>
      setTimeout(r, Math.max(0, Date.parse(created.body.nextRunAt) - Date.now())),
    );
    const tick = await call(h.origin, "POST", "/v1/tick");
    expect(tick.status).toBe(200);
    expect(tick.body).toEqual({
      leader: true,
      dispatched: expect.any(Number),
      recovered: 0,
      due: 1,
      tookMs: expect.any(Number),
    });
    expect(tick.body.dispatched).toBeGreaterThanOrEqual(2);

    await until(async () => {
      const runs = await call(h.origin, "GET", "/v1/schedules/every-second/runs?limit=100");
      return (
        runs.body.items.filter((j: { status: string }) => j.status === "succeeded").length >= 2
      );
    });
    const runs = await call(h.origin, "GET", "/v1/schedules/every-second/runs?limit=1");
    expect(runs.status).toBe(200);
    expect(runs.body.items).toHaveLength(1);
    expect(runs.body.cursor).toEqual(expect.any(String));
    const [latest] = runs.body.items;
    expect(latest).toMatchObject({
      scheduleId: "every-second",
      handler: "echo",
      input: { n: 1 },
      fireAt: expect.stringMatching(ISO),
    });
    expect(latest.id).toBe(`every-second@${Date.parse(latest.fireAt)}`);
    const rest = await call(
      h.origin,
      "GET",
      `/v1/schedules/every-second/runs?cursor=${runs.body.cursor}`,
    );
    for (const older of rest.body.items)
      expect(Date.parse(older.fireAt)).toBeLessThan(Date.parse(latest.fireAt));
    const viaJobs = await call(h.origin, "GET", "/v1/jobs?scheduleId=every-second");
    expect(viaJobs.body.items.length).toBe(rest.body.items.length + 1);

    const schedule = await call(h.origin, "GET", "/v1/schedules/every-second");
    expect(schedule.body.runs).toBe(tick.body.dispatched);
    expect(schedule.body.lastRunAt).toEqual(expect.stringMatching(ISO));
    expectProblem(await call(h.origin, "GET", "/v1/schedules/nope/runs"), 404);
  });
});
