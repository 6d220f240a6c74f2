/**
 * A message published long before it is due is watched from when it is due (docs/adr/0010's
 * addendum): the engine's ticks, on a store whose clock the test moves, must neither send it
 * again every `reapAfterMs` nor dead-letter it as abandoned before it could run. Two ways to get
 * there: Cloudflare Queues takes a delay of 12 h at most, so a job due later is sent 12 h early;
 * and a dependent released early has its first message published at once, whatever its `runAt`.
 */
import { describe, expect, it } from "vitest";
import {
  createEngine,
  type EngineOptions,
  type Logger,
  silentLogger,
} from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import {
  CloudflareQueuesTransport,
  type QueueSendRequest,
} from "../../src/transport/cloudflare-queues/index.ts";
import type { Transport } from "../../src/transport/port.ts";
import { recordingTransport } from "../support/recording-transport.ts";

const START = 1_800_000_000_000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const handlers = { work: { run: (input: unknown) => input } };

function world(transportOf: (clock: { now: number }, sent: string[]) => Transport) {
  const clock = { now: START };
  const sent: string[] = [];
  const warnings: string[] = [];
  const logger: Logger = { ...silentLogger, warn: (message: string) => warnings.push(message) };
  const make = (options: EngineOptions) =>
    createEngine({
      ...options,
      store: new MemoryStore({ clock: () => clock.now }),
      transport: transportOf(clock, sent),
      handlers,
      logger,
    });
  /** The platform's cron: one tick every `everyMs` until `until`. */
  const tickUntil = async (engine: ReturnType<typeof make>, until: number, everyMs = MINUTE) => {
    while (clock.now + everyMs <= until) {
      clock.now += everyMs;
      await engine.ticker.tick();
    }
  };
  return { clock, sent, warnings, make, tickUntil };
}

describe("a message published long before it is due", () => {
  for (const reapAfterMs of [HOUR, 20 * MINUTE]) {
    it(`on Cloudflare Queues, a job due in 20 h is sent once, 12 h early (reapAfterMs ${reapAfterMs / MINUTE} min)`, async () => {
      const { clock, sent, warnings, make, tickUntil } = world(
        (clock, sent) =>
          new CloudflareQueuesTransport({
            queue: {
              send: async () => {},
              sendBatch: async (messages: Iterable<QueueSendRequest>) => {
                for (const m of messages) sent.push(String(m.body));
              },
            },
            now: () => clock.now,
          }),
      );
      const engine = make({ reapAfterMs, tick: { recoverGraceMs: 5 * MINUTE } });
      const runAt = START + 20 * HOUR;
      const { job } = await engine.broker.submit({ handler: "work", input: 1, runAt });
      await tickUntil(engine, runAt - MINUTE);
      expect(sent).toHaveLength(1);
      expect(warnings).toEqual([]);
      expect((await engine.store.getJob(job.id))?.status).toBe("queued");
      expect(clock.now).toBeGreaterThan(runAt - 2 * MINUTE);
    });
  }

  it("a dependent due in 3 days, released at once, is published once and stays queued", async () => {
    const { sent, warnings, make, tickUntil } = world((_clock, sent): Transport => {
      // A queue that takes any delay (QStash): it accepts every message.
      const queue = recordingTransport();
      return {
        ...queue,
        publish: (messages) => {
          for (const m of messages) sent.push(m.id);
          return queue.publish(messages);
        },
      };
    });
    const engine = make({});
    const parent = await engine.broker.submit({ handler: "work", input: 1 });
    const runAt = START + 72 * HOUR;
    const child = await engine.broker.submit({
      handler: "work",
      input: 2,
      after: [parent.job.id],
      runAt,
    });
    await engine.runner.runPulled(JSON.stringify(parent.job));
    await tickUntil(engine, runAt - MINUTE, 5 * MINUTE);
    expect(sent.filter((id) => id === child.job.id)).toHaveLength(1);
    expect(warnings).toEqual([]);
    expect((await engine.store.getJob(child.job.id))?.status).toBe("queued");
  });
});
