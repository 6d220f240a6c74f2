/**
 * A tenant's manifest and the input limits, over a real socket: handlers outside the manifest are
 * 403 (for jobs and for schedules, patches included), timeouts over the limit 422 (a larger
 * default is lowered), schedules whose occurrences come too close 422, inputs over the size 413;
 * bodies nested too deep or using `__proto__`/`constructor`/`prototype` anywhere 400, as are bad
 * handler names, too many or too long tags and too long idempotency keys. Nothing refused changes
 * the store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { expectProblem, type Harness } from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { bearer, call, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

describe.each(storeFactories)("manifest and input limits on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let acme: TestTenant;
  let before: string;
  const as = () => bearer(acme.keys.admin!);

  beforeEach(async () => {
    handle = await factory.make();
    acme = await tenant(
      "acme",
      { admin: ["admin"] },
      {
        submit: ["echo", "hold"],
        schedule: ["ech*"],
        maxTimeoutMs: 30_000,
        minIntervalMs: 60_000,
        maxInputBytes: 64,
      },
    );
    h = await securedApp(handle.store, [acme]);
    const created = await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "s1", handler: "echo", schedule: "5m" },
      headers: as(),
    });
    expect(created.status).toBe(201);
    before = await storeState(h.store);
  });

  afterEach(async () => {
    expect(await storeState(h.store)).toBe(before);
    await h.close();
    await handle.cleanup();
  });

  it("403 for a handler outside the manifest, before saying whether it exists", async () => {
    for (const handler of ["flaky", "typed", "no.such.handler"]) {
      const job = await call(h.origin, "POST", "/v1/jobs", { json: { handler }, headers: as() });
      expectProblem(job, 403, new RegExp(`may not submit jobs for handler "${handler}"`));
      const schedule = await call(h.origin, "POST", "/v1/schedules", {
        json: { handler, schedule: "1h" },
        headers: as(),
      });
      expectProblem(schedule, 403, /may not schedule handler/);
    }
    // `hold` may be submitted but not scheduled; a patch cannot move a schedule outside either.
    expectProblem(
      await call(h.origin, "POST", "/v1/schedules", {
        json: { handler: "hold", schedule: "1h" },
        headers: as(),
      }),
      403,
    );
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/s1", {
        json: { handler: "hold" },
        headers: as(),
      }),
      403,
    );
  });

  it("422 for an explicit timeout over the limit; a longer default is lowered to it", async () => {
    for (const [path, json] of [
      ["/v1/jobs", { handler: "echo", timeout: "31s" }],
      ["/v1/schedules", { handler: "echo", schedule: "1h", timeout: 30_001 }],
    ] as const) {
      const answer = await call(h.origin, "POST", path, { json, headers: as() });
      expectProblem(answer, 422, /over this tenant's limit/);
    }
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/s1", { json: { timeout: "1m" }, headers: as() }),
      422,
    );
    // The default (60 s) is over the limit: the job gets the limit.
    const ok = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
      headers: as(),
    });
    expect(ok.status).toBe(202);
    expect((await h.store.getJob(ok.body.id))?.timeoutMs).toBe(30_000);
    await call(h.origin, "DELETE", `/v1/jobs/${ok.body.id}`, { headers: as() });
    before = await storeState(h.store);
  });

  it("422 when occurrences can come closer than minIntervalMs, for intervals and cron", async () => {
    for (const schedule of ["30s", "59s", "* * * * * *", "*/30 * * * * *", "0,30 * * * * *"]) {
      const answer = await call(h.origin, "POST", "/v1/schedules", {
        json: { handler: "echo", schedule },
        headers: as(),
      });
      expectProblem(answer, 422);
      expect(answer.body.type).toBe("urn:tickwork:problem:interval_too_short");
    }
    // Irregular cron: two runs 30 s apart once a day (the rest of the day is empty).
    expectProblem(
      await call(h.origin, "POST", "/v1/schedules", {
        json: { handler: "echo", schedule: "0,30 0 9 * * *" },
        headers: as(),
      }),
      422,
    );
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/s1", {
        json: { schedule: "10s" },
        headers: as(),
      }),
      422,
    );
    for (const schedule of ["1m", "* * * * *", "0 9 * * 1-5", "0,1 9 * * *"]) {
      const ok = await call(h.origin, "POST", "/v1/schedules", {
        json: { id: "ok", handler: "echo", schedule },
        headers: as(),
      });
      expect(ok.status, schedule).toBeLessThan(300);
    }
    await call(h.origin, "DELETE", "/v1/schedules/ok", { headers: as() });
    before = await storeState(h.store);
  });

  it("413 for an input over maxInputBytes (UTF-8 bytes of its JSON)", async () => {
    // 4-byte characters: 20 of them are 80 bytes (over 64) though only 20 characters long.
    const wide = "😀".repeat(20);
    for (const [method, path, json] of [
      ["POST", "/v1/jobs", { handler: "echo", input: { text: wide } }],
      ["POST", "/v1/jobs", { handler: "echo", input: "x".repeat(63) }],
      ["POST", "/v1/schedules", { handler: "echo", schedule: "1h", input: [wide] }],
      ["PATCH", "/v1/schedules/s1", { input: { text: wide } }],
    ] as const) {
      const answer = await call(h.origin, method, path, { json, headers: as() });
      expectProblem(answer, 413, /input is \d+ bytes/);
    }
    // 62 characters + 2 quotes = 64 bytes: just fits.
    const fits = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: "x".repeat(62), delay: "1h" },
      headers: as(),
    });
    expect(fits.status).toBe(202);
    await call(h.origin, "DELETE", `/v1/jobs/${fits.body.id}`, { headers: as() });
    before = await storeState(h.store);
  });

  it("400 for bodies nested too deep or using a reserved key anywhere", async () => {
    const nest = (depth: number): unknown => (depth === 0 ? 1 : { a: nest(depth - 1) });
    // The body is level 1: an input of 31 nested objects makes 32 levels in all, the most allowed
    // (then refused for its size: 64 bytes is this tenant's limit), 32 of them one too many.
    const deepest = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "hold", input: nest(31), delay: "1h" },
      headers: as(),
    });
    expectProblem(deepest, 413);
    const deep = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: nest(32) },
      headers: as(),
    });
    expectProblem(deep, 400, /deeper than 32/);
    const veryDeep = await call(h.origin, "POST", "/v1/jobs", {
      body: `${"[".repeat(100_000)}${"]".repeat(100_000)}`,
      headers: { ...as(), "content-type": "application/json" },
    });
    expectProblem(veryDeep, 400, /deeper than 32/);
    for (const body of [
      '{"handler":"echo","input":{"__proto__":{"admin":true}}}',
      '{"handler":"echo","input":[{"x":{"constructor":{"prototype":{"y":1}}}}]}',
      '{"handler":"echo","__proto__":{"delay":"1s"}}',
      '{"handler":"echo","input":{"prototype":1}}',
    ]) {
      for (const path of ["/v1/jobs", "/v1/schedules", "/v1/schedules/s1"]) {
        const answer = await call(h.origin, path.endsWith("s1") ? "PATCH" : "POST", path, {
          body,
          headers: { ...as(), "content-type": "application/json" },
        });
        expectProblem(answer, 400, /reserved key/);
        expect(answer.body.errors[0].message).toMatch(/is not allowed/);
      }
    }
    // A string value that merely says "__proto__" is fine.
    const ok = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", input: "__proto__", delay: "1h" },
      headers: as(),
    });
    expect(ok.status).toBe(202);
    await call(h.origin, "DELETE", `/v1/jobs/${ok.body.id}`, { headers: as() });
    before = await storeState(h.store);
  });

  it("400 with errors[] for bad handler names, tags and idempotency keys", async () => {
    const cases: [unknown, string][] = [
      [{ handler: "" }, "handler"],
      [{ handler: "has space" }, "handler"],
      [{ handler: "x".repeat(129) }, "handler"],
      [{ handler: ".leading-dot" }, "handler"],
      [{ handler: "echo", tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, "tags"],
      [{ handler: "echo", tags: ["x".repeat(65)] }, "tags.0"],
      [{ handler: "echo", tags: [""] }, "tags.0"],
      [{ handler: "echo", tags: ["new\nline"] }, "tags.0"],
      [{ handler: "echo", idempotencyKey: "k".repeat(257) }, "idempotencyKey"],
      [{ handler: "echo", idempotencyKey: "" }, "idempotencyKey"],
      [{ handler: "echo", idempotencyKey: "a\u0000b" }, "idempotencyKey"],
    ];
    for (const [json, path] of cases) {
      const answer = await call(h.origin, "POST", "/v1/jobs", { json, headers: as() });
      expectProblem(answer, 400);
      expect(answer.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    const schedule = await call(h.origin, "POST", "/v1/schedules", {
      json: { handler: "echo", schedule: "1h", tags: Array.from({ length: 21 }, () => "t") },
      headers: as(),
    });
    expectProblem(schedule, 400);
  });
});
