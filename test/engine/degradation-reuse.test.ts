/**
 * `evaluateEveryMs`: a submit acts on the stored degradation level while the last evaluation is
 * younger than it, and evaluates itself otherwise — the same on the memory and Redis stores.
 */
import { afterAll, describe, expect, it } from "vitest";
import type { Admission } from "../../src/store/port.ts";
import { newJob, POLICY } from "../support/redis-store-fixtures.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";

const handles: StoreHandle[] = [];
afterAll(async () => {
  for (const h of handles) await h.cleanup();
});

/** Critical as soon as one job is due and not started, with no debounce. */
function admission(evaluateEveryMs: number): Admission {
  return {
    degradation: {
      ...POLICY,
      queueDepth: { normal: 0.5, degraded: 0.75, critical: 1 },
      debounceMs: 0,
      degradedDelayMs: 0,
      critical: "reject",
      criticalDelayMs: 0,
      retryAfterMs: 7_000,
      evaluateEveryMs,
    },
  };
}

const timing = { delayMs: 0, recoverGraceMs: 0 };

describe.each(storeFactories.filter((f) => f.name !== "upstash"))("$name store", ({ make }) => {
  it("within evaluateEveryMs a submit acts on the stored level; stats re-evaluates it", async () => {
    const h = await make();
    handles.push(h);
    const { store } = h;
    const reuse = admission(3_600_000);
    // Evaluated on an empty backlog: normal. The job it writes makes the backlog critical…
    expect(await store.submitJob(newJob(), timing, reuse)).toMatchObject({
      degradation: { level: "normal" },
    });
    // …but the next submit, within the hour, acts on the stored level and is admitted.
    expect(await store.submitJob(newJob(), timing, reuse)).toMatchObject({
      degradation: { level: "normal" },
    });
    // Any evaluation (here stats) stores the new level; the next submit acts on it.
    await store.stats(reuse.degradation);
    expect(await store.submitJob(newJob(), timing, reuse)).toEqual({
      denied: { kind: "overloaded", level: "critical", retryAfterMs: 7_000 },
    });
  });

  it("with evaluateEveryMs 0 every submit evaluates", async () => {
    const h = await make();
    handles.push(h);
    const every = admission(0);
    expect(await h.store.submitJob(newJob(), timing, every)).toMatchObject({
      degradation: { level: "normal" },
    });
    expect(await h.store.submitJob(newJob(), timing, every)).toEqual({
      denied: { kind: "overloaded", level: "critical", retryAfterMs: 7_000 },
    });
  });
});
