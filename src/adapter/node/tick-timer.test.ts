/**
 * The tick timer on fake timers (it is driven by `setTimeout` and `Date.now`): each test moves
 * time itself, so what it sees does not depend on how busy the machine is.
 */
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import type { Logger } from "../../engine/logger.ts";
import { silentLogger } from "../../engine/logger.ts";
import type { TickResult } from "../../engine/ticker.ts";
import { startTicker, type TickerTimer } from "./tick-timer.ts";

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A tick of `ms` fake milliseconds. */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `timer.stop()`, with fake time moving until the tick in flight has finished. */
async function stopAndFinish(timer: TickerTimer): Promise<void> {
  const stopped = timer.stop();
  await vi.runAllTimersAsync();
  await stopped;
}

function recordingLogger() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = [];
  const log = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    lines.push({ level, msg, ...(fields ? { fields } : {}) });
  const logger: Logger = {
    debug: log("debug"),
    info: log("info"),
    warn: log("warn"),
    error: log("error"),
    child: () => logger,
  };
  return { logger, lines };
}

/** An engine whose tick takes `tickMs`, counting how many run at once. */
function fakeEngine(tickMs: number, fail?: () => Error | undefined) {
  const state = { running: 0, maxRunning: 0, calls: 0 };
  const engine = {
    options: { logger: silentLogger },
    ticker: {
      async tick(): Promise<TickResult> {
        state.calls++;
        state.running++;
        state.maxRunning = Math.max(state.maxRunning, state.running);
        await sleep(tickMs);
        state.running--;
        const error = fail?.();
        if (error) throw error;
        return {
          leader: true,
          dispatched: 0,
          recovered: 0,
          due: 0,
          held: 0,
          idle: true,
          fenced: false,
          tookMs: tickMs,
        };
      },
    },
  };
  return { engine: engine as unknown as Parameters<typeof startTicker>[0], state };
}

test("ticks every period and never overlaps itself, even when a tick runs long", async () => {
  const { engine, state } = fakeEngine(60);
  const timer = startTicker(engine, 20);
  await vi.advanceTimersByTimeAsync(400);
  await stopAndFinish(timer);
  expect(state.maxRunning).toBe(1);
  // A 60 ms tick with a 20 ms period: back to back, starting at 0, 60, …, 360.
  expect(state.calls).toBe(7);
  expect(timer.ticks).toBe(state.calls);
});

test("stop() waits for the tick in flight; the abort signal stops it too", async () => {
  const { engine, state } = fakeEngine(100);
  const controller = new AbortController();
  const timer = startTicker(engine, 1_000, { signal: controller.signal });
  await vi.advanceTimersByTimeAsync(20);
  controller.abort();
  let stopped = false;
  const stopping = timer.stop().then(() => {
    stopped = true;
  });
  await vi.advanceTimersByTimeAsync(79);
  expect([stopped, state.running]).toEqual([false, 1]); // the tick has 1 ms to go
  await vi.advanceTimersByTimeAsync(1);
  await stopping;
  expect(state.running).toBe(0);
  expect(state.calls).toBe(1);
  // Nothing is left to fire: no tick comes later.
  expect(vi.getTimerCount()).toBe(0);
  await vi.advanceTimersByTimeAsync(5_000);
  expect(state.calls).toBe(1);
});

test("errors are logged once while they repeat, and recovery is logged", async () => {
  let failing = true;
  const { engine } = fakeEngine(1, () => (failing ? new Error("store down") : undefined));
  const { logger, lines } = recordingLogger();
  const timer = startTicker(engine, 5, { logger });
  await vi.advanceTimersByTimeAsync(80);
  failing = false;
  await vi.advanceTimersByTimeAsync(30);
  await stopAndFinish(timer);
  expect(lines.filter((l) => l.msg === "tick failed")).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: "error", fields: { error: "store down" } });
  expect(lines.filter((l) => l.msg === "tick recovered")).toHaveLength(1);
  expect(timer.ticks).toBeGreaterThan(5);
});

test("rejects a non-positive period", () => {
  expect(() => startTicker(fakeEngine(1).engine, 0)).toThrow(RangeError);
});
