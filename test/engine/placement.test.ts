/**
 * Placement through the runner, on every store (docs/adr/0017-placement.md): two engines on one
 * store — a plain node and a `gpu` node with `gpu=nvidia`. A delivery the node may not run is
 * answered 409 `placement_mismatch` (push) or busy `unplaced` within 1.5 s (pull), recorded on the
 * job as `refused`, counted, and never an attempt; the matching node runs it and is recorded as
 * its `node`. A finished job's leftover delivery is acknowledged, not refused forever; a
 * placement this version does not understand is a refusal, not a bad body.
 */
import { describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import { createEngine, type EngineOptions, silentLogger } from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import type { Store } from "../../src/store/port.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { storeFactories } from "../support/stores.ts";

const handlers = { where: { run: (_: unknown, ctx: { jobId: string }) => ctx.jobId } };

describe.each(storeFactories)("placement through the runner on $name", (factory) => {
  async function setup() {
    const { store, cleanup } = await factory.make();
    const queue = new ChaosQueue(prng(11));
    const engineOn = (options: EngineOptions) =>
      createEngine({
        store,
        transport: queue,
        handlers,
        logger: silentLogger,
        degradation: false,
        ...options,
      });
    const plain = engineOn({ instanceId: "cpu-1" });
    const gpu = engineOn({ instanceId: "gpu-1", group: "gpu", capabilities: { gpu: "nvidia" } });
    const submit = async (placement?: object): Promise<JobSpec> => {
      const { job } = await plain.broker.submit({
        handler: "where",
        ...(placement ? { placement } : {}),
      } as never);
      const message = queue.pending.find((p) => p.message.id === job.id)?.message;
      if (!message) throw new Error("the submit was not published");
      return message.job;
    };
    const deliver = async (engine: typeof plain, spec: JobSpec | object) =>
      deliveryResponse(
        await engine.runner.deliver({
          url: "http://worker.test/v1/worker",
          headers: new Headers({ "upstash-signature": "chaos-queue-signature" }),
          body: JSON.stringify(spec),
        }),
      );
    return { store: store as Store, queue, cleanup, plain, gpu, submit, deliver };
  }

  it("push: the wrong node answers 409 placement_mismatch, records the refusal; the right one runs it", async () => {
    const t = await setup();
    try {
      const spec = await t.submit({ group: "gpu", capabilities: { gpu: "nvidia" } });
      const refused = await t.deliver(t.plain, spec);
      expect(refused.status).toBe(409);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(await refused.json()).toMatchObject({
        type: "urn:tickwork:problem:placement_mismatch",
      });
      const waiting = await t.plain.broker.getJob(spec.id);
      expect(waiting).toMatchObject({
        status: "queued",
        attempts: 0,
        refused: { node: "cpu-1", reason: 'job needs group "gpu"' },
      });
      expect((await t.store.stats()).totals).toMatchObject({ unplaced: 1, started: 0 });

      expect((await t.deliver(t.gpu, spec)).status).toBe(200);
      expect(await t.plain.broker.getJob(spec.id)).toMatchObject({
        status: "succeeded",
        attempts: 1,
        node: "gpu-1",
        placement: { group: "gpu", capabilities: { gpu: "nvidia" } },
      });
      // Its leftover delivery at the wrong node is acknowledged: nothing left to run.
      expect((await t.deliver(t.plain, spec)).status).toBe(200);
    } finally {
      await t.cleanup();
    }
  });

  it("pull: refused is busy `unplaced`, looked at again within 1.5 s; groups partition the fleet", async () => {
    const t = await setup();
    try {
      const spec = await t.submit({ capabilities: { gpu: "nvidia" } });
      // The gpu node is in group "gpu": a job of the default group is not its to run.
      const pulled = await t.gpu.runner.runPulled(JSON.stringify(spec));
      expect(pulled).toMatchObject({ kind: "busy", reason: "unplaced" });
      expect(pulled.kind === "busy" && pulled.retryAfterMs).toBeLessThanOrEqual(1_500);
      // …and the plain node lacks the capability.
      expect(await t.plain.runner.runPulled(JSON.stringify(spec))).toMatchObject({
        kind: "busy",
        reason: "unplaced",
      });
      expect(await t.plain.broker.getJob(spec.id)).toMatchObject({
        status: "queued",
        attempts: 0,
        refused: { node: "cpu-1", reason: "job needs capability gpu=nvidia" },
      });
      // A job without placement runs on the plain node, and is recorded there.
      const free = await t.submit();
      expect(await t.plain.runner.runPulled(JSON.stringify(free))).toMatchObject({ kind: "done" });
      expect(await t.plain.broker.getJob(free.id)).toMatchObject({
        status: "succeeded",
        node: "cpu-1",
      });
    } finally {
      await t.cleanup();
    }
  });

  it("allowed and forbidden nodes; a placement this node does not understand is refused, not dead", async () => {
    const t = await setup();
    try {
      const only = await t.submit({ group: "gpu", nodes: ["gpu-2"] });
      expect((await t.deliver(t.gpu, only)).status).toBe(409);
      const not = await t.submit({ group: "gpu", notNodes: ["gpu-1"] });
      expect((await t.deliver(t.gpu, not)).status).toBe(409);

      const spec = await t.submit();
      const future = { ...spec, placement: { region: "mars" } };
      const answer = await t.deliver(t.plain, future);
      expect(answer.status).toBe(409);
      expect(await t.plain.broker.getJob(spec.id)).toMatchObject({
        status: "queued",
        refused: { reason: "placement not understood by this node" },
      });
    } finally {
      await t.cleanup();
    }
  });

  it("a schedule's placement reaches its occurrences; a patch with {} removes it", async () => {
    const t = await setup();
    try {
      const created = await t.plain.broker.createSchedule({
        handler: "where",
        schedule: "1s",
        placement: { group: "gpu" },
      } as never);
      expect(created.schedule.placement).toEqual({ group: "gpu" });
      await t.plain.ticker.tick();
      const occurrence = t.queue.pending.find(
        (p) => p.message.job.scheduleId === created.schedule.id,
      );
      expect(occurrence?.message.job.placement).toEqual({ group: "gpu" });
      // Refused before its first run: the refusal creates the occurrence, so it shows there.
      expect((await t.deliver(t.plain, occurrence!.message.job)).status).toBe(409);
      expect(await t.plain.broker.getJob(occurrence!.message.job.id)).toMatchObject({
        status: "queued",
        refused: { node: "cpu-1", reason: 'job needs group "gpu"' },
      });
      expect((await t.deliver(t.gpu, occurrence!.message.job)).status).toBe(200);
      expect(await t.plain.broker.getJob(occurrence!.message.job.id)).toMatchObject({
        status: "succeeded",
        node: "gpu-1",
        placement: { group: "gpu" },
      });
      const patched = await t.plain.broker.updateSchedule(created.schedule.id, {
        placement: {},
      } as never);
      expect(patched.placement).toBeUndefined();
    } finally {
      await t.cleanup();
    }
  });

  it("a bad placement is a 400 naming the field, and nothing is stored", async () => {
    const t = await setup();
    try {
      const before = (await t.store.stats()).totals.submitted;
      for (const placement of [
        { group: "a b" },
        JSON.parse('{"capabilities":{"__proto__":"x"}}'),
        { capabilities: { gpu: 1 } },
        { nodes: [] },
        { unknown: 1 },
      ]) {
        await expect(
          t.plain.broker.submit({ handler: "where", placement } as never),
        ).rejects.toMatchObject({
          status: 400,
        });
      }
      expect((await t.store.stats()).totals.submitted).toBe(before);
    } finally {
      await t.cleanup();
    }
  });
});
