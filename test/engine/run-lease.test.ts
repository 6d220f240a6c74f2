/**
 * The runner never starts a handler on a run lease that may have run out: when `beginRun`'s
 * answer arrives later than the lease is long (this process or the store stalled, as a loaded
 * machine does for hundreds of milliseconds), another delivery may already run a newer attempt,
 * and running this one too would run the handler twice (invariant I2, docs/architecture.md).
 */
import { describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import type { Store } from "../../src/store/port.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { storeFactories } from "../support/stores.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const TIMEOUT_MS = 1_000;
const GRACE_MS = 50;

describe.each(storeFactories)("run lease on $name", (factory) => {
  it("a delivery whose begin answer comes back after its lease ran out does not run the handler; the newer attempt runs it once", async () => {
    const { store, cleanup } = await factory.make();
    try {
      // While `held` is set, beginRun is applied at once but its answer waits for `held`.
      let held: Promise<void> | undefined;
      let applied!: () => void;
      const appliedOnce = new Promise<void>((r) => {
        applied = r;
      });
      const stalling = new Proxy(store, {
        get(target, prop, receiver) {
          const value = Reflect.get(target, prop, receiver);
          if (prop === "beginRun") {
            return async (...args: Parameters<Store["beginRun"]>) => {
              const hold = held;
              const begun = await target.beginRun(...args);
              applied();
              if (hold) await hold;
              return begun;
            };
          }
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      const queue = new ChaosQueue(prng(1));
      let runs = 0;
      const engine = createEngine({
        store: stalling,
        transport: queue,
        handlers: {
          work: {
            run: () => {
              runs++;
              return "done";
            },
          },
        },
        logger: silentLogger,
        leaseGraceMs: GRACE_MS,
        jobs: { timeoutMs: TIMEOUT_MS },
        degradation: false,
      });
      const { job } = await engine.broker.submit({ handler: "work" });
      const message = queue.pending[0]?.message;
      if (!message) throw new Error("the submit was not published");
      const delivery = () => ({
        url: "http://worker.test/v1/worker",
        headers: new Headers({ "upstash-signature": "chaos-queue-signature" }),
        body: JSON.stringify(message.job),
      });

      let release!: () => void;
      held = new Promise<void>((r) => {
        release = r;
      });
      const stalled = engine.runner.deliver(delivery()).then(deliveryResponse); // attempt 1, its answer held back
      await appliedOnce;
      held = undefined;
      await sleep(TIMEOUT_MS + GRACE_MS + 100); // attempt 1's run lease runs out
      const newer = deliveryResponse(await engine.runner.deliver(delivery())); // a duplicate: attempt 2
      expect(newer.status).toBe(200);
      expect(runs).toBe(1);

      release();
      const late = await stalled;
      expect(late.status).toBe(409);
      expect(late.headers.get("retry-after")).toBe("1");
      expect(runs).toBe(1);
      expect(await store.getJob(job.id)).toMatchObject({
        status: "succeeded",
        attempts: 2,
        result: "done",
      });
    } finally {
      await cleanup();
    }
  });
});
