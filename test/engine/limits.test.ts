/**
 * A handler's `concurrency` through the runner, on every store: a push delivery over the limit is
 * answered 409 `concurrency_limited` with `Retry-After` and is not an attempt; a pulled one is
 * deferred (busy, `limited`) and looks again within 1.5 s; a limit per input key holds each key
 * apart; a handler without `concurrency` is never limited.
 */
import { describe, expect, it } from "vitest";
import type { Handlers } from "../../src/engine/index.ts";
import { startRunnerRig, until } from "../support/runner-rig.ts";
import { storeFactories } from "../support/stores.ts";

/** A handler run that waits until the test lets it go. */
function gate() {
  const started: string[] = [];
  const waiting = new Map<string, () => void>();
  return {
    started,
    run: (jobId: string) =>
      new Promise<string>((resolve) => {
        started.push(jobId);
        waiting.set(jobId, () => resolve(jobId));
      }),
    release(jobId: string) {
      const go = waiting.get(jobId);
      if (!go) throw new Error(`${jobId} is not running`);
      go();
    },
  };
}

describe.each(storeFactories)("concurrency limits through the runner on $name", (factory) => {
  const setup = (handlers: Handlers) => startRunnerRig(factory, handlers, 7);

  it("push: over the limit answers 409 concurrency_limited with Retry-After, not an attempt", async () => {
    const g = gate();
    const t = await setup({ one: { concurrency: 1, run: (_, ctx) => g.run(ctx.jobId) } });
    try {
      const a = await t.submit("one");
      const b = await t.submit("one");
      const first = t.deliver(a);
      await until(() => g.started.includes(a.id), "a to start");

      const limited = await t.deliver(b);
      expect(limited.status).toBe(409);
      expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(await limited.json()).toMatchObject({
        type: "urn:tickwork:problem:concurrency_limited",
      });
      expect(await t.engine.broker.getJob(b.id)).toMatchObject({ status: "queued", attempts: 0 });
      const totals = (await t.store.stats()).totals;
      expect(totals).toMatchObject({ started: 1, limited: 1 });

      g.release(a.id);
      expect((await first).status).toBe(200);
      const second = t.deliver(b);
      await until(() => g.started.includes(b.id), "b to start");
      g.release(b.id);
      expect((await second).status).toBe(200);
      expect(await t.engine.broker.getJob(b.id)).toMatchObject({
        status: "succeeded",
        attempts: 1,
      });
    } finally {
      await t.cleanup();
    }
  });

  it("pull: over the limit is busy `limited`, looked at again within 1.5 s", async () => {
    const g = gate();
    const t = await setup({ one: { concurrency: 1, run: (_, ctx) => g.run(ctx.jobId) } });
    try {
      const a = await t.submit("one");
      const b = await t.submit("one");
      const first = t.engine.runner.runPulled(JSON.stringify(a));
      await until(() => g.started.includes(a.id), "a to start");
      const limited = await t.engine.runner.runPulled(JSON.stringify(b));
      expect(limited).toMatchObject({ kind: "busy", reason: "limited" });
      expect(limited.kind === "busy" && limited.retryAfterMs).toBeGreaterThanOrEqual(250);
      expect(limited.kind === "busy" && limited.retryAfterMs).toBeLessThanOrEqual(1_500);
      g.release(a.id);
      expect(await first).toMatchObject({ kind: "done", status: "succeeded" });
    } finally {
      await t.cleanup();
    }
  });

  it("a limit per input key holds each key apart; a handler without a limit is never limited", async () => {
    const g = gate();
    const t = await setup({
      sync: {
        concurrency: { limit: 1, key: "input.account.id" },
        run: (_, ctx) => g.run(ctx.jobId),
      },
      free: { run: (_, ctx) => g.run(ctx.jobId) },
    });
    try {
      const a1 = await t.submit("sync", { account: { id: 1 } });
      const a1b = await t.submit("sync", { account: { id: "1" } }); // the same key as 1
      const a2 = await t.submit("sync", { account: { id: 2 } });
      const none = await t.submit("sync", {});
      const frees = [await t.submit("free"), await t.submit("free"), await t.submit("free")];
      const running = [a1, a2, none, ...frees].map((spec) => t.deliver(spec));
      await until(() => g.started.length === 6, "one job of each key and every free job to start");
      expect((await t.deliver(a1b)).status).toBe(409);
      for (const spec of [a1, a2, none, ...frees]) g.release(spec.id);
      for (const answer of await Promise.all(running)) expect(answer.status).toBe(200);
      const later = t.deliver(a1b);
      await until(() => g.started.includes(a1b.id), "the waiting job of key 1 to start");
      g.release(a1b.id);
      expect((await later).status).toBe(200);
    } finally {
      await t.cleanup();
    }
  });
});
