import { expect, test } from "vitest";
import type { Logger } from "../../engine/logger.ts";
import { silentLogger } from "../../engine/logger.ts";
import type { TickResult } from "../../engine/ticker.ts";
import { startTicker } from "./tick-timer.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  await sleep(400);
  await timer.stop();
  expect(state.maxRunning).toBe(1);
  // A 60 ms tick with a 20 ms period: back to back, about 400 / 60 of them.
  expect(state.calls).toBeGreaterThanOrEqual(4);
  expect(state.calls).toBeLessThanOrEqual(8);
  expect(timer.ticks).toBe(state.calls);
});

test("stop() waits for the tick in flight; the abort signal stops it too", async () => {
  const { engine, state } = fakeEngine(100);
  const controller = new AbortController();
  const timer = startTicker(engine, 1_000, { signal: controller.signal });
  await sleep(20);
  controller.abort();
  await timer.stop();
  expect(state.running).toBe(0);
  expect(state.calls).toBe(1);
  await sleep(50);
  expect(state.calls).toBe(1);
});

test("errors are logged once while they repeat, and recovery is logged", async () => {
  let failing = true;
  const { engine } = fakeEngine(1, () => (failing ? new Error("store down") : undefined));
  const { logger, lines } = recordingLogger();
  const timer = startTicker(engine, 5, { logger });
  await sleep(80);
  failing = false;
  await sleep(30);
  await timer.stop();
  expect(lines.filter((l) => l.msg === "tick failed")).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: "error", fields: { error: "store down" } });
  expect(lines.filter((l) => l.msg === "tick recovered")).toHaveLength(1);
  expect(timer.ticks).toBeGreaterThan(5);
});

test("rejects a non-positive period", () => {
  expect(() => startTicker(fakeEngine(1).engine, 0)).toThrow(RangeError);
});
