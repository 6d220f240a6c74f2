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
 *
 * This file: 1–4 and 6 through the HTTP API. Finding 5 (path ids) is in `bounds-paths.test.ts`;
 * the engine's side (broker, runner, options), manifests and rendering in `bounds-engine.test.ts`.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { expectProblem, type Harness } from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { DAY, INHERITED } from "./bounds-support.ts";
import { bearer, call, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

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
        // Dates that exist past JavaScript's (year 275760): out of range, as in epoch ms.
        [{ runAt: "+275761-01-01T00:00:00Z" }, "runAt"],
        [{ runAt: "+999999-12-31" }, "runAt"],
        [{ runAt: "-271822-01-01T00:00:00Z" }, "runAt"],
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
        [{ startAt: "+300000-01-01" }, "startAt"],
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
      // Its next midnight would be in year 10000: none, so the schedule is completed.
      const late = await call(h.origin, "POST", "/v1/schedules", {
        json: {
          id: "late",
          handler: "echo",
          schedule: "0 0 * * *",
          startAt: "9999-12-31T12:00:00Z",
        },
        headers: as(),
      });
      expect(late.status).toBe(201);
      expect(late.body).toMatchObject({ status: "completed", nextRunAt: null });
      await call(h.origin, "DELETE", "/v1/schedules/late", { headers: as() });
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

    it("1. a time is ISO-8601 with its offset and a date that exists: 400 otherwise", async () => {
      // Date.parse reads each of these as some time (2001-01-01, a date of 2001, March 3rd, the
      // server's own zone); none is one. (afterEach: nothing stored.)
      const messages = (answer: { body: { errors: { path: string; message: string }[] } }) =>
        answer.body.errors.map((e) => `${e.path}: ${e.message}`);
      for (const text of ["1", "12", "June 5", "hello 2026", "2026-02-31", "2026-12-01T09:30:00"]) {
        const job = await call(h.origin, "POST", "/v1/jobs", {
          json: { handler: "echo", runAt: text },
          headers: as(),
        });
        expectProblem(job, 400);
        expect(messages(job)).toEqual([`runAt: not a time: ${JSON.stringify(text)}`]);
        const schedule = await call(h.origin, "POST", "/v1/schedules", {
          json: { handler: "echo", schedule: "1h", startAt: text },
          headers: as(),
        });
        expectProblem(schedule, 400);
        expect(messages(schedule)).toEqual([`startAt: not a time: ${JSON.stringify(text)}`]);
        // (`since` reads digits as epoch ms.)
        if (/^\d+$/.test(text)) continue;
        const since = `/v1/events?since=${encodeURIComponent(text)}`;
        expectProblem(await call(h.origin, "GET", since, { headers: as() }), 400);
      }
      // Epoch ms past JavaScript's dates: a 400 naming `since` (not the store's `after`).
      for (const text of ["9999999999999999", "8640000000000001"]) {
        const since = await call(h.origin, "GET", `/v1/events?since=${text}`, { headers: as() });
        expectProblem(since, 400);
        expect(messages(since)).toEqual([
          `since: not an event id or a time: ${JSON.stringify(text)} (e.g. "1700000000000-0" or "2026-01-01T00:00:00Z")`,
        ]);
      }
    });

    it("1. a number past a double's range (1e400) is a 400 naming it, not a null stored", async () => {
      // JSON.parse reads 1e400 as Infinity, which JSON.stringify would store as null. (afterEach:
      // nothing stored.)
      const raw = (path: string, text: string) =>
        call(h.origin, "POST", path, {
          body: text,
          headers: { ...as(), "content-type": "application/json" },
        });
      const job = await raw(
        "/v1/jobs",
        '{"handler":"echo","input":{"amount":1e400,"list":[1,-1e400],"ok":1e300}}',
      );
      expectProblem(job, 400, /number out of range/);
      expect(job.body.errors.map((e: { path: string }) => e.path)).toEqual([
        "input.amount",
        "input.list.1",
      ]);
      const batch = await raw("/v1/jobs/batch", '{"jobs":[{"handler":"echo","input":[1e999]}]}');
      expectProblem(batch, 400, /number out of range/);
      const schedule = await raw(
        "/v1/schedules",
        '{"handler":"echo","schedule":"1h","input":{"n":-1e400}}',
      );
      expectProblem(schedule, 400, /number out of range/);
      expectProblem(await raw("/v1/jobs", "1e400"), 400, /number out of range/);
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
