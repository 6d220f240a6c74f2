/**
 * `degradation: false` turns the controller off in this process: a level stored while it was on
 * (the same deployment before, or a server that runs it) must not hold this process's tick's
 * schedules, nor be what its stats, `/metrics` and `/ready` report, since nothing here would
 * ever evaluate it again. On every store.
 */
import { describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { recordingTransport } from "../support/recording-transport.ts";
import { storeFactories } from "../support/stores.ts";

const handlers = { work: { run: () => null } };

describe.each(storeFactories)("the controller turned off, on $name", (factory) => {
  it("a critical level stored before neither holds schedules nor is reported", async () => {
    const { store, cleanup } = await factory.make();
    try {
      // With the controller on, a backlog takes the shared level to critical.
      const on = createEngine({
        store,
        transport: recordingTransport(),
        handlers,
        logger: silentLogger,
        degradation: {
          queueDepth: { normal: 1, degraded: 2, critical: 3 },
          debounceMs: 0,
          evaluateEveryMs: 0,
          critical: "delay",
          degradedDelayMs: 0,
          criticalDelayMs: 0,
        },
      });
      const jobs = [];
      for (let i = 0; i < 3; i++) jobs.push((await on.broker.submit({ handler: "work" })).job);
      expect((await on.stats()).degradation.level).toBe("critical");
      for (const job of jobs) await on.broker.cancel(job.id);

      // The same deployment with the controller off: a default-priority (5) schedule.
      const off = createEngine({
        store,
        transport: recordingTransport(),
        handlers,
        logger: silentLogger,
        degradation: false,
      });
      await off.broker.createSchedule({ id: "often", handler: "work", schedule: "1s" });
      expect((await off.stats()).degradation).toMatchObject({ level: "normal", since: 0 });
      const tick = await off.ticker.tick();
      expect(tick).toMatchObject({ leader: true, held: 0 });
      expect(tick.leader && tick.dispatched).toBeGreaterThan(0);
    } finally {
      await cleanup();
    }
  });
});
