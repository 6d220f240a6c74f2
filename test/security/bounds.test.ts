/**
 * Validation before any write: the findings of the input-bounds review, one example each, over a
 * real socket on the memory store and on Redis. Every refusal is a clear 4xx problem naming the
 * field, and leaves jobs, schedules, dead letters and counters as they were.
 *
 * 1. instants and durations out of range → 422 `out_of_range` (a stored out-of-range time from
 *    before still renders); 2. handler names that are inherited properties → 422 unknown_handler;
 * 3. timeouts outside 1 s – 15 min → 422 (and the runner survives any stored timeout);
 * 4. strings that are not well-formed Unicode → 400; 5. a path id create would refuse → 404
 * without a store call; 6. a default input size without a manifest → 413.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigValidationError } from "../../src/config/define.ts";
import type { JobSpec, ScheduleRecord } from "../../src/core/model.ts";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { deliveryResponse } from "../../src/http/delivery.ts";
import { jobResource, scheduleResource } from "../../src/http/serialize.ts";
import type { Store } from "../../src/store/port.ts";
import { expectProblem, type Harness, testHandlers } from "../http/harness.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";
import { makeRedisStore, type StoreHandle, storeFactories } from "../support/stores.ts";
import { bearer, call, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

const DAY = 86_400_000;
/** The largest timeout (15 min), as docs/api.md states it. */
const MAX_TIMEOUT_MS = 900_000;
const INHERITED = [
  "constructor",
  "toString",
  "__proto__",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "toLocaleString",
  "propertyIsEnumerable",
];
const SIGNED = { "upstash-signature": "chaos-queue-signature", "content-type": "application/json" };

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "validation before any write on $name",
  (factory) => {
    let handle: StoreHandle;
    let h: Harness;
    let acme: TestTenant;
    let before: string;
    const as = () => bearer(acme.keys.admin!);

    beforeEach(async () => {
      handle = await factory.make();
      acme = await tenant("acme", { admin: ["admin"] });
      h = await securedApp(handle.store, [acme]);
      await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", delay: "1h" },
        headers: as(),
      });
      const created = await call(h.origin, "POST", "/v1/schedules", {
        json: { id: "s1", handler: "echo", schedule: "5m" },
        headers: as(),
      });
      expect(created.status).toBe(201);
      before = await storeState(h.store);
    });

    afterEach(async () => {
      expect(await storeState(h.store)).toBe(before);
      // The tenant's listings still answer.
      expect((await call(h.origin, "GET", "/v1/jobs", { headers: as() })).status).toBe(200);
      expect((await call(h.origin, "GET", "/v1/schedules", { headers: as() })).status).toBe(200);
      await h.close();
      await handle.cleanup();
    });

    /** Expect a 422 out_of_range naming exactly `field`. */
    function expectOutOfRange(answer: Awaited<ReturnType<typeof call>>, field: string) {
      expectProblem(answer, 422);
      expect(answer.body.type).toBe("urn:tickwork:problem:out_of_range");
      expect(answer.body.detail).toContain(field);
      expect(answer.body.errors.map((e: { path: string }) => e.path)).toEqual([field]);
    }

    it("1. instants and durations out of range: 422 naming the field, nothing written", async () => {
      const jobs: [Record<string, unknown>, string][] = [
        [{ runAt: 1e300 }, "runAt"],
        [{ runAt: 8_640_000_000_000_001 }, "runAt"],
        [{ runAt: 8_640_000_000_000_000 }, "runAt"],
        [{ runAt: Date.now() + 400 * DAY }, "runAt"],
        [{ runAt: "+275760-09-13T00:00:00.000Z" }, "runAt"],
        [{ runAt: -1 }, "runAt"],
        [{ delay: "100000000d" }, "delay"],
        [{ delay: 1e300 }, "delay"],
        [{ delay: "366d" }, "delay"],
        [{ delay: Number.MAX_SAFE_INTEGER + 2 }, "delay"],
      ];
      for (const [fields, field] of jobs) {
        const answer = await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo", ...fields },
          headers: as(),
        });
        expectOutOfRange(answer, field);
      }
      const schedules: [Record<string, unknown>, string][] = [
        [{ startAt: 8_640_000_000_000_000 }, "startAt"],
        [{ startAt: 1e300 }, "startAt"],
        [{ endAt: 8_640_000_000_000_001 }, "endAt"],
        [{ jitter: "100000000d" }, "jitter"],
        [{ jitter: 1e300 }, "jitter"],
        [{ jitter: "2d" }, "jitter"],
      ];
      for (const [fields, field] of schedules) {
        const created = await call(h.origin, "POST", "/v1/schedules", {
          json: { handler: "echo", schedule: "1h", ...fields },
          headers: as(),
        });
        expectOutOfRange(created, field);
        const patched = await call(h.origin, "PATCH", "/v1/schedules/s1", {
          json: fields,
          headers: as(),
        });
        expectOutOfRange(patched, field);
      }
      // The edges are accepted (on a copy of nothing: a throwaway schedule, deleted again).
      const edge = await call(h.origin, "POST", "/v1/schedules", {
        json: {
          id: "edge",
          handler: "echo",
          schedule: "1h",
          startAt: "9999-12-31T23:59:59.999Z",
          jitter: "1d",
        },
        headers: as(),
      });
      expect(edge.status).toBe(201);
      expect(edge.body.startAt).toBe("9999-12-31T23:59:59.999Z");
      await call(h.origin, "DELETE", "/v1/schedules/edge", { headers: as() });
      before = await storeState(h.store);
    });

    it("1. a malformed duration or time stays 400, and a mix of both is 400 listing both", async () => {
      const mixed = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", delay: "soon", timeout: 1e300 },
        headers: as(),
      });
      expectProblem(mixed, 400);
      expect(mixed.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
        "delay",
        "timeout",
      ]);
      expectProblem(
        await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo", runAt: "not a date" },
          headers: as(),
        }),
        400,
      );
    });

    it("1. a stored time out of range (from before the bounds) renders, listings answer", async () => {
      const result = await h.store.submitJob(
        {
          id: "j_0000000000000000000zz",
          tenant: "acme",
          handler: "echo",
          input: null,
          priority: 5,
          timeoutMs: 60_000,
          retries: 0,
          tags: [],
        },
        { runAt: 1e300, delayMs: 0, recoverGraceMs: 30_000 },
      );
      expect("job" in result).toBe(true);
      const list = await call(h.origin, "GET", "/v1/jobs", { headers: as() });
      expect(list.status).toBe(200);
      const one = await call(h.origin, "GET", "/v1/jobs/j_0000000000000000000zz", {
        headers: as(),
      });
      expect(one.status).toBe(200);
      expect(one.body.runAt).toBe("+275760-09-13T00:00:00.000Z");
      await call(h.origin, "DELETE", "/v1/jobs/j_0000000000000000000zz", { headers: as() });
      before = await storeState(h.store);
    });

    it("2. inherited property names are unknown handlers: 422, for jobs and schedules", async () => {
      for (const handler of INHERITED) {
        const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler }, headers: as() });
        expectProblem(job, 422);
        expect(job.body.type).toBe("urn:tickwork:problem:unknown_handler");
        const schedule = await call(h.origin, "POST", "/v1/schedules", {
          json: { handler, schedule: "1h" },
          headers: as(),
        });
        expectProblem(schedule, 422);
        expect(schedule.body.type).toBe("urn:tickwork:problem:unknown_handler");
        const patch = await call(h.origin, "PATCH", "/v1/schedules/s1", {
          json: { handler },
          headers: as(),
        });
        expectProblem(patch, 422);
        expect(patch.body.type).toBe("urn:tickwork:problem:unknown_handler");
      }
    });

    it("3. timeouts outside 1 s – 15 min: 422 naming timeout", async () => {
      for (const timeout of [0, 999, "0s", "900001ms", "16m", "25d", 1e300, 2 ** 31]) {
        expectOutOfRange(
          await call(h.origin, "POST", "/v1/jobs", {
            json: { handler: "echo", timeout },
            headers: as(),
          }),
          "timeout",
        );
        expectOutOfRange(
          await call(h.origin, "POST", "/v1/schedules", {
            json: { handler: "echo", schedule: "1h", timeout },
            headers: as(),
          }),
          "timeout",
        );
        expectOutOfRange(
          await call(h.origin, "PATCH", "/v1/schedules/s1", {
            json: { timeout },
            headers: as(),
          }),
          "timeout",
        );
      }
    });

    it("4. strings that are not well-formed Unicode: 400 naming the field", async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ idempotencyKey: "k-\ud800" }, "idempotencyKey"],
        [{ idempotencyKey: "k-\udbff" }, "idempotencyKey"],
        [{ idempotencyKey: "k-\udc00x" }, "idempotencyKey"],
        [{ tags: ["ok", "t-\ud800"] }, "tags.1"],
      ];
      for (const [fields, field] of cases) {
        const answer = await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo", delay: "1h", ...fields },
          headers: as(),
        });
        expectProblem(answer, 400);
        expect(answer.body.errors.map((e: { path: string }) => e.path)).toEqual([field]);
      }
      for (const [fields, field] of [
        [{ tags: ["\udfff"] }, "tags.0"],
        [{ tz: "Europe/\ud800" }, "tz"],
        [{ schedule: "1h\ud800" }, "schedule"],
      ] as const) {
        const answer = await call(h.origin, "POST", "/v1/schedules", {
          json: { handler: "echo", schedule: "1h", ...fields },
          headers: as(),
        });
        expectProblem(answer, 400);
        expect(answer.body.errors.map((e: { path: string }) => e.path)).toEqual([field]);
      }
      const query = await call(h.origin, "GET", `/v1/jobs?scheduleId=${"%ED%A0%80"}`, {
        headers: as(),
      });
      expect(query.status).toBe(400);
      // Well-formed text outside the BMP is fine.
      const astral = await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", delay: "1h", idempotencyKey: "k-😀", tags: ["😀"] },
        headers: as(),
      });
      expect(astral.status).toBe(202);
      await call(h.origin, "DELETE", `/v1/jobs/${astral.body.id}`, { headers: as() });
      before = await storeState(h.store);
    });

    it("6. without a manifest the engine's maxInputBytes applies: 413", async () => {
      // The HTTP body limit (1 MiB) lets this through; the default input limit (960 KiB) does not.
      const big = "x".repeat(1_000_000);
      expectProblem(
        await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo", input: big },
          headers: as(),
        }),
        413,
        /input is 1000002 bytes; at most 983040/,
      );
      expectProblem(
        await call(h.origin, "POST", "/v1/schedules", {
          json: { handler: "echo", schedule: "1h", input: big },
          headers: as(),
        }),
        413,
      );
      expectProblem(
        await call(h.origin, "PATCH", "/v1/schedules/s1", { json: { input: big }, headers: as() }),
        413,
      );
    });
  },
);

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "5. path ids on $name",
  (factory) => {
    let handle: StoreHandle;
    let h: Harness;
    let acme: TestTenant;
    const calls: string[] = [];

    beforeEach(async () => {
      handle = await factory.make();
      acme = await tenant("acme", { admin: ["admin"] });
      h = await securedApp(counting(handle.store, calls), [acme]);
    });

    afterEach(async () => {
      await h.close();
      await handle.cleanup();
    });

    it("an id create would refuse answers 404 without a store call", async () => {
      const as = bearer(acme.keys.admin!);
      const scheduleIds = ["s1:running", "a@1", "{tw}:s:x", "..", "x".repeat(129), "%ED%A0%80"];
      const jobIds = [
        "x:running",
        "constructor",
        "{tw}:s:x",
        "..",
        "%2e%2e",
        "a:b:c@1",
        "s1@x",
        "j_short",
        `j_${"a".repeat(300)}`,
        "%ED%A0%80",
      ];
      const requests: [string, string][] = [];
      for (const id of scheduleIds) {
        const path = `/v1/schedules/${id}`;
        requests.push(
          ["GET", path],
          ["GET", `${path}/runs`],
          ["PATCH", path],
          ["DELETE", path],
          ["POST", `${path}/pause`],
          ["POST", `${path}/resume`],
        );
      }
      for (const id of jobIds) {
        requests.push(
          ["GET", `/v1/jobs/${id}`],
          ["DELETE", `/v1/jobs/${id}`],
          ["POST", `/v1/dlq/${id}/retry`],
          ["DELETE", `/v1/dlq/${id}`],
        );
      }
      for (const [method, path] of requests) {
        calls.length = 0;
        const answer = await call(h.origin, method, path, {
          headers: as,
          ...(method === "PATCH" ? { json: { priority: 3 } } : {}),
        });
        expectProblem(answer, 404);
        expect(answer.body.type).toBe("urn:tickwork:problem:not_found");
        expect(calls, `${method} ${path}`).toEqual([]);
      }
      // Ids of the right shape are looked up (and unknown: the same 404).
      for (const path of [
        "/v1/jobs/j_0000000000000000000zz",
        "/v1/jobs/s1@1700000000000",
        "/v1/jobs/acme:s1@1700000000000",
        "/v1/schedules/s1",
      ]) {
        calls.length = 0;
        expectProblem(await call(h.origin, "GET", path, { headers: as }), 404);
        expect(calls.length, path).toBeGreaterThan(0);
      }
    });
  },
);

describe("5. a schedule's running key is not readable through the API (Redis)", () => {
  it("answers 404, not a WRONGTYPE 500, while the schedule runs", async () => {
    const handle = await makeRedisStore();
    const acme = await tenant("acme", { admin: ["admin"] });
    const other = await tenant("default", { admin: ["admin"] });
    const h = await securedApp(handle.store, [acme, other]);
    try {
      const created = await call(h.origin, "POST", "/v1/schedules", {
        json: { id: "s1", handler: "echo", schedule: "5m", overlap: "skip" },
        headers: bearer(acme.keys.admin!),
      });
      expect(created.status).toBe(201);
      // While an occurrence runs, the schedule's running key holds its job id (a string) — under
      // the tenant-qualified id (`acme:s1`), and under the bare one (the layout before tenants).
      for (const id of ["acme:s1", "s1"]) {
        await handle.redis.set(`{${handle.prefix}}:s:${id}:running`, "s1@1700000000000");
      }
      // The owner asking for `s1:running`, and a default-tenant key (whose ids are not qualified)
      // asking for `acme:s1:running` — another tenant's key.
      for (const [key, id] of [
        [acme.keys.admin!, "s1:running"],
        [other.keys.admin!, "acme:s1:running"],
        [other.keys.admin!, "s1:running"],
      ] as const) {
        for (const [method, path] of [
          ["GET", `/v1/schedules/${id}`],
          ["GET", `/v1/schedules/${id}/runs`],
          ["PATCH", `/v1/schedules/${id}`],
          ["DELETE", `/v1/schedules/${id}`],
          ["POST", `/v1/schedules/${id}/pause`],
          ["POST", `/v1/schedules/${id}/resume`],
        ] as const) {
          const answer = await call(h.origin, method, path, {
            headers: bearer(key),
            ...(method === "PATCH" ? { json: { priority: 3 } } : {}),
          });
          expectProblem(answer, 404);
        }
      }
    } finally {
      await h.close();
      await handle.cleanup();
    }
  });
});

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

    it("2. the broker refuses inherited names; the runner dead-letters a stored one at once", async () => {
      const { engine } = engineWith();
      for (const handler of INHERITED) {
        const error = await engine.broker.submit({ handler }).catch((e: unknown) => e);
        expect(error).toMatchObject({ status: 422, code: "unknown_handler" });
      }
      const spec = await stored({ handler: "toString", retries: 3 });
      const answer = await deliver(engine, spec);
      expect(answer.status).toBe(489);
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

/** `store`, recording the name of every method called on it into `calls`. */
function counting(store: Store, calls: string[]): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(key));
        return value.apply(target, args);
      };
    },
  });
}
