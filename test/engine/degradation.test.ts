/**
 * The degradation controller through the engine (docs/architecture.md, "Admission control"): the
 * broker's submits and the leader tick evaluate it from the shared store; the level moves only
 * after the debounce and returns
 * only below the lower threshold; at `critical` high-priority schedules keep running while the
 * others are held, and the held ones run again by their misfire policy once back to normal.
 *
 * The memory store with an injected clock (so a 30 s debounce costs nothing), the queue double
 * delivering exactly when the test says, and the real broker, ticker and runner.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { OverloadedError } from "../../src/core/errors.ts";
import type { JobRecord } from "../../src/core/model.ts";
import { createEngine, type Engine, type Handlers, type Logger } from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";

const MINUTE = 60_000;
/** 2030-01-01T00:00:00Z: minute-aligned, so every-minute schedules fire on round numbers. */
const T0 = Date.UTC(2030, 0, 1);

interface Line {
  level: "debug" | "info" | "warn" | "error";
  msg: string;
  fields?: Record<string, unknown>;
}

/** A logger that keeps its lines (children write to the same list). */
function recordingLogger(lines: Line[]): Logger {
  const logger: Logger = {
    debug: (msg, fields) => lines.push({ level: "debug", msg, ...(fields ? { fields } : {}) }),
    info: (msg, fields) => lines.push({ level: "info", msg, ...(fields ? { fields } : {}) }),
    warn: (msg, fields) => lines.push({ level: "warn", msg, ...(fields ? { fields } : {}) }),
    error: (msg, fields) => lines.push({ level: "error", msg, ...(fields ? { fields } : {}) }),
    child: () => logger,
  };
  return logger;
}

describe("degradation through the engine", () => {
  let now: number;
  let queue: ChaosQueue;
  let engine: Engine;
  let lines: Line[];
  const ran: { handler: string; fireAt?: number }[] = [];

  const handlers: Handlers = {
    work: { run: () => "done" },
    report: {
      run: (_input, ctx) => {
        ran.push({
          handler: `report:${ctx.scheduleId}`,
          ...(ctx.fireAt ? { fireAt: ctx.fireAt } : {}),
        });
      },
    },
  };

  beforeEach(() => {
    now = T0 + 30_000;
    ran.length = 0;
    lines = [];
    queue = new ChaosQueue(prng(11));
    engine = createEngine({
      store: new MemoryStore({ clock: () => now }),
      transport: queue,
      handlers,
      logger: recordingLogger(lines),
      instanceId: "tw-test",
      tick: { horizonMs: 0, misfireGraceMs: 0 },
      degradation: {
        queueDepth: { normal: 3, degraded: 5, critical: 8 },
        debounceMs: 30_000,
        degradedDelayMs: 1_000,
        critical: "reject",
        retryAfterMs: 20_000,
        // Every submit evaluates the controller (this test moves the clock by hand); the default
        // reuse of a level for 1 s is tested in degradation-reuse.test.ts.
        evaluateEveryMs: 0,
      },
    });
  });

  /** Submits `n` jobs the queue does not deliver (a stuck queue): they stay in the backlog. */
  async function stuckJobs(n: number): Promise<JobRecord[]> {
    const jobs: JobRecord[] = [];
    for (let i = 0; i < n; i++) {
      const { job } = await engine.broker.submit({ handler: "work" });
      jobs.push(job);
    }
    const ids = new Set(jobs.map((j) => j.id));
    for (let i = queue.pending.length - 1; i >= 0; i--) {
      if (ids.has(queue.pending[i]!.message.id)) queue.pending.splice(i, 1);
    }
    return jobs;
  }

  async function cancel(jobs: JobRecord[]): Promise<void> {
    for (const job of jobs) await engine.broker.cancel(job.id);
  }

  /** Delivers every message due at the test clock. */
  async function deliverDue(): Promise<void> {
    while (
      (await queue.deliverSome(
        (d) => engine.runner.deliver(d).then(deliveryResponse),
        (d) => engine.runner.dead(d).then(deliveryResponse),
        100,
        now,
      )) > 0
    );
  }

  const level = async () => (await engine.stats()).degradation.level;

  it("moves the level only after the debounce, and back only below the lower threshold", async () => {
    const jobs = await stuckJobs(5);
    expect((await engine.stats()).backlog).toBe(5);
    // Over the `degraded` threshold, but not for 30 s yet.
    const first = await engine.stats();
    expect(first.degradation).toMatchObject({
      level: "normal",
      pending: { level: "degraded", since: now },
    });
    now += 29_999;
    expect(await level()).toBe("normal");
    const early = await engine.broker.submit({ handler: "work" });
    expect(early.job.runAt).toBe(now); // not delayed: still normal
    jobs.push(early.job);
    now += 1;
    expect(await level()).toBe("degraded");

    // Degraded: a submit's run time moves by degradedDelayMs (a delay, not a refusal).
    const delayed = await engine.broker.submit({ handler: "work" });
    expect(delayed.job.runAt).toBe(now + 1_000);
    await cancel([delayed.job]);

    // Down to 4 and 3: not below `normal` (3), so it stays degraded however long it lasts.
    await cancel(jobs.splice(0, 3));
    expect((await engine.stats()).backlog).toBe(3);
    now += 120_000;
    const holding = await engine.stats();
    expect(holding.degradation.level).toBe("degraded");
    expect(holding.degradation.pending).toBeUndefined();

    // Below `normal`: back after the debounce.
    await cancel(jobs.splice(0, 1));
    const leaving = await engine.stats();
    expect(leaving.degradation).toMatchObject({
      level: "degraded",
      pending: { level: "normal", since: now },
    });
    now += 30_000;
    expect(await level()).toBe("normal");

    // Critical refuses submits with 503 + Retry-After, once confirmed by the debounce.
    await stuckJobs(8);
    now += 30_000;
    expect(await level()).toBe("critical");
    const refused = await engine.broker.submit({ handler: "work" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OverloadedError);
    expect(refused).toMatchObject({ status: 503, retryAfterMs: 20_000 });

    const events = await engine.store.events({ types: ["degradation.changed"], limit: 10 });
    expect(events.events.map((e) => [e.from, e.to])).toEqual([
      ["normal", "degraded"],
      ["degraded", "normal"],
      ["normal", "critical"],
    ]);
  });

  it("at critical keeps high-priority schedules running and holds the rest until normal", async () => {
    const create = async (id: string, priority: number, misfire: "skip" | "once" | "all") =>
      engine.broker.createSchedule({
        id,
        handler: "report",
        schedule: "* * * * *",
        priority,
        misfire,
      });
    await create("high", 9, "skip");
    await create("normal-once", 5, "once");
    await create("low-all", 2, "all");
    await create("low-skip", 1, "skip");
    const minute = (m: number) => T0 + m * MINUTE;

    const stuck = await stuckJobs(8);
    expect(await level()).toBe("normal"); // pending critical since T0 + 30 s

    // Minutes 1–4 at critical: only `high` dispatches; the others are held each tick.
    for (let m = 1; m <= 4; m++) {
      now = minute(m);
      const tick = await engine.ticker.tick();
      expect(tick).toMatchObject({ leader: true, dispatched: 1, due: 4, held: 3 });
      await deliverDue();
    }
    expect(ran).toEqual([1, 2, 3, 4].map((m) => ({ handler: "report:high", fireAt: minute(m) })));
    for (const id of ["normal-once", "low-all", "low-skip"]) {
      const held = await engine.store.getSchedule(id);
      expect(held).toMatchObject({ nextRunAt: minute(1), runs: 0, status: "active" });
    }
    const warned = lines.filter((l) => l.level === "warn" && l.fields?.level === "critical");
    expect(warned).toHaveLength(4);
    expect(lines.filter((l) => l.msg === "leader changed")).toEqual([
      {
        level: "info",
        msg: "leader changed",
        fields: expect.objectContaining({ holder: "tw-test", previous: null }),
      },
    ]);

    // The queue recovers; the controller returns to normal only after its debounce (a tick later).
    now = minute(4) + 10_000;
    await cancel(stuck);
    now = minute(5);
    expect(await engine.ticker.tick()).toMatchObject({ dispatched: 1, held: 3 });
    await deliverDue();
    expect((await engine.stats()).degradation.level).toBe("critical");

    ran.length = 0;
    now = minute(6);
    const back = await engine.ticker.tick();
    expect(back).toMatchObject({ leader: true, held: 0 });
    expect((await engine.stats()).degradation.level).toBe("normal");
    await deliverDue();
    const fired = (id: string) =>
      ran
        .filter((r) => r.handler === `report:${id}`)
        .map((r) => r.fireAt)
        .sort((a, b) => (a ?? 0) - (b ?? 0));
    // Missed minutes 1–5 (misfire grace 0), due minute 6: each schedule's own policy decides.
    expect(fired("high")).toEqual([minute(6)]);
    expect(fired("low-skip")).toEqual([minute(6)]);
    expect(fired("normal-once")).toEqual([minute(5), minute(6)]);
    expect(fired("low-all")).toEqual([1, 2, 3, 4, 5, 6].map(minute));
    for (const id of ["normal-once", "low-all", "low-skip"]) {
      expect(await engine.store.getSchedule(id)).toMatchObject({ nextRunAt: minute(7) });
    }
    expect(back).toMatchObject({ dispatched: 1 + 1 + 2 + 6 });
  });

  it("stays out of the way when turned off", async () => {
    const store = new MemoryStore({ clock: () => now });
    const off = createEngine({
      store,
      transport: queue,
      handlers,
      logger: recordingLogger(lines),
      degradation: false,
    });
    for (let i = 0; i < 20; i++) await off.broker.submit({ handler: "work" });
    now += 10 * MINUTE;
    const stats = await off.stats();
    expect(stats.backlog).toBe(20);
    expect(stats.degradation.level).toBe("normal");
    const job = await off.broker.submit({ handler: "work" });
    expect(job.job.runAt).toBe(now);
  });
});
