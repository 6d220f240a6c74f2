/**
 * A PATCH that only bounds a schedule (`endAt`, `maxRuns`) keeps an occurrence that is due and
 * not yet dispatched (a late tick, an outage, a schedule held at `critical`): it fires as it would
 * have without the PATCH. A bound that excludes it still completes the schedule. On the memory
 * store with a clock the test moves.
 */
import { describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { recordingTransport } from "../support/recording-transport.ts";

function rig() {
  const clock = { now: Date.parse("2025-01-01T00:00:00Z") };
  const queue = recordingTransport();
  const engine = createEngine({
    store: new MemoryStore({ clock: () => clock.now }),
    transport: queue,
    handlers: { echo: { run: (input: unknown) => input } },
    logger: silentLogger,
  });
  const fired = () => queue.published.map((m) => new Date(m.job.fireAt ?? 0).toISOString());
  return { clock, engine, fired };
}

describe("PATCH of a schedule's bounds while an occurrence is due", () => {
  for (const patch of [
    { maxRuns: 10 },
    { maxRuns: 1 },
    { endAt: "2025-06-01T00:00:00Z" },
    { input: 1 },
  ]) {
    it(`${JSON.stringify(patch)} keeps the 09:00 occurrence due at 09:00:30`, async () => {
      const { clock, engine, fired } = rig();
      await engine.broker.createSchedule({ id: "d", handler: "echo", schedule: "0 9 * * *" });
      clock.now = Date.parse("2025-01-01T09:00:30Z"); // the 09:00 tick is late
      await engine.broker.updateSchedule("d", patch);
      clock.now = Date.parse("2025-01-01T09:01:00Z");
      await engine.ticker.tick();
      expect(fired()).toEqual(["2025-01-01T09:00:00.000Z"]);
      const after = await engine.broker.getSchedule("d");
      if ("maxRuns" in patch && patch.maxRuns === 1) {
        expect(after).toMatchObject({ status: "completed", nextRunAt: null, runs: 1 });
      } else {
        expect(after.nextRunAt).toBe(Date.parse("2025-01-02T09:00:00Z"));
      }
    });
  }

  it("an endAt before the due occurrence completes the schedule without it", async () => {
    const { clock, engine, fired } = rig();
    await engine.broker.createSchedule({ id: "d", handler: "echo", schedule: "0 9 * * *" });
    clock.now = Date.parse("2025-01-01T09:00:30Z");
    const patched = await engine.broker.updateSchedule("d", { endAt: "2025-01-01T08:00:00Z" });
    expect(patched).toMatchObject({ status: "completed", nextRunAt: null });
    clock.now = Date.parse("2025-01-01T09:01:00Z");
    await engine.ticker.tick();
    expect(fired()).toEqual([]);
  });
});
