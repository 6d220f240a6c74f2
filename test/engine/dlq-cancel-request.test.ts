/**
 * A cancel asked of a running attempt that then died (its worker stopped, the queue gave up: the
 * job still ends `dead`, docs/adr/0015-progress-logs-and-cancel.md) is spent: a retry from the dead-letter list is a fresh
 * dispatch nobody cancelled. The request stayed on the job, so the retried attempt's handler was
 * aborted at once and its failure recorded `cancelled`. At the store, on memory and Redis.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import { accepted, jobSpec } from "../contract/fixtures.ts";
import { until } from "../support/runner-rig.ts";
import { storeFactories } from "../support/stores.ts";

const factories = storeFactories.filter((f) => f.name !== "upstash");

describe.each(factories)("dlq and cancel ($name)", (factory) => {
  let cleanup: (() => Promise<void>) | undefined;
  afterEach(async () => {
    await cleanup?.();
    cleanup = undefined;
  });

  async function fresh(): Promise<Store> {
    const made = await factory.make();
    cleanup = made.cleanup;
    return made.store;
  }

  async function submitted(store: Store, overrides: Parameters<typeof jobSpec>[0] = {}) {
    const res = accepted(
      await store.submitJob(jobSpec(overrides), { delayMs: 0, recoverGraceMs: 60_000 }),
    );
    if (!res.message) throw new Error("no message");
    return res.message.job as JobSpec;
  }

  it("a dead job retried from the dead-letter list is not cancelled by a cancel asked of an earlier attempt", async () => {
    const store = await fresh();
    const spec = await submitted(store, { retries: 0 });
    const begun = await store.beginRun(spec, 200);
    if (begun.kind !== "run") throw new Error(`begin: ${begun.kind}`);
    // Cancel asked while attempt 1 holds its lease; then its worker dies (lease lapses) and the
    // queue gives up: the failure callback dead-letters it (ADR 0015: "still ends dead").
    expect((await store.cancelJob(spec.id)).kind).toBe("requested");
    const leaseEnd = (begun.job.startedAt ?? 0) + 200;
    await until(async () => (await store.now()) > leaseEnd, "the run lease to lapse");
    const dead = await store.markDead(spec, { name: "DeliveryFailed", message: "gave up" });
    expect(dead?.status).toBe("dead");

    // The operator retries it: a fresh dispatch, nobody asked to cancel it.
    const retried = await store.retryDead(spec.id, { recoverGraceMs: 60_000 });
    if (!retried) throw new Error("retryDead answered null");
    expect(retried.job.status).toBe("queued");
    const again = await store.beginRun(retried.message.job, 5_000);
    if (again.kind !== "run") throw new Error(`begin again: ${again.kind}`);
    // The new attempt's runner polls this: true aborts the handler at once.
    expect(await store.cancelRequested(spec.id, again.attempt)).toBe(false);
    // And an ordinary failure of the new attempt must be a failure, not a cancel.
    const failed = await store.finishRun(spec.id, again.attempt, {
      ok: false,
      final: false,
      error: { name: "Error", message: "transient" },
    });
    expect(failed.kind === "ok" && failed.job.status).toBe("failed");
    expect(retried.job.cancelRequested).toBeUndefined();
  });
});
