/**
 * `PullWorker.start`: a start that failed (the queue could not open) may be tried again; starts
 * made at once, or a stop while the queue opens, make no second pull loop or keep timer. The queue
 * is a stand-in of the `PullQueue` port that counts what the worker asks of it.
 */
import { describe, expect, it } from "vitest";
import type { PulledMessage, PullQueue } from "../transport/port.ts";
import { PullWorker } from "./pull-worker.ts";
import type { Runner } from "./runner.ts";

/** A queue with nothing to deliver: each pull waits until interrupted. */
function idleQueue(openings: (() => Promise<void>)[]) {
  const counts = { opened: 0, pullsWaiting: 0 };
  let wake: (() => void)[] = [];
  const queue: PullQueue = {
    async open() {
      counts.opened++;
      await (openings.shift() ?? (async () => {}))();
    },
    pull(): Promise<PulledMessage[]> {
      counts.pullsWaiting++;
      return new Promise((resolve) => {
        wake.push(() => {
          counts.pullsWaiting--;
          resolve([]);
        });
      });
    },
    async ack() {},
    async retryLater() {},
    backoff: () => 1_000,
    interrupt() {
      const waiting = wake;
      wake = [];
      for (const w of waiting) w();
    },
    async keep() {},
    keepAfterMs: 60_000,
  };
  return { queue, counts };
}

const runner = {} as Runner;

describe("PullWorker.start", () => {
  it("may be tried again after the queue failed to open", async () => {
    const { queue, counts } = idleQueue([
      async () => {
        throw new Error("ECONNREFUSED");
      },
    ]);
    const worker = new PullWorker({ runner, queue, idleWaitMs: 1_000 });
    await expect(worker.start()).rejects.toThrow("ECONNREFUSED");
    await worker.start();
    expect(counts.opened).toBe(2);
    await expect.poll(() => counts.pullsWaiting).toBe(1);
    await worker.stop({ deadlineMs: 100 });
  });

  it("started twice at once, opens once and pulls in one loop", async () => {
    let opened: () => void = () => {};
    const { queue, counts } = idleQueue([() => new Promise<void>((resolve) => (opened = resolve))]);
    const worker = new PullWorker({ runner, queue, idleWaitMs: 1_000 });
    const both = Promise.all([worker.start(), worker.start()]);
    opened();
    await both;
    expect(counts.opened).toBe(1);
    await expect.poll(() => counts.pullsWaiting).toBe(1);
    await worker.stop({ deadlineMs: 100 });
    expect(counts.pullsWaiting).toBe(0);
  });

  it("stopped while the queue opens, starts nothing", async () => {
    let opened: () => void = () => {};
    const { queue, counts } = idleQueue([() => new Promise<void>((resolve) => (opened = resolve))]);
    const worker = new PullWorker({ runner, queue, idleWaitMs: 1_000 });
    const starting = worker.start();
    const stopping = worker.stop({ deadlineMs: 100 });
    opened();
    await Promise.all([starting, stopping]);
    expect(counts.pullsWaiting).toBe(0);
    expect(worker.stats().pulled).toBe(0);
  });
});

describe("PullWorker during a queue outage", () => {
  it("logs the first failed pull, not every retry, and says when pulls succeed again", async () => {
    const { queue, counts } = idleQueue([]);
    const idlePull = queue.pull.bind(queue);
    let failing = 3;
    let calls = 0;
    queue.pull = (max, waitMs) => {
      calls++;
      if (failing-- > 0) return Promise.reject(new Error("ECONNREFUSED"));
      // The first pull after the outage answers at once (nothing to deliver); the next waits.
      if (failing === -1) return Promise.resolve([]);
      return idlePull(max, waitMs);
    };
    const lines: string[] = [];
    const logger = {
      debug() {},
      info: (msg: string) => lines.push(`info: ${msg}`),
      warn: (msg: string) => lines.push(`warn: ${msg}`),
      error: (msg: string) => lines.push(`error: ${msg}`),
      child: () => logger,
    };
    const worker = new PullWorker({ runner, queue, idleWaitMs: 1_000, logger });
    await worker.start();
    // Three pulls failed, the fourth answered, the fifth waits for work: the outage is over.
    await expect.poll(() => counts.pullsWaiting, { timeout: 10_000 }).toBe(1);
    expect(calls).toBe(5);
    expect(lines).toEqual([
      "warn: could not pull from the queue; retrying",
      "info: pulling from the queue again",
    ]);
    await worker.stop({ deadlineMs: 100 });
  });
});
