/**
 * The input-bounds review's findings on the engine's side (see `bounds.test.ts`): the broker and
 * the runner on the memory store and on Redis (inherited handler names, stored timeouts, input
 * size), handler and engine options, manifest bounds, and rendering times a `Date` cannot hold.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigValidationError } from "../../src/config/define.ts";
import type { JobSpec, ScheduleRecord } from "../../src/core/model.ts";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { UNKNOWN_HANDLER_GRACE_MS } from "../../src/engine/runner.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { jobResource, scheduleResource } from "../../src/http/serialize.ts";
import { testHandlers } from "../http/harness.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { DAY, INHERITED, MAX_TIMEOUT_MS } from "./bounds-support.ts";
import { tenant } from "./support.ts";

const SIGNED = { "upstash-signature": "chaos-queue-signature", "content-type": "application/json" };

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "the engine on $name",
  (factory) => {
    let handle: StoreHandle;

    beforeEach(async () => {
      handle = await factory.make();
    });
    afterEach(async () => {
      await handle.cleanup();
    });

    function engineWith(handlers = testHandlers().handlers, extra = {}) {
      const queue = new ChaosQueue(prng(1));
      const engine = createEngine({
        store: handle.store,
        transport: queue,
        handlers,
        logger: silentLogger,
        degradation: false,
        ...extra,
      });
      return { engine, queue };
    }

    async function stored(spec: Partial<JobSpec>): Promise<JobSpec> {
      const result = await handle.store.submitJob(
        {
          id: `j_${Math.random().toString(36).slice(2).padEnd(21, "0").slice(0, 21)}`,
          tenant: "default",
          handler: "echo",
          input: null,
          priority: 5,
          timeoutMs: 60_000,
          retries: 0,
          tags: [],
          ...spec,
        },
        { delayMs: 0, recoverGraceMs: 30_000 },
      );
      if (!("message" in result) || !result.message) throw new Error("not written");
      return result.message.job;
    }

    const deliver = (engine: ReturnType<typeof engineWith>["engine"], spec: JobSpec) =>
      engine.runner
        .deliver({
          url: "http://worker.example/v1/worker",
          headers: new Headers(SIGNED),
          body: JSON.stringify(spec),
        })
        .then(deliveryResponse);

    it("2. the broker refuses inherited names; the runner hands a stored one back, then dead-letters it", async () => {
      const { engine } = engineWith();
      for (const handler of INHERITED) {
        const error = await engine.broker.submit({ handler }).catch((e: unknown) => e);
        expect(error).toMatchObject({ status: 422, code: "unknown_handler" });
      }
      const spec = await stored({ handler: "toString", retries: 3 });
      // A node of another version may have it: handed back, not an attempt.
      const early = await deliver(engine, spec);
      expect(early.status).toBe(409);
      expect(await early.json()).toMatchObject({ type: "urn:tickwork:problem:handler_unknown" });
      expect(await handle.store.getJob(spec.id)).toMatchObject({ status: "queued", attempts: 0 });
      // A leftover delivery of a job since cancelled is acknowledged, not handed back.
      const cancelled = await stored({ handler: "toString", retries: 3 });
      await handle.store.cancelJob(cancelled.id);
      const leftover = await deliver(engine, cancelled);
      expect(leftover.status).toBe(200);
      expect(await leftover.json()).toMatchObject({ status: "cancelled" });
      // Past the grace (the delivery says when the job became due), dead at once as before.
      const due = Date.now() - UNKNOWN_HANDLER_GRACE_MS - 1_000;
      const late = await deliver(engine, { ...spec, createdAt: due, runAt: due });
      expect(late.status).toBe(489);
      expect(await handle.store.getJob(spec.id)).toMatchObject({
        status: "dead",
        error: { name: "UnknownHandler" },
      });
    });

    it("3. the runner survives any stored timeout: 0, over Node's timer limit, 1e300", async () => {
      const handlers = {
        nap: { run: () => new Promise((resolve) => setTimeout(() => resolve("rested"), 50)) },
      };
      const { engine } = engineWith(handlers);
      for (const timeoutMs of [0, 25 * DAY, 1e300]) {
        const spec = await stored({ handler: "nap", timeoutMs });
        const answer = await deliver(engine, spec);
        expect(answer.status, `timeout ${timeoutMs}`).toBe(200);
        expect((await handle.store.getJob(spec.id))?.status).toBe("succeeded");
      }
    });

    it("3. handler definitions, job defaults and manifests: timeouts within 1 s – 15 min", () => {
      const store = handle.store;
      const transport = new ChaosQueue(prng(1));
      const run = () => null;
      for (const timeout of ["100ms", 0, "16m", "25d", 1e300, "soon"]) {
        expect(
          () => createEngine({ store, transport, handlers: { x: { timeout, run } } }),
          String(timeout),
        ).toThrow(/handlers\["x"\]\.timeout/);
      }
      expect(() =>
        createEngine({ store, transport, handlers: { x: { retries: 1.5, run } } }),
      ).toThrow(/handlers\["x"\]\.retries/);
      expect(() =>
        createEngine({ store, transport, handlers: { x: { run: 1 } as never } }),
      ).toThrow(/handlers\["x"\]\.run/);
      for (const timeoutMs of [0, 999, MAX_TIMEOUT_MS + 1, 25 * DAY]) {
        expect(() => createEngine({ store, transport, handlers: {}, jobs: { timeoutMs } })).toThrow(
          RangeError,
        );
        expect(() => createEngine({ store, transport, handlers: {}, jobs: { timeoutMs } })).toThrow(
          /jobs\.timeoutMs/,
        );
      }
      expect(() =>
        createEngine({ store, transport, handlers: { x: { timeout: "15m", run } } }),
      ).not.toThrow();
    });

    it("6. maxInputBytes: the default, an option, Infinity, and bad values", async () => {
      const { engine } = engineWith();
      const big = "x".repeat(983_039); // 983_041 bytes as JSON
      await expect(engine.broker.submit({ handler: "echo", input: big })).rejects.toMatchObject({
        status: 413,
      });
      await expect(
        engine.broker.submit({ handler: "echo", input: "x".repeat(983_038) }),
      ).resolves.toMatchObject({ replayed: false });
      const small = engineWith(undefined, { maxInputBytes: 10 }).engine;
      for (const write of [
        () => small.broker.submit({ handler: "echo", input: "0123456789" }),
        () =>
          small.broker.createSchedule({ handler: "echo", schedule: "1h", input: [1, 2, 3, 4, 5] }),
      ]) {
        await expect(write()).rejects.toMatchObject({ status: 413, code: "input_too_large" });
      }
      const none = engineWith(undefined, { maxInputBytes: Number.POSITIVE_INFINITY }).engine;
      await expect(
        none.broker.submit({ handler: "echo", input: "x".repeat(1_200_000) }),
      ).resolves.toMatchObject({ replayed: false });
      for (const maxInputBytes of [0, -1, 1.5, Number.NaN]) {
        expect(() => engineWith(undefined, { maxInputBytes }), String(maxInputBytes)).toThrow(
          /maxInputBytes/,
        );
      }
    });

    it("7. an input passed in process with a number JSON cannot carry is a 400, nothing stored", async () => {
      // An HTTP body is checked as it is read; in process, JSON.stringify would store null for
      // Infinity and NaN without a word.
      const { engine } = engineWith();
      const cases: [unknown, string[]][] = [
        [{ amount: Number.POSITIVE_INFINITY }, ["input.amount"]],
        [
          [1, Number.NaN, { deep: [-Number.MAX_VALUE * 2] }],
          ["input.1", "input.2.deep.0"],
        ],
        [Number.NEGATIVE_INFINITY, ["input"]],
      ];
      const kept = (
        await engine.broker.createSchedule({ handler: "echo", schedule: "1h", input: 1 })
      ).schedule;
      for (const [input, paths] of cases) {
        for (const write of [
          () => engine.broker.submit({ handler: "echo", input }),
          () => engine.broker.createSchedule({ handler: "echo", schedule: "1h", input }),
          () => engine.broker.updateSchedule(kept.id, { input }),
        ]) {
          const error = (await write().catch((e: unknown) => e)) as {
            errors?: { path: string }[];
          };
          expect(error).toMatchObject({ status: 400, code: "invalid_request" });
          expect(error.errors?.map((e) => e.path).sort()).toEqual(paths);
        }
      }
      expect((await engine.broker.listJobs({ limit: 100 })).items).toEqual([]);
      const schedules = (await engine.broker.listSchedules({ limit: 100 })).items;
      expect(schedules.map((s) => [s.id, s.input])).toEqual([[kept.id, 1]]);
      // A reserved key passed in process (defined as an own property, as JSON.parse makes it).
      const polluted: Record<string, unknown> = { ok: 1 };
      Object.defineProperty(polluted, "__proto__", { value: { admin: true }, enumerable: true });
      const refused = (await engine.broker
        .submit({ handler: "echo", input: { nested: [polluted] } })
        .catch((e: unknown) => e)) as { errors?: { path: string }[] };
      expect(refused).toMatchObject({ status: 400, code: "invalid_request" });
      expect(refused.errors?.map((e) => e.path)).toEqual(["input.nested.0.__proto__"]);
      // A value that refers to itself, or a BigInt: a 400 at once (the walk visits each object
      // once), not a process that hangs.
      const loop: Record<string, unknown> = { x: 1 };
      loop.self = { back: loop };
      const throwing = {
        toJSON() {
          throw new Error("no JSON for this one");
        },
      };
      for (const input of [loop, { n: 10n }, { x: throwing }]) {
        for (const write of [
          () => engine.broker.submit({ handler: "echo", input }),
          () => engine.broker.createSchedule({ handler: "echo", schedule: "1h", input }),
          () => engine.broker.updateSchedule(kept.id, { input }),
        ]) {
          await expect(write()).rejects.toMatchObject({
            status: 400,
            code: "invalid_request",
            message: expect.stringMatching(/input cannot be written as JSON/),
          });
        }
      }
      expect((await engine.broker.listJobs({ limit: 100 })).items).toEqual([]);
      // Without any input limit as well (nothing to measure, JSON still cannot hold them).
      const unlimited = engineWith(undefined, { maxInputBytes: Number.POSITIVE_INFINITY }).engine;
      for (const input of [loop, { n: 10n }]) {
        await expect(unlimited.broker.submit({ handler: "echo", input })).rejects.toMatchObject({
          status: 400,
          message: expect.stringMatching(/input cannot be written as JSON/),
        });
      }
      // A value whose toJSON answers a number JSON cannot carry is refused where it is written.
      const wrapped = {
        data: { amount: Number.NaN },
        toJSON(this: { data: unknown }) {
          return this.data;
        },
      };
      await expect(
        engine.broker.submit({ handler: "echo", input: { x: wrapped } }),
      ).rejects.toMatchObject({ status: 400, errors: [{ path: "input.x.amount" }] });
      expect((await engine.broker.listJobs({ limit: 100 })).items).toEqual([]);
      // Numbers JSON carries, however large or small, are stored as they are.
      const { job } = await engine.broker.submit({
        handler: "echo",
        input: [Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, 1e300],
      });
      expect((await engine.broker.getJob(job.id)).input).toEqual([
        Number.MAX_VALUE,
        -Number.MAX_VALUE,
        Number.MIN_VALUE,
        1e300,
      ]);
    });
  },
);

describe("manifest bounds", () => {
  it("3. a manifest's maxTimeoutMs must be within 1 s – 15 min", async () => {
    for (const maxTimeoutMs of [999, MAX_TIMEOUT_MS + 1, 2 ** 31]) {
      const t = await tenant("t", { admin: ["admin"] }, { maxTimeoutMs });
      const { parseConfig } = await import("../../src/config/define.ts");
      expect(() => parseConfig({ tenants: [t.config] }), String(maxTimeoutMs)).toThrow(
        ConfigValidationError,
      );
    }
  });
});

describe("serialization", () => {
  it("1. renders times a Date cannot hold without throwing", () => {
    const job = {
      id: "j_0000000000000000000zz",
      tenant: "default",
      handler: "echo",
      input: null,
      priority: 5,
      timeoutMs: 60_000,
      retries: 0,
      tags: [],
      status: "queued" as const,
      attempts: 0,
      runAt: 1e300,
      createdAt: -1e300,
      startedAt: Number.NaN,
      finishedAt: 8_640_000_000_000_001,
      fireAt: Number.POSITIVE_INFINITY,
    };
    const rendered = jobResource(job);
    expect(rendered.runAt).toBe("+275760-09-13T00:00:00.000Z");
    expect(rendered.createdAt).toBe("-271821-04-20T00:00:00.000Z");
    expect(rendered.finishedAt).toBe("+275760-09-13T00:00:00.000Z");
    expect(rendered.fireAt).toBe("+275760-09-13T00:00:00.000Z");
    expect(typeof rendered.startedAt).toBe("string");
    const schedule: ScheduleRecord = {
      id: "s1",
      tenant: "default",
      handler: "echo",
      schedule: "1h",
      tz: "UTC",
      input: null,
      priority: 5,
      timeoutMs: 60_000,
      retries: 0,
      startAt: 8_640_000_000_000_000,
      endAt: 1e300,
      misfire: "once",
      overlap: "allow",
      jitterMs: 0,
      tags: [],
      status: "active",
      nextRunAt: 1e300,
      lastRunAt: 1e300,
      runs: 0,
      rev: 1,
      createdAt: 0,
      updatedAt: 0,
    };
    expect(() => scheduleResource(schedule)).not.toThrow();
  });
});
