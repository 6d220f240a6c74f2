/**
 * Two creates of one schedule id that race (replicas upserting their schedules at boot): the one
 * that read the id as free and writes last must not write a new schedule over the one the other
 * stored, undoing a pause answered meanwhile and sending fire times again. It is made again as a
 * replace of what is stored. The store is real (every store); only the order of the two is set.
 */
import { describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import type { Store } from "../../src/store/port.ts";
import { recordingTransport } from "../support/recording-transport.ts";
import { storeFactories } from "../support/stores.ts";

const handlers = { report: { run: () => null }, digest: { run: () => null } };

/** `store`, with its first `getSchedule` answer held until `release` is called. */
function holdingFirstRead(store: Store) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let read!: () => void;
  const readDone = new Promise<void>((resolve) => {
    read = resolve;
  });
  let first = true;
  const held = new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      // Its own methods read the store's private fields: called on the store itself.
      if (name !== "getSchedule") return value.bind(target);
      return async (id: string) => {
        const answer = await value.call(target, id);
        if (first) {
          first = false;
          read();
          await released;
        }
        return answer;
      };
    },
  });
  return { store: held, readDone, release };
}

describe.each(storeFactories)("two creates of one schedule id racing on $name", (factory) => {
  it("the later create keeps the pause answered meanwhile, and writes its definition", async () => {
    const { store, cleanup } = await factory.make();
    try {
      const engine = (s: Store) =>
        createEngine({ store: s, transport: recordingTransport(), handlers, logger: silentLogger });
      const a = engine(store);
      const held = holdingFirstRead(store);
      const b = engine(held.store);
      // B reads the id as free, then waits.
      const late = b.broker.createSchedule({ id: "nightly", handler: "digest", schedule: "1h" });
      await held.readDone;
      await a.broker.createSchedule({ id: "nightly", handler: "report", schedule: "1h" });
      const paused = await a.broker.pauseSchedule("nightly");
      expect(paused.status).toBe("paused");
      held.release();
      await late;
      const stored = await store.getSchedule("nightly");
      expect(stored).toMatchObject({ status: "paused", handler: "digest" });
      expect(stored?.rev).toBeGreaterThan(paused.rev);
    } finally {
      await cleanup();
    }
  });
});
