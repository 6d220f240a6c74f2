/**
 * @module
 * An engine on a store with the chaos queue as its transport, for tests that hand deliveries to
 * the runner themselves: `submit` returns the spec its message carries, `deliver` answers a
 * delivery of it as the worker route would (`src/http/delivery.ts`).
 */
import type { JobSpec } from "../../src/core/model.ts";
import { createEngine, type Handlers, silentLogger } from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { ChaosQueue } from "./chaos-queue.ts";
import { prng } from "./prng.ts";
import type { StoreFactory } from "./stores.ts";

/** A fresh store of `factory` and an engine on it; `cleanup` when done. */
export async function startRunnerRig(factory: StoreFactory, handlers: Handlers, seed: number) {
  const { store, cleanup } = await factory.make();
  const queue = new ChaosQueue(prng(seed));
  const engine = createEngine({
    store,
    transport: queue,
    handlers,
    logger: silentLogger,
    degradation: false,
  });
  const submit = async (handler: string, input?: unknown): Promise<JobSpec> => {
    const { job } = await engine.broker.submit({ handler, input });
    const message = queue.pending.find((p) => p.message.id === job.id)?.message;
    if (!message) throw new Error("the submit was not published");
    return message.job;
  };
  const deliver = async (spec: JobSpec) =>
    deliveryResponse(
      await engine.runner.deliver({
        url: "http://worker.test/v1/worker",
        headers: new Headers({ "upstash-signature": "chaos-queue-signature" }),
        body: JSON.stringify(spec),
      }),
    );
  return { engine, store, cleanup, submit, deliver };
}

/** Resolves once `check` holds (re-checked every 5 ms), or fails naming `what` after `ms`. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 10_000,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
