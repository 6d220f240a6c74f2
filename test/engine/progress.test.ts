/**
 * A handler's progress and log, and cancelling a running job, end to end: the engine behind the
 * HTTP app over a real socket, the local queue delivering to its own worker route, read through
 * the API and the typed client, on the memory store, on Redis and on Upstash (REST bridge).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createClient, JobCancelledError } from "../../src/client/index.ts";
import { CancelledError } from "../../src/core/errors.ts";
import { logEntryJson } from "../../src/engine/attempt.ts";
import type { HandlerContext, Handlers } from "../../src/engine/index.ts";
import { MAX_LOG_ENTRY_BYTES } from "../../src/store/port.ts";
import { call, type Harness, startHarness, until } from "../http/harness.ts";
import { bearer, type TestTenant, TICK_SECRET, tenant } from "../security/support.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

/** What the handlers saw, for the test to inspect. */
function progressHandlers() {
  const seen = {
    writes: [] as boolean[],
    reason: undefined as unknown,
    stale: undefined as HandlerContext | undefined,
    tooBig: undefined as unknown,
  };
  const handlers: Handlers = {
    report: {
      run: async (_input, ctx) => {
        seen.writes.push(await ctx.progress({ done: 1, total: 2 }));
        seen.writes.push(await ctx.log("started", { batch: 7 }));
        seen.writes.push(await ctx.log("careful", undefined, "warn"));
        seen.writes.push(await ctx.progress({ done: 2, total: 2 }));
        return "reported";
      },
    },
    chatty: {
      run: async (_input, ctx) => {
        for (let i = 1; i <= 101; i++) await ctx.log(`line ${i}`);
        await ctx.log("z".repeat(5_000), { big: "y".repeat(5_000) });
        seen.tooBig = await ctx.progress("x".repeat(5_000)).catch((error: unknown) => error);
        return null;
      },
    },
    // Waits for its signal: only a cancel (or the timeout) ends it.
    watch: {
      timeout: "60s",
      run: (_input, ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener("abort", () => {
            seen.reason = ctx.signal.reason;
            reject(ctx.signal.reason);
          });
        }),
    },
    // Attempt 1 fails and keeps its context; attempt 2 succeeds.
    flaky: {
      retries: 1,
      run: (_input, ctx) => {
        if (ctx.attempt === 1) {
          seen.stale = ctx;
          throw new Error("first attempt fails");
        }
        return "second";
      },
    },
  };
  return { handlers, seen };
}

describe.each(storeFactories)("progress, logs and cancel on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let seen: ReturnType<typeof progressHandlers>["seen"];
  let a: TestTenant;
  let b: TestTenant;
  const asA = () => bearer(a.keys.admin!);

  beforeEach(async () => {
    handle = await factory.make();
    const made = progressHandlers();
    seen = made.seen;
    a = await tenant("progress-a", { admin: ["admin"] });
    b = await tenant("progress-b", { admin: ["admin"] });
    h = await startHarness({
      store: handle.store,
      handlers: made.handlers,
      app: { dev: false, tickSecret: TICK_SECRET, tenants: [a.config, b.config] },
      engine: { degradation: false },
    });
  });

  afterEach(async () => {
    await h.close();
    await handle.cleanup();
  });

  const submit = async (handler: string) =>
    (await call(h.origin, "POST", "/v1/jobs", { json: { handler }, headers: asA() })).body
      .id as string;

  it("a handler's progress and log are readable through the API and the client", async () => {
    const id = await submit("report");
    const tw = createClient({ url: h.origin, apiKey: a.keys.admin!.key });
    expect(await tw.jobs.handle(id).result({ timeout: "10s" })).toBe("reported");
    expect(seen.writes).toEqual([true, true, true, true]);

    const job = await tw.jobs.get(id);
    expect(job.progress).toEqual({ value: { done: 2, total: 2 }, at: expect.any(String) });
    expect(Date.parse(job.progress?.at ?? "")).toBeGreaterThanOrEqual(Date.parse(job.startedAt!));

    const logs = await call(h.origin, "GET", `/v1/jobs/${id}/logs?limit=1`, { headers: asA() });
    expect(logs.status).toBe(200);
    expect(logs.body).toEqual({
      items: [
        {
          at: expect.any(String),
          attempt: 1,
          level: "info",
          message: "started",
          fields: { batch: 7 },
        },
      ],
      cursor: expect.any(String),
    });
    const all = [];
    for await (const entry of tw.jobs.logs(id, { limit: 1 })) all.push(entry);
    expect(all.map((e) => [e.level, e.message])).toEqual([
      ["info", "started"],
      ["warn", "careful"],
    ]);

    // Tenant-scoped like the job: another tenant's key gets 404; so does an unknown job.
    const other = bearer(b.keys.admin!);
    expect((await call(h.origin, "GET", `/v1/jobs/${id}/logs`, { headers: other })).status).toBe(
      404,
    );
    expect((await call(h.origin, "GET", `/v1/jobs/${id}`, { headers: other })).status).toBe(404);
    const unknown = await call(h.origin, "GET", "/v1/jobs/j_0000000000000000000000/logs", {
      headers: asA(),
    });
    expect(unknown.status).toBe(404);
    const bad = await call(h.origin, "GET", `/v1/jobs/${id}/logs?cursor=abc`, { headers: asA() });
    expect(bad.status).toBe(400);
  });

  it("keeps the last 100 log entries, cuts an oversized entry, refuses oversized progress", async () => {
    const id = await submit("chatty");
    const tw = createClient({ url: h.origin, apiKey: a.keys.admin!.key });
    await tw.jobs.handle(id).result({ timeout: "20s" });
    const all = [];
    for await (const entry of tw.jobs.logs(id)) all.push(entry);
    expect(all).toHaveLength(100);
    expect(all[0]?.message).toBe("line 3");
    expect(all[98]?.message).toBe("line 101");
    const cut = all[99]!;
    expect(cut.message.endsWith("…")).toBe(true);
    expect(cut.fields).toEqual({ truncated: true });
    expect(seen.tooBig).toBeInstanceOf(RangeError);
    expect(String(seen.tooBig)).toMatch(/at most 4096/);
    expect((await tw.jobs.get(id)).progress).toBeUndefined();
  });

  it("a stale attempt's progress and log are refused: a no-op", async () => {
    const id = await submit("flaky");
    const tw = createClient({ url: h.origin, apiKey: a.keys.admin!.key });
    expect(await tw.jobs.handle(id).result({ timeout: "20s" })).toBe("second");
    expect(seen.stale?.attempt).toBe(1);
    expect(await seen.stale!.progress(99)).toBe(false);
    expect(await seen.stale!.log("late")).toBe(false);
    const job = await tw.jobs.get(id);
    expect(job).toMatchObject({ status: "succeeded", attempts: 2 });
    expect(job.progress).toBeUndefined();
    expect((await h.store.readLogs(id, { limit: 10 }))?.items).toEqual([]);
  });

  it("cancelling a running job aborts its signal and ends it cancelled, within the bound", async () => {
    const id = await submit("watch");
    await until(async () => (await h.store.getJob(id))?.status === "running", 10_000);
    const tw = createClient({ url: h.origin, apiKey: a.keys.admin!.key });
    const asked = Date.now();
    const answer = await tw.jobs.cancel(id);
    expect(answer).toMatchObject({ id, status: "running", cancelRequested: true });
    const error = await tw.jobs
      .handle(id)
      .result({ timeout: "10s" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobCancelledError);
    // Seen by the runner's poll (every `cancelCheckMs`, 1 s) — well inside the 60 s timeout.
    expect(Date.now() - asked).toBeLessThan(8_000);
    expect(seen.reason).toBeInstanceOf(CancelledError);
    const job = await tw.jobs.get(id);
    expect(job).toMatchObject({
      status: "cancelled",
      attempts: 1,
      cancelRequested: true,
      error: { name: "CancelledError" },
    });
    const stats = await h.store.stats();
    expect(stats.jobs.running).toBe(0);
    expect(stats.totals.failed).toBe(0);
  });
});

describe("logEntryJson", () => {
  it("passes an entry within 2 KiB as it is, and cuts a larger one to fit", () => {
    expect(JSON.parse(logEntryJson("info", "hi", { a: 1 }))).toEqual({
      level: "info",
      message: "hi",
      fields: { a: 1 },
    });
    const cut = logEntryJson("error", "é".repeat(3_000));
    expect(new TextEncoder().encode(cut).length).toBeLessThanOrEqual(MAX_LOG_ENTRY_BYTES);
    expect(JSON.parse(cut)).toMatchObject({ level: "error", fields: { truncated: true } });
  });
});
