/**
 * Whatever a handler returns or throws, its job ends recorded, on every store: a result is kept
 * as its JSON (functions left out, as JSON leaves them), one JSON cannot write (a BigInt, a cycle)
 * is a final `InvalidResult` failure (never a run again: on Redis the finish failed until the
 * lease lapsed and the queue ran the handler again; on memory the record broke every listing),
 * and a thrown value whose message is not text is recorded as well as it can be (the job stayed
 * `running` for its whole lease), its name kept to 200 characters (it was stored at any length).
 * Dependents are released either way.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Handlers } from "../../src/engine/index.ts";
import { startRunnerRig } from "../support/runner-rig.ts";
import { storeFactories } from "../support/stores.ts";

const cyclic = (): unknown => {
  const a: Record<string, unknown> = { n: 1 };
  a.self = a;
  return a;
};
const unprintable = (): unknown => {
  const error = new Error("x");
  Object.defineProperty(error, "message", {
    get() {
      throw new Error("no message");
    },
  });
  return error;
};

let runs = 0;
const handlers: Handlers = {
  bigint: { retries: 2, run: () => ({ total: 10n }) },
  cyclic: {
    retries: 2,
    run: () => {
      runs++;
      return cyclic();
    },
  },
  withFunction: { run: () => ({ rows: 2, close: () => {} }) },
  dated: { run: () => ({ at: new Date(0) }) },
  throwsBare: { retries: 0, run: () => Promise.reject(Object.create(null)) },
  throwsUnprintable: { retries: 0, run: () => Promise.reject(unprintable()) },
  throwsNumberMessage: {
    retries: 0,
    run: () => Promise.reject(Object.assign(new Error(), { message: 42 })),
  },
  throwsLongName: {
    retries: 0,
    run: () => Promise.reject(Object.assign(new Error("m"), { name: "N".repeat(100_000) })),
  },
};

describe.each(storeFactories)("handler values on $name", (factory) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  it("a result kept as its JSON; one JSON cannot write: a final InvalidResult, run once", async () => {
    const rig = await startRunnerRig(factory, handlers, 1);
    cleanup = rig.cleanup;
    runs = 0;
    for (const [handler, result] of [
      ["withFunction", { rows: 2 }],
      ["dated", { at: "1970-01-01T00:00:00.000Z" }],
    ] as const) {
      const spec = await rig.submit(handler);
      expect((await rig.deliver(spec)).status).toBe(200);
      expect(await rig.engine.store.getJob(spec.id)).toMatchObject({ status: "succeeded", result });
    }
    for (const handler of ["bigint", "cyclic"]) {
      const spec = await rig.submit(handler);
      const dependent = await rig.engine.broker.submit({ handler: "dated", after: [spec.id] });
      expect((await rig.deliver(spec)).status).toBe(489);
      const job = await rig.engine.store.getJob(spec.id);
      expect(job).toMatchObject({ status: "dead", attempts: 1, error: { name: "InvalidResult" } });
      expect((await rig.engine.store.getJob(dependent.job.id))?.status).toBe("cancelled");
    }
    expect(runs).toBe(1);
    // Every record still reads and lists.
    expect((await rig.engine.store.listJobs({ limit: 100 })).items.length).toBeGreaterThan(0);
  });

  it("a thrown value whose message is not text is recorded, and the job ends", async () => {
    const rig = await startRunnerRig(factory, handlers, 2);
    cleanup = rig.cleanup;
    for (const [handler, message] of [
      ["throwsBare", "(a thrown value that cannot be written as text)"],
      ["throwsUnprintable", "(a thrown value that cannot be written as text)"],
      ["throwsNumberMessage", "42"],
    ] as const) {
      const spec = await rig.submit(handler);
      expect((await rig.deliver(spec)).status).toBe(489);
      expect(await rig.engine.store.getJob(spec.id)).toMatchObject({
        status: "dead",
        error: { message },
      });
    }
  });

  it("a thrown error's name is kept to 200 characters, as its message is to 2,000", async () => {
    const rig = await startRunnerRig(factory, handlers, 2);
    cleanup = rig.cleanup;
    const spec = await rig.submit("throwsLongName");
    expect((await rig.deliver(spec)).status).toBe(489);
    const job = await rig.engine.store.getJob(spec.id);
    expect(job).toMatchObject({ status: "dead", error: { name: "N".repeat(200), message: "m" } });
  });
});
