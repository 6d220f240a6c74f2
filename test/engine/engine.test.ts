/**
 * The engine's behaviour end to end — broker, ticker, runner — on both stores, with the queue
 * double delivering exactly when the test says.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { NonRetryableError, RetryAfterError, TickworkError } from "../../src/core/errors.ts";
import { createEngine, type Engine, type Handlers, silentLogger } from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The error classes of a second copy of the module, as an app gets when it loads tickwork twice
// (TypeScript handlers in a CommonJS project, compiled by tsx into a copy of their own).
const secondCopy = new URL("../../src/core/errors.ts?second-copy", import.meta.url).href;
const other = (await import(
  /* @vite-ignore */ secondCopy
)) as typeof import("../../src/core/errors.ts");

/** Holds the `hold` handler's first run: `running` resolves once it began, `open()` ends it. */
function newLatch() {
  let began!: () => void;
  let open!: () => void;
  const running = new Promise<void>((resolve) => {
    began = resolve;
  });
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { holding: false, began, running, open, opened };
}

describe.each(storeFactories)("engine on $name", (factory) => {
  let latch = newLatch();
  let handle: StoreHandle;
  let queue: ChaosQueue;
  let engine: Engine;
  const calls: {
    handler: string;
    input: unknown;
    attempt: number;
    jobId: string;
    scheduleId?: string;
    fireAt?: number;
  }[] = [];

  /** What the `late` handler's signal said when it first read it, after its timeout. */
  let lateSignal: Promise<{ aborted: boolean; reason: unknown }> | undefined;

  const handlers: Handlers = {
    echo: {
      run: (input, ctx) => {
        calls.push({ handler: "echo", input, ...ctxInfo(ctx) });
        return input;
      },
    },
    typed: { input: z.object({ n: z.number() }), run: ({ n }) => n * 2 },
    flaky: {
      run: (input, ctx) => {
        calls.push({ handler: "flaky", input, ...ctxInfo(ctx) });
        if (ctx.attempt <= (input as { times: number }).times)
          throw new Error(`fail #${ctx.attempt}`);
        return "ok";
      },
    },
    fatal: { run: () => Promise.reject(new NonRetryableError("bad data")) },
    later: { run: () => Promise.reject(new RetryAfterError("slow down", 7_000)) },
    fatalCopy: { run: () => Promise.reject(new other.NonRetryableError("bad data")) },
    laterCopy: { run: () => Promise.reject(new other.RetryAfterError("slow down", 7_000)) },
    slow: {
      timeout: "1s",
      run: (_input, ctx) =>
        new Promise((resolve, reject) => {
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason));
          setTimeout(resolve, 5_000);
        }),
    },
    // Runs until the test opens the latch (only the first run to begin is held).
    hold: {
      run: async () => {
        if (!latch.holding) {
          latch.holding = true;
          latch.began();
          await latch.opened;
        }
        return "held";
      },
    },
    parent: {
      run: async (_input, ctx) =>
        (await ctx.jobs.submit({ handler: "echo", input: { from: ctx.jobId } })).job.id,
    },
    // Works on a copy of its context, as a handler passing `{ ...ctx, logger }` on would.
    copied: {
      run: async (_input, ctx) => {
        const { jobs, signal, jobId } = { ...ctx };
        const child = await jobs.submit({ handler: "echo", input: { from: jobId } });
        return { child: child.job.id, aborted: signal.aborted, same: signal === ctx.signal };
      },
    },
    // Reads its signal for the first time only after its timeout has passed (`lateSignal`).
    late: {
      timeout: "1s",
      run: (_input, ctx) => {
        lateSignal = new Promise((resolve) =>
          setTimeout(
            () => resolve({ aborted: ctx.signal.aborted, reason: ctx.signal.reason }),
            1_500,
          ),
        );
        return lateSignal;
      },
    },
  };

  function ctxInfo(ctx: { attempt: number; jobId: string; scheduleId?: string; fireAt?: number }) {
    return {
      attempt: ctx.attempt,
      jobId: ctx.jobId,
      ...(ctx.scheduleId ? { scheduleId: ctx.scheduleId } : {}),
      ...(ctx.fireAt ? { fireAt: ctx.fireAt } : {}),
    };
  }

  beforeEach(async () => {
    latch = newLatch();
    calls.length = 0;
    handle = await factory.make();
    queue = new ChaosQueue(prng(7));
    engine = createEngine({
      store: handle.store,
      transport: queue,
      handlers,
      logger: silentLogger,
      leaseGraceMs: 100,
      tick: { horizonMs: 60_000, recoverGraceMs: 200 },
    });
  });

  afterEach(async () => {
    await handle.cleanup();
  });

  /** Deliver everything, waiting for not-before times and retry delays, like the queue would. */
  async function drain(maxMs = 8_000) {
    const until = Date.now() + maxMs;
    while (queue.pending.length > 0 && Date.now() < until) {
      const delivered = await queue.deliverSome(
        (d) => engine.runner.deliver(d).then(deliveryResponse),
        (d) => engine.runner.dead(d).then(deliveryResponse),
        100,
      );
      if (delivered === 0) await sleep(25);
    }
  }

  async function deliverRaw(job: unknown, signature = "chaos-queue-signature") {
    const outcome = await engine.runner.deliver({
      url: "http://worker.test/v1/worker",
      headers: new Headers({ "upstash-signature": signature }),
      body: typeof job === "string" ? job : JSON.stringify(job),
    });
    return deliveryResponse(outcome);
  }

  describe("jobs", () => {
    it("runs a submitted job once and stores its result; a duplicate delivery does not run it again", async () => {
      const { job, replayed } = await engine.broker.submit({
        handler: "echo",
        input: { hello: "world" },
      });
      expect(replayed).toBe(false);
      expect(job).toMatchObject({
        handler: "echo",
        status: "queued",
        attempts: 0,
        priority: 5,
        input: { hello: "world" },
      });
      expect(queue.pending).toHaveLength(1);
      const message = queue.pending[0]!.message;
      await drain();
      const done = await engine.store.getJob(job.id);
      expect(done).toMatchObject({ status: "succeeded", attempts: 1, result: { hello: "world" } });
      const again = await deliverRaw(message.job);
      expect(again.status).toBe(200);
      expect(calls.filter((c) => c.jobId === job.id)).toHaveLength(1);
    });

    it("replays an idempotency key with the first job and publishes nothing new", async () => {
      const a = await engine.broker.submit({
        handler: "echo",
        input: 1,
        idempotencyKey: "order-1",
      });
      const b = await engine.broker.submit({
        handler: "echo",
        input: 2,
        idempotencyKey: "order-1",
      });
      expect(b.replayed).toBe(true);
      expect(b.job.id).toBe(a.job.id);
      expect(b.job.input).toBe(1);
      expect(queue.pending).toHaveLength(1);
    });

    it("retries a failing handler and succeeds on the third attempt", async () => {
      const { job } = await engine.broker.submit({
        handler: "flaky",
        input: { times: 2 },
        retries: 3,
      });
      await drain();
      expect(await engine.store.getJob(job.id)).toMatchObject({
        status: "succeeded",
        attempts: 3,
        result: "ok",
      });
      expect(calls.map((c) => c.attempt)).toEqual([1, 2, 3]);
    });

    it("a job failing every attempt ends dead in the dead-letter list, and a retry runs it again", async () => {
      const { job } = await engine.broker.submit({
        handler: "flaky",
        input: { times: 99 },
        retries: 1,
      });
      await drain();
      expect(await engine.store.getJob(job.id)).toMatchObject({ status: "dead", attempts: 2 });
      const dead = await engine.store.listDead({ limit: 10 });
      expect(dead.items.map((j) => j.id)).toEqual([job.id]);
      await engine.broker.retryDead(job.id);
      expect(await engine.store.getJob(job.id)).toMatchObject({ status: "queued" });
      await drain();
      expect(calls.filter((c) => c.jobId === job.id).map((c) => c.attempt)).toEqual([1, 2, 3, 4]);
    });

    it("NonRetryableError answers 489 with the non-retryable header and the job is dead", async () => {
      const { job } = await engine.broker.submit({ handler: "fatal", retries: 5 });
      const res = await deliverRaw(queue.pending[0]!.message.job);
      expect(res.status).toBe(489);
      expect(res.headers.get("Upstash-NonRetryable-Error")).toBe("true");
      expect(await engine.store.getJob(job.id)).toMatchObject({
        status: "dead",
        attempts: 1,
        error: { name: "NonRetryableError", message: "bad data" },
      });
    });

    it("RetryAfterError answers a retryable status with Retry-After", async () => {
      await engine.broker.submit({ handler: "later" });
      const res = await deliverRaw(queue.pending[0]!.message.job);
      expect(res.status).toBe(500);
      expect(res.headers.get("Retry-After")).toBe("7");
    });

    it("NonRetryableError and RetryAfterError of another copy of tickwork act as they do", async () => {
      expect(new other.NonRetryableError("x")).not.toBeInstanceOf(NonRetryableError);
      const { job } = await engine.broker.submit({ handler: "fatalCopy", retries: 5 });
      const fatal = await deliverRaw(queue.pending[0]!.message.job);
      expect(fatal.status).toBe(489);
      expect(await engine.store.getJob(job.id)).toMatchObject({ status: "dead", attempts: 1 });
      queue.pending.length = 0;
      await engine.broker.submit({ handler: "laterCopy" });
      const later = await deliverRaw(queue.pending[0]!.message.job);
      expect(later.status).toBe(500);
      expect(later.headers.get("Retry-After")).toBe("7");
    });

    it("aborts a handler at its timeout through ctx.signal", async () => {
      const { job } = await engine.broker.submit({ handler: "slow", retries: 0 });
      const res = await deliverRaw(queue.pending[0]!.message.job);
      expect(res.status).toBe(489);
      expect(await engine.store.getJob(job.id)).toMatchObject({
        status: "dead",
        error: { name: "TimeoutError" },
      });
    });

    it("answers 409 to a second delivery while the first attempt runs", async () => {
      await engine.broker.submit({ handler: "hold" });
      const spec = queue.pending[0]!.message.job;
      const first = deliverRaw(spec);
      await latch.running; // the first attempt is in its handler
      const second = await deliverRaw(spec);
      latch.open();
      expect(second.status).toBe(409);
      expect(Number(second.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
      expect((await first).status).toBe(200);
    });

    it("rejects an unsigned delivery (401) and a body that is not a job (489)", async () => {
      await engine.broker.submit({ handler: "echo" });
      expect((await deliverRaw(queue.pending[0]!.message.job, "forged")).status).toBe(401);
      expect((await deliverRaw("{not json")).status).toBe(489);
      expect(calls).toHaveLength(0);
    });

    it("cancels a queued job, which then never runs; cancelling a finished job is a conflict", async () => {
      const { job } = await engine.broker.submit({ handler: "echo", delay: "1h" });
      expect((await engine.broker.cancel(job.id)).status).toBe("cancelled");
      expect((await deliverRaw(queue.pending.shift()!.message.job)).status).toBe(200);
      expect(calls).toHaveLength(0);
      const other = await engine.broker.submit({ handler: "echo" });
      await drain();
      await expect(engine.broker.cancel(other.job.id)).rejects.toMatchObject({ status: 409 });
      await expect(engine.broker.cancel("nope")).rejects.toMatchObject({ status: 404 });
    });

    it("stamps runAt from a delay and publishes not before it", async () => {
      const now = await engine.store.now();
      const { job } = await engine.broker.submit({ handler: "echo", delay: "2s" });
      const after = await engine.store.now();
      expect(job.runAt - now).toBeGreaterThanOrEqual(2_000);
      // 2 s after a moment of the submit, however long the submit took.
      expect(job.runAt - after).toBeLessThanOrEqual(2_000);
      expect(queue.pending[0]!.notBefore).toBe(job.runAt);
    });

    it("validates submissions: unknown handler 422, bad input 422, delay with runAt 400", async () => {
      const cases: [unknown, number][] = [
        [{ handler: "nope" }, 422],
        [{ handler: "typed", input: { n: "x" } }, 422],
        [{ handler: "echo", delay: "5s", runAt: Date.now() }, 400],
        [{ handler: "echo", priority: 11 }, 400],
        [{ handler: "bad name!" }, 400],
        [{ handler: "echo", extra: 1 }, 400],
      ];
      for (const [body, status] of cases) {
        const error = await engine.broker.submit(body as never).catch((e) => e);
        expect(error, JSON.stringify(body)).toBeInstanceOf(TickworkError);
        expect(error.status, JSON.stringify(body)).toBe(status);
      }
      expect(queue.pending).toHaveLength(0);
      expect((await engine.store.listJobs({ limit: 10 })).items).toHaveLength(0);
    });

    it("a copy of ctx (spread, destructured) keeps its signal and jobs", async () => {
      const { job } = await engine.broker.submit({ handler: "copied" });
      await drain();
      const result = (await engine.store.getJob(job.id))!.result as {
        child: string;
        aborted: boolean;
        same: boolean;
      };
      expect(result).toMatchObject({ aborted: false, same: true });
      expect(await engine.store.getJob(result.child)).toMatchObject({
        status: "succeeded",
        result: { from: job.id },
      });
    });

    it("a signal first read after the timeout is already aborted, with the TimeoutError", async () => {
      await engine.broker.submit({ handler: "late", retries: 0 });
      const res = await deliverRaw(queue.pending[0]!.message.job);
      expect(res.status).toBe(489);
      const seen = await lateSignal!;
      expect(seen.aborted).toBe(true);
      expect(seen.reason).toMatchObject({ name: "TimeoutError" });
    });

    it("gives handlers ctx.jobs.submit for follow-up work", async () => {
      const { job } = await engine.broker.submit({ handler: "parent" });
      await drain();
      const child = (await engine.store.getJob(job.id))!.result as string;
      expect(await engine.store.getJob(child)).toMatchObject({
        status: "succeeded",
        result: { from: job.id },
      });
    });
  });

  describe("schedules", () => {
    it("dispatches sub-minute occurrences within the horizon, each not before its fire time", async () => {
      const { schedule } = await engine.broker.createSchedule({
        id: "ten",
        handler: "echo",
        schedule: "10s",
      });
      expect(schedule.status).toBe("active");
      expect(schedule.nextRunAt! % 10_000).toBe(0);
      const result = await engine.ticker.tick();
      expect(result).toMatchObject({ leader: true, idle: false, due: 1 });
      const fires = queue.pending.map((p) => p.message.job.fireAt!);
      expect(fires.length).toBeGreaterThanOrEqual(6);
      expect(fires.length).toBeLessThanOrEqual(7);
      for (const [i, p] of queue.pending.entries()) {
        expect(p.notBefore).toBe(p.message.job.fireAt);
        expect(p.message.id).toBe(`ten@${fires[i]}`);
        if (i > 0) expect(fires[i]! - fires[i - 1]!).toBe(10_000);
      }
      const again = await engine.ticker.tick();
      expect(again).toMatchObject({ idle: true });
      expect(queue.pending).toHaveLength(fires.length);
    });

    it("rejects an invalid cron expression or time zone with 422 and stores nothing", async () => {
      for (const body of [
        { handler: "echo", schedule: "61 * * * *" },
        { handler: "echo", schedule: "0 9 * * *", tz: "Mars/Olympus" },
        { handler: "echo", schedule: "0s" },
      ]) {
        await expect(engine.broker.createSchedule(body)).rejects.toMatchObject({ status: 422 });
      }
      expect((await engine.store.listSchedules({ limit: 10 })).items).toHaveLength(0);
    });

    it("refuses input the handler's schema refuses on create, replace and patch, as submit does", async () => {
      const submitError = await engine.broker
        .submit({ handler: "typed", input: { n: "x" } })
        .catch((e) => e);
      const expected = {
        status: 422,
        code: "invalid_input",
        message: submitError.message,
        errors: submitError.errors,
      };
      expect(expected.errors).toEqual([{ path: "input.n", message: expect.any(String) }]);
      // An input refused as a whole is named `input`, not `input.`.
      await expect(engine.broker.submit({ handler: "typed", input: 7 })).rejects.toMatchObject({
        status: 422,
        errors: [{ path: "input", message: expect.any(String) }],
      });
      const refused = { handler: "typed", schedule: "1h", input: { n: "x" } };
      await expect(engine.broker.createSchedule(refused)).rejects.toMatchObject(expected);
      expect((await engine.store.listSchedules({ limit: 10 })).items).toHaveLength(0);

      await engine.broker.createSchedule({
        id: "t",
        handler: "typed",
        schedule: "1h",
        input: { n: 1 },
      });
      await engine.broker.createSchedule({
        id: "e",
        handler: "echo",
        schedule: "1h",
        input: { v: 1 },
      });
      const before = await engine.store.listSchedules({ limit: 10 });
      await expect(engine.broker.createSchedule({ id: "t", ...refused })).rejects.toMatchObject(
        expected,
      );
      await expect(engine.broker.updateSchedule("t", { input: { n: "x" } })).rejects.toMatchObject(
        expected,
      );
      // The stored input ({ v: 1 }) under the new handler: `n` is missing.
      await expect(engine.broker.updateSchedule("e", { handler: "typed" })).rejects.toMatchObject({
        status: 422,
        code: "invalid_input",
        errors: [{ path: "input.n", message: expect.any(String) }],
      });
      expect(await engine.store.listSchedules({ limit: 10 })).toEqual(before);

      expect(
        await engine.broker.updateSchedule("e", { handler: "typed", input: { n: 5 } }),
      ).toMatchObject({
        handler: "typed",
        input: { n: 5 },
      });
      expect((await engine.broker.updateSchedule("t", { input: { n: 6 } })).input).toEqual({
        n: 6,
      });
    });

    it("pause stops dispatch, resume restarts it from now, delete removes it", async () => {
      await engine.broker.createSchedule({ id: "p", handler: "echo", schedule: "1s" });
      await engine.broker.pauseSchedule("p");
      expect(await engine.ticker.tick()).toMatchObject({ idle: true });
      expect(queue.pending).toHaveLength(0);
      const resumed = await engine.broker.resumeSchedule("p");
      expect(resumed.status).toBe("active");
      await engine.ticker.tick();
      expect(queue.pending.length).toBeGreaterThan(0);
      await engine.broker.deleteSchedule("p");
      expect(await engine.store.getSchedule("p")).toBeNull();
      await expect(engine.broker.deleteSchedule("p")).rejects.toMatchObject({ status: 404 });
    });

    it("a PATCH that leaves a paused schedule nothing to fire keeps it paused: what it dispatched before the pause is still skipped", async () => {
      await engine.broker.createSchedule({
        id: "bounded",
        handler: "echo",
        schedule: "1s",
        maxRuns: 500,
      });
      await engine.ticker.tick();
      const dispatched = queue.pending.map((p) => p.message.job);
      expect(dispatched.length).toBeGreaterThan(1);
      const paused = await engine.broker.pauseSchedule("bounded");
      // Capped at what was dispatched (or ended now): nothing is left for it to fire.
      const patched = await engine.broker.updateSchedule("bounded", { maxRuns: paused.runs });
      expect(patched).toMatchObject({ status: "paused", nextRunAt: null });
      const answer = await deliverRaw(dispatched[0]);
      expect(await answer.json()).toMatchObject({ status: "skipped" });
      expect(calls.filter((c) => c.scheduleId === "bounded")).toHaveLength(0);
      // Resumed, it completes (its occurrences not yet begun then run).
      expect(await engine.broker.resumeSchedule("bounded")).toMatchObject({
        status: "completed",
        nextRunAt: null,
      });
      expect(await (await deliverRaw(dispatched[1])).json()).toMatchObject({
        status: "succeeded",
      });
    });

    it("pausing a schedule the tick completed keeps its dispatched occurrences from starting; resumed, it completes", async () => {
      await engine.broker.createSchedule({
        id: "done",
        handler: "echo",
        schedule: "1s",
        maxRuns: 3,
      });
      await engine.ticker.tick();
      const dispatched = queue.pending.map((p) => p.message.job);
      expect(dispatched).toHaveLength(3);
      expect(await engine.broker.getSchedule("done")).toMatchObject({ status: "completed" });
      const paused = await engine.broker.pauseSchedule("done");
      expect(paused).toMatchObject({ status: "paused", nextRunAt: null });
      expect(await (await deliverRaw(dispatched[0]!)).json()).toMatchObject({ status: "skipped" });
      expect(calls.filter((c) => c.scheduleId === "done")).toHaveLength(0);
      // Resumed, it completes again, and what has not begun runs.
      expect(await engine.broker.resumeSchedule("done")).toMatchObject({
        status: "completed",
        nextRunAt: null,
      });
      expect(await (await deliverRaw(dispatched[1]!)).json()).toMatchObject({
        status: "succeeded",
      });
    });

    it("resume does not re-dispatch (or re-count) occurrences already dispatched ahead", async () => {
      await engine.broker.createSchedule({
        id: "ahead",
        handler: "echo",
        schedule: "1s",
        maxRuns: 500,
      });
      await engine.ticker.tick();
      const first = queue.pending.length;
      expect(first).toBeGreaterThan(50);
      await engine.broker.pauseSchedule("ahead");
      await engine.broker.resumeSchedule("ahead");
      await engine.ticker.tick();
      const ids = queue.pending.map((p) => p.message.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect((await engine.store.getSchedule("ahead"))!.runs).toBe(ids.length);
    });

    it("completes after maxRuns and runs exactly that many times", async () => {
      await engine.broker.createSchedule({
        id: "three",
        handler: "echo",
        schedule: "1s",
        maxRuns: 3,
      });
      await engine.ticker.tick();
      await drain();
      const s = await engine.store.getSchedule("three");
      expect(s).toMatchObject({ status: "completed", runs: 3, nextRunAt: null });
      expect(calls.filter((c) => c.scheduleId === "three")).toHaveLength(3);
      expect(new Set(calls.map((c) => c.fireAt)).size).toBe(3);
    });

    it("replacing a schedule keeps its runs and a paused status; PATCH recomputes nextRunAt", async () => {
      await engine.broker.createSchedule({
        id: "r",
        handler: "echo",
        schedule: "1s",
        maxRuns: 100,
      });
      await engine.ticker.tick();
      const before = (await engine.store.getSchedule("r"))!;
      expect(before.runs).toBeGreaterThan(0);
      await engine.broker.pauseSchedule("r");
      const { schedule, created } = await engine.broker.createSchedule({
        id: "r",
        handler: "echo",
        schedule: "1s",
        maxRuns: 100,
        input: { v: 2 },
      });
      expect(created).toBe(false);
      expect(schedule).toMatchObject({ runs: before.runs, status: "paused", input: { v: 2 } });
      const patched = await engine.broker.updateSchedule("r", {
        schedule: "0 9 * * *",
        tz: "Europe/Berlin",
      });
      expect(patched.schedule).toBe("0 9 * * *");
      expect(patched.nextRunAt).not.toBe(schedule.nextRunAt);
      await expect(engine.broker.updateSchedule("missing", { priority: 2 })).rejects.toMatchObject({
        status: 404,
      });
    });

    it("overlap skip: an occurrence whose predecessor still runs is recorded as skipped", async () => {
      await engine.broker.createSchedule({
        id: "ov",
        handler: "hold",
        schedule: "1s",
        overlap: "skip",
        maxRuns: 2,
      });
      await engine.ticker.tick();
      expect(queue.pending).toHaveLength(2);
      const [a, b] = queue.pending.map((p) => p.message.job);
      const first = deliverRaw(a);
      await latch.running; // the first occurrence is in its handler
      const second = await deliverRaw(b);
      latch.open();
      expect(second.status).toBe(200);
      await first;
      expect((await engine.store.getJob(a!.id))!.status).toBe("succeeded");
      expect((await engine.store.getJob(b!.id))!.status).toBe("skipped");
    });
  });
});
