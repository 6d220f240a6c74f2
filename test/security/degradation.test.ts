/**
 * The degradation controller as clients meet it, over a real socket: queue depth (due jobs not
 * started: the queue here holds every message, so submitted jobs pile up) drives the level;
 * `degraded` pushes a submit's run time by `degradedDelayMs`; `critical` rejects with 503 and
 * `Retry-After` (nothing written) or pushes the run time by `criticalDelayMs`, as configured. On
 * the memory store the clock is moved to show the debounce; on Redis the debounce is 0.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { DegradationOptions } from "../../src/engine/options.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Store } from "../../src/store/port.ts";
import { expectProblem, type Harness } from "../http/harness.ts";
import { makeRedisStore } from "../support/stores.ts";
import { bearer, call, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

const QUIET = { normal: 1e9, degraded: 1e9, critical: 1e9 };

/** Depth 1/2/3 for normal/degraded/critical; every other signal out of the way. */
function policy(extra: DegradationOptions): DegradationOptions {
  return {
    queueDepth: { normal: 1, degraded: 2, critical: 3 },
    lagMs: QUIET,
    failureRate: QUIET,
    ...extra,
  };
}

async function app(store: Store, degradation: DegradationOptions) {
  const acme = await tenant("acme", { client: ["jobs:write", "read"] });
  // Every submit evaluates the controller (the default reuses a level for 1 s: see
  // test/engine/degradation-reuse.test.ts).
  const h = await securedApp(store, [acme], {
    engine: { degradation: { evaluateEveryMs: 0, ...degradation } },
  });
  open.push(h);
  return { h, acme };
}

function submit(h: Harness, acme: TestTenant) {
  return call(h.origin, "POST", "/v1/jobs", {
    json: { handler: "echo" },
    headers: bearer(acme.keys.client!),
  });
}

/** How far the store pushed the job's run time past its creation. */
async function delayOf(store: Store, id: string): Promise<number> {
  const job = await store.getJob(id);
  return job!.runAt - job!.createdAt;
}

describe("degradation on the memory store (its clock moved by the test)", () => {
  it("rejects with 503 + Retry-After once critical has held for the debounce", async () => {
    const T = Date.UTC(2026, 0, 1, 12);
    let now = T;
    const store = new MemoryStore({ clock: () => now });
    const { h, acme } = await app(
      store,
      policy({ debounceMs: 1_000, degradedDelayMs: 0, critical: "reject", retryAfterMs: 12_500 }),
    );
    // Depth 0, 1 (normal), then 2 (degraded, pending until the debounce has passed).
    for (let i = 0; i < 3; i++) expect((await submit(h, acme)).status).toBe(202);
    // Depth 3 is critical, but first seen now: pending, so still admitted.
    now = T + 1_000;
    expect((await submit(h, acme)).status).toBe(202);
    expect((await store.stats()).degradation.pending?.level).toBe("critical");
    // A debounce later critical holds: refused, and nothing written.
    now = T + 2_000;
    const before = await storeState(store);
    const refused = await submit(h, acme);
    expectProblem(refused, 503, /overloaded/);
    expect(refused.body.type).toBe("urn:tickwork:problem:overloaded");
    expect(refused.headers.get("retry-after")).toBe("13");
    expect(await storeState(store)).toBe(before);
    expect((await store.stats()).degradation.level).toBe("critical");
  });

  it("delays instead, as configured: degraded by degradedDelayMs, critical by criticalDelayMs", async () => {
    const T = Date.UTC(2026, 0, 1, 12);
    let now = T;
    const store = new MemoryStore({ clock: () => now });
    const { h, acme } = await app(
      store,
      policy({
        debounceMs: 0,
        degradedDelayMs: 1_000,
        critical: "delay",
        criticalDelayMs: 5_000,
      }),
    );
    const delays: number[] = [];
    for (let i = 0; i < 5; i++) {
      const answer = await submit(h, acme);
      expect(answer.status).toBe(202);
      delays.push(await delayOf(store, answer.body.id));
      // Let every delayed job come due, so each one adds to the depth.
      now += 5_000;
    }
    // Depth before each submit: 0, 1 (normal), 2 (degraded), 3, 4 (critical).
    expect(delays).toEqual([0, 0, 1_000, 5_000, 5_000]);
  });
});

describe("degradation on Redis", () => {
  it("critical rejects with 503 + Retry-After and writes nothing", async () => {
    const redis = await makeRedisStore();
    open.push({ close: redis.cleanup });
    const { h, acme } = await app(
      redis.store,
      policy({ debounceMs: 0, degradedDelayMs: 0, critical: "reject", retryAfterMs: 30_000 }),
    );
    for (let i = 0; i < 3; i++) expect((await submit(h, acme)).status).toBe(202);
    const before = await storeState(redis.store);
    const refused = await submit(h, acme);
    expectProblem(refused, 503, /overloaded/);
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(await storeState(redis.store)).toBe(before);
  });

  it("critical with delay: the run time moves by criticalDelayMs", async () => {
    const redis = await makeRedisStore();
    open.push({ close: redis.cleanup });
    const { h, acme } = await app(
      redis.store,
      policy({ debounceMs: 0, degradedDelayMs: 0, critical: "delay", criticalDelayMs: 60_000 }),
    );
    for (let i = 0; i < 3; i++) {
      const answer = await submit(h, acme);
      expect(await delayOf(redis.store, answer.body.id)).toBe(0);
    }
    const delayed = await submit(h, acme);
    expect(delayed.status).toBe(202);
    expect(await delayOf(redis.store, delayed.body.id)).toBe(60_000);
  });
});
