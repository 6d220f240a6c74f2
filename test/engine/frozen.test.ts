/**
 * A worker process frozen past a handler's timeout (SIGSTOP, a VM or GC pause). On waking, Node
 * runs every timer that fell due meanwhile in the order they were due, so a handler's own timer,
 * due before its timeout, would run first and the handler would do its work after its run lease
 * lapsed. The runner's timeout check (`watchTimeout`, src/engine/timeout-watch.ts) runs before
 * it and aborts the handler's signal: a handler that looks at its signal does nothing.
 *
 * The freeze is real: the test blocks this thread (`Atomics.wait`) while the handler waits on its
 * timer, for longer than the handler's timeout.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createEngine,
  type Engine,
  type HandlerContext,
  type Handlers,
  silentLogger,
} from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

/** Blocks this thread for `ms`: every timer due meanwhile runs after it, as after a SIGSTOP. */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

describe.each(storeFactories)("a worker frozen past a handler's timeout, on $name", (factory) => {
  let handle: StoreHandle;
  let queue: ChaosQueue;
  let engine: Engine;
  let started: () => void = () => {};
  const effects: string[] = [];
  let kept: HandlerContext | undefined;

  const handlers: Handlers = {
    // Waits 500 ms on its own timer, then does its work unless its signal was aborted.
    effect: {
      timeout: "1s",
      run: async (_input, ctx) => {
        started();
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, 500);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(timer);
            reject(ctx.signal.reason);
          });
        });
        ctx.signal.throwIfAborted();
        effects.push(ctx.jobId);
        return "done";
      },
    },
    // As `effect`, with a timeout no slow store or busy machine comes near.
    patient: {
      timeout: "60s",
      run: async (_input, ctx) => {
        await new Promise<void>((resolve) => setTimeout(resolve, 500));
        ctx.signal.throwIfAborted();
        effects.push(ctx.jobId);
        return "done";
      },
    },
    // Keeps its context past the attempt's end.
    keeper: {
      timeout: "1s",
      run: (_input, ctx) => {
        kept = ctx;
        return "kept";
      },
    },
    // Freezes itself just before its own timer is due, with a timer of the same delay: after
    // the freeze, Node runs the rest of that timer list first, so its timer fires before the
    // freeze check and the timeout timer (both due later). It reads its signal, then works.
    eager: {
      timeout: "1s",
      run: async (_input, ctx) => {
        await new Promise<void>((resolve) => {
          setTimeout(() => freeze(1_500), 900);
          setTimeout(resolve, 900);
        });
        ctx.signal.throwIfAborted();
        effects.push(ctx.jobId);
        return "done";
      },
    },
  };

  beforeEach(async () => {
    effects.length = 0;
    handle = await factory.make();
    queue = new ChaosQueue(prng(11));
    engine = createEngine({
      store: handle.store,
      transport: queue,
      handlers,
      logger: silentLogger,
      leaseGraceMs: 100,
    });
  });

  afterEach(async () => {
    await handle.cleanup();
  });

  /** Delivers the job the queue holds first, as the queue would; its answer. */
  async function deliverFirst() {
    return deliveryResponse(
      await engine.runner.deliver({
        url: "http://worker.test/v1/worker",
        headers: new Headers({ "upstash-signature": "chaos-queue-signature" }),
        body: JSON.stringify(queue.pending[0]!.message.job),
      }),
    );
  }

  /** The attempt timed out, no work was done, and the job (no retries) is dead. */
  async function expectTimedOut(res: Response, id: string) {
    expect(effects).toEqual([]);
    expect(res.status).toBe(489);
    expect(await engine.store.getJob(id)).toMatchObject({
      status: "dead",
      attempts: 1,
      error: { name: "TimeoutError" },
    });
  }

  it("aborts the handler's signal before its own timer runs: no work done, the attempt timed out", async () => {
    const { job } = await engine.broker.submit({ handler: "effect", retries: 0 });
    const began = new Promise<void>((resolve) => {
      started = resolve;
    });
    const delivery = engine.runner.deliver({
      url: "http://worker.test/v1/worker",
      headers: new Headers({ "upstash-signature": "chaos-queue-signature" }),
      body: JSON.stringify(queue.pending[0]!.message.job),
    });
    await began;
    // Past the 1 s timeout (and the run lease: timeout + 100 ms grace).
    freeze(2_000);
    await expectTimedOut(deliveryResponse(await delivery), job.id);
  });

  // The runner alone decides these two (no store call differs): on the memory store only, which
  // saves the other stores' 3.5 s of freezing.
  it.runIf(factory.name === "memory")(
    "a handler whose own timer runs before the freeze check finds its signal aborted when it reads it: no work done",
    async () => {
      const { job } = await engine.broker.submit({ handler: "eager", retries: 0 });
      await expectTimedOut(await deliverFirst(), job.id);
    },
  );

  it.runIf(factory.name === "memory")(
    "a context read after its attempt ended, past the timeout, is not aborted",
    async () => {
      await engine.broker.submit({ handler: "keeper", retries: 0 });
      expect((await deliverFirst()).status).toBe(200);
      freeze(1_100);
      expect(kept?.signal.aborted).toBe(false);
    },
  );

  it("a handler that is not frozen runs to the end as before", async () => {
    // The handler's time counts from its run lease's start, so `effect`'s 1 s, half of it spent
    // in its own timer, is no margin on a store over REST on a busy machine.
    const { job } = await engine.broker.submit({ handler: "patient", retries: 0 });
    const res = await deliverFirst();
    expect(res.status).toBe(200);
    expect(effects).toEqual([job.id]);
    expect(await engine.store.getJob(job.id)).toMatchObject({
      status: "succeeded",
      result: "done",
    });
  });
});
