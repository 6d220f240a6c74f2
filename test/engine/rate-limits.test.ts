/**
 * A handler's `rateLimit` through the runner, on every store: a push delivery over the limit is
 * answered 409 `concurrency_limited` (the one "limited" answer, for either limit) with
 * `Retry-After` until a start leaves the window, and is not an attempt; a pulled one is deferred
 * (busy, `limited`) and looks again within 1.5 s, with its window's wait as the least
 * (`minWaitMs`, which the pull worker and the Queues consumer wait); a limit per input key holds each key apart; with
 * `concurrency` too, a delivery refused by one takes nothing from the other. Then end to end over
 * the real local queue (HTTP, `Retry-After` honoured): a burst of jobs all succeed, each at its
 * first attempt, and no more than `limit` of them begin in any window.
 */
import { describe, expect, it } from "vitest";
import type { Handlers } from "../../src/engine/index.ts";
import { startHarness } from "../http/harness.ts";
import { startRunnerRig, until as untilWithin } from "../support/runner-rig.ts";
import { storeFactories } from "../support/stores.ts";

/** {@link untilWithin} with a longer default: windows of whole seconds pass meanwhile. */
const until = (check: () => boolean | Promise<boolean>, what: string) =>
  untilWithin(check, what, 15_000);

describe.each(storeFactories)("rate limits through the runner on $name", (factory) => {
  const setup = (handlers: Handlers) => startRunnerRig(factory, handlers, 11);

  it("push: over the limit answers 409 with Retry-After until a start leaves the window; not an attempt", async () => {
    const t = await setup({ two: { rateLimit: { limit: 2, period: "1s" }, run: () => "ok" } });
    try {
      const [a, b, c] = [await t.submit("two"), await t.submit("two"), await t.submit("two")];
      expect((await t.deliver(a)).status).toBe(200);
      expect((await t.deliver(b)).status).toBe(200);
      const limited = await t.deliver(c);
      expect(limited.status).toBe(409);
      expect(Number(limited.headers.get("retry-after"))).toBe(1);
      expect(await limited.json()).toMatchObject({
        type: "urn:tickwork:problem:concurrency_limited",
      });
      expect(await t.engine.broker.getJob(c.id)).toMatchObject({ status: "queued", attempts: 0 });
      expect((await t.store.stats()).totals).toMatchObject({ started: 2, limited: 1 });

      // Once a's start has left the window (by the store's clock), c runs, at its first attempt.
      const first = (await t.engine.broker.getJob(a.id))?.startedAt as number;
      let status = 409;
      await until(async () => {
        status = (await t.deliver(c)).status;
        return status !== 409;
      }, "a's start to leave the window");
      expect(status).toBe(200);
      const ran = await t.engine.broker.getJob(c.id);
      expect(ran).toMatchObject({ status: "succeeded", attempts: 1 });
      expect(ran?.startedAt as number).toBeGreaterThanOrEqual(first + 1_000);
    } finally {
      await t.cleanup();
    }
  });

  it("pull: over the limit is busy `limited`, looked at again within 1.5 s", async () => {
    const t = await setup({ one: { rateLimit: { limit: 1, period: "1h" }, run: () => "ok" } });
    try {
      const [a, b] = [await t.submit("one"), await t.submit("one")];
      expect(await t.engine.runner.runPulled(JSON.stringify(a))).toMatchObject({
        kind: "done",
        status: "succeeded",
      });
      const limited = await t.engine.runner.runPulled(JSON.stringify(b));
      expect(limited).toMatchObject({ kind: "busy", reason: "limited" });
      expect(limited.kind === "busy" && limited.retryAfterMs).toBeGreaterThanOrEqual(250);
      expect(limited.kind === "busy" && limited.retryAfterMs).toBeLessThanOrEqual(1_500);
      // …but it cannot begin before its window lets it: a queue whose redeliveries cost (Redis
      // Streams' worker and Cloudflare Queues' consumer) waits that long.
      const minWaitMs = limited.kind === "busy" ? limited.minWaitMs : undefined;
      expect(minWaitMs).toBeGreaterThan(3_500_000);
      expect(minWaitMs).toBeLessThanOrEqual(3_600_000);
      // Pushed instead, it waits for the window: about an hour.
      const pushed = await t.deliver(b);
      expect(Number(pushed.headers.get("retry-after"))).toBeGreaterThan(3_500);
      expect(await t.engine.broker.getJob(b.id)).toMatchObject({ status: "queued", attempts: 0 });
    } finally {
      await t.cleanup();
    }
  });

  it("a limit per input key holds each key apart; a handler without one is never limited", async () => {
    const t = await setup({
      sync: { rateLimit: { limit: 1, period: "1h", key: "input.customerId" }, run: () => "ok" },
      free: { run: () => "ok" },
    });
    try {
      const c1 = await t.submit("sync", { customerId: 1 });
      const c1b = await t.submit("sync", { customerId: "1" }); // the same key as 1
      const c2 = await t.submit("sync", { customerId: 2 });
      const none = await t.submit("sync", {});
      for (const spec of [c1, c2, none]) expect((await t.deliver(spec)).status).toBe(200);
      expect((await t.deliver(c1b)).status).toBe(409);
      for (let i = 0; i < 5; i++)
        expect((await t.deliver(await t.submit("free"))).status).toBe(200);
    } finally {
      await t.cleanup();
    }
  });

  it("with concurrency too: a delivery refused by one limit takes nothing from the other", async () => {
    const started: string[] = [];
    const waiting = new Map<string, () => void>();
    const t = await setup({
      both: {
        concurrency: 1,
        rateLimit: { limit: 2, period: "1h" },
        run: (_, ctx) =>
          new Promise<void>((resolve) => {
            started.push(ctx.jobId);
            waiting.set(ctx.jobId, resolve);
          }),
      },
    });
    try {
      const [a, b, c] = [await t.submit("both"), await t.submit("both"), await t.submit("both")];
      const first = t.deliver(a);
      await until(() => started.includes(a.id), "a to start");
      // Refused by concurrency (a runs), twice: no start counted.
      expect((await t.deliver(b)).status).toBe(409);
      expect((await t.deliver(b)).status).toBe(409);
      waiting.get(a.id)?.();
      expect((await first).status).toBe(200);
      // b is the window's second start, so it runs; then the window is full.
      const second = t.deliver(b);
      await until(() => started.includes(b.id), "b to start");
      waiting.get(b.id)?.();
      expect((await second).status).toBe(200);
      const limited = await t.deliver(c);
      expect(limited.status).toBe(409);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(3_500);
      expect((await t.store.stats()).totals).toMatchObject({ started: 2, limited: 3 });
    } finally {
      await t.cleanup();
    }
  });
});

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "rate limits over the local queue on $name",
  (factory) => {
    it("a burst all succeeds, each at its first attempt, never more than `limit` starts in a window", async () => {
      const { store, cleanup } = await factory.make();
      const h = await startHarness({
        store,
        handlers: { burst: { rateLimit: { limit: 2, period: "1s" }, run: () => "ok" } },
      });
      try {
        const ids: string[] = [];
        for (let i = 0; i < 5; i++) {
          const { job } = await h.engine.broker.submit({ handler: "burst", retries: 10 });
          ids.push(job.id);
        }
        await until(async () => {
          const jobs = await Promise.all(ids.map((id) => h.engine.broker.getJob(id)));
          return jobs.every((job) => job?.status === "succeeded");
        }, "every job of the burst to succeed");
        const jobs = await Promise.all(ids.map((id) => h.engine.broker.getJob(id)));
        for (const job of jobs) expect(job).toMatchObject({ status: "succeeded", attempts: 1 });
        const starts = jobs.map((job) => job?.startedAt as number).sort((x, y) => x - y);
        for (let i = 0; i + 2 < starts.length; i++) {
          expect((starts[i + 2] as number) - (starts[i] as number)).toBeGreaterThanOrEqual(1_000);
        }
        // Three of five waited (at least once each): the queue was told to come back.
        expect((await store.stats()).totals.limited).toBeGreaterThanOrEqual(3);
      } finally {
        await h.close();
        await cleanup();
      }
    }, 30_000);
  },
);
