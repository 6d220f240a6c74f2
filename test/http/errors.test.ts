/**
 * Every status of docs/api.md's "Status codes on bad input", over a real socket, on the memory
 * store and on Redis: each answer is RFC 9457 problem+json with an `x-request-id`, and a refused
 * request leaves the store as it was.
 */
import { gzipSync } from "node:zlib";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TickworkError } from "../../src/core/errors.ts";
import type { Logger } from "../../src/engine/logger.ts";
import type { Authorize } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import {
  call,
  expectProblem,
  type Harness,
  snapshot,
  startHarness,
  testHandlers,
} from "./harness.ts";

class QuotaError extends TickworkError {
  readonly retryAfterMs = 42_000;
  constructor() {
    super(429, "quota_exceeded", "quota of 100 jobs per minute exceeded");
  }
}

/** The seam the auth issue will fill: driven by test headers here. */
const authorize: Authorize = (c) => {
  const role = c.req.header("x-test-role");
  if (role === "anonymous")
    throw new TickworkError(401, "unauthorized", "missing or invalid API key");
  if (role === "reader" && c.req.method !== "GET")
    throw new TickworkError(403, "forbidden", "this key may only read");
  if (role === "greedy") throw new QuotaError();
  if (role === "buggy") throw new Error("db password is hunter2");
  return { tenant: c.req.header("x-test-tenant") ?? "default" };
};

describe.each(storeFactories)("error answers on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let before: string;
  const logged: { msg: string; fields?: Record<string, unknown> }[] = [];
  const logger: Logger = {
    debug() {},
    info() {},
    warn: (msg, fields) => logged.push({ msg, ...(fields ? { fields } : {}) }),
    error: (msg, fields) => logged.push({ msg, ...(fields ? { fields } : {}) }),
    child: () => logger,
  };

  beforeEach(async () => {
    logged.length = 0;
    handle = await factory.make();
    h = await startHarness({
      store: handle.store,
      handlers: testHandlers().handlers,
      app: { authorize, bodyLimitBytes: 1_024, tickSecret: "tick-secret", dev: false },
      engine: { logger },
    });
    // Something in every listing, so "unchanged" means something.
    await call(h.origin, "POST", "/v1/jobs", { json: { handler: "echo", delay: "1h" } });
    await call(h.origin, "POST", "/v1/schedules", {
      json: { id: "s1", handler: "echo", schedule: "1h" },
    });
    before = await snapshot(h.store);
  });

  afterEach(async () => {
    expect(await snapshot(h.store)).toBe(before);
    await h.close();
    await handle.cleanup();
  });

  it("400: invalid body, JSON or query, with errors[]", async () => {
    const invalid = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", priority: 11, delay: "soon" },
    });
    expectProblem(invalid, 400);
    expect(invalid.body.errors.map((e: { path: string }) => e.path).sort()).toEqual([
      "delay",
      "priority",
    ]);
    expectProblem(await call(h.origin, "POST", "/v1/jobs", { json: { input: 1 } }), 400);
    expectProblem(await call(h.origin, "POST", "/v1/jobs", { json: [1, 2] }), 400);
    expectProblem(
      await call(h.origin, "POST", "/v1/jobs", { json: { handler: "echo", surprise: 1 } }),
      400,
    );
    expectProblem(
      await call(h.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", delay: "1s", runAt: 1 },
      }),
      400,
    );
    const badJson = await call(h.origin, "POST", "/v1/jobs", {
      body: '{"handler":',
      headers: { "content-type": "application/json" },
    });
    expectProblem(badJson, 400, /JSON/);
    expect(badJson.body.errors).toEqual([{ path: "", message: expect.any(String) }]);
    expectProblem(
      await call(h.origin, "POST", "/v1/schedules", { json: { handler: "echo" } }),
      400,
    );
    expectProblem(
      await call(h.origin, "POST", "/v1/schedules", {
        json: { id: "bad id!", handler: "echo", schedule: "1h" },
      }),
      400,
    );

    for (const query of [
      "limit=abc",
      "limit=101",
      "limit=0",
      "limit=-1",
      "limit=1.5",
      "status=bogus",
      "handler=%20",
      "cursor=!!!",
    ]) {
      const answer = await call(h.origin, "GET", `/v1/jobs?${query}`);
      expectProblem(answer, 400);
      expect(answer.body.errors[0].path).toBe(query.split("=")[0]);
    }
    expectProblem(await call(h.origin, "GET", "/v1/schedules?status=queued"), 400);
    expectProblem(await call(h.origin, "GET", "/v1/schedules/s1/runs?limit=1000"), 400);
    expectProblem(await call(h.origin, "GET", "/v1/dlq?limit=x"), 400);
    // A number too large for a double is no duration, with a unit or without.
    for (const wait of ["soon", "9".repeat(400), `${"9".repeat(400)}ms`, `${"9".repeat(400)}d`]) {
      const answer = await call(h.origin, "GET", `/v1/jobs/j_any?wait=${wait}`);
      expectProblem(answer, 400);
      expect(answer.body.errors).toEqual([
        { path: "wait", message: expect.stringContaining("duration") },
      ]);
    }
  });

  it("400: a known query parameter given twice, whichever value comes first", async () => {
    for (const [path, name] of [
      ["/v1/jobs?status=dead&status=queued", "status"],
      ["/v1/jobs?status=bogus&status=queued", "status"],
      ["/v1/jobs?limit=5&limit=500", "limit"],
      ["/v1/jobs/j_any?wait=1s&wait=1h", "wait"],
      ["/v1/schedules?cursor=&cursor=x", "cursor"],
      ["/v1/dlq?limit=1&limit=1", "limit"],
      ["/v1/events?type=job.created&type=job.succeeded", "type"],
    ] as const) {
      const answer = await call(h.origin, "GET", path);
      expectProblem(answer, 400);
      expect(answer.body.errors, path).toEqual([
        { path: name, message: expect.stringContaining("given more than once") },
      ]);
    }
    // Unknown parameters are still ignored, repeated or not (a cache buster, say).
    expect((await call(h.origin, "GET", "/v1/jobs?_=1&_=2")).status).toBe(200);
    // Several event types are one comma-separated value.
    expect((await call(h.origin, "GET", "/v1/events?type=job.created,job.succeeded")).status).toBe(
      200,
    );
  });

  it("401: no or bad credentials (authorize seam, tick secret)", async () => {
    expectProblem(
      await call(h.origin, "GET", "/v1/jobs", { headers: { "x-test-role": "anonymous" } }),
      401,
      /API key/,
    );
    const submit = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo" },
      headers: { "x-test-role": "anonymous" },
    });
    expectProblem(submit, 401);
    expectProblem(
      await call(h.origin, "GET", "/v1/dlq", { headers: { "x-test-role": "anonymous" } }),
      401,
    );
    expectProblem(await call(h.origin, "POST", "/v1/tick"), 401);
  });

  it("403: not permitted (authorize seam); the actor's tenant reaches the store", async () => {
    const refused = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo" },
      headers: { "x-test-role": "reader" },
    });
    expectProblem(refused, 403, /only read/);
    expectProblem(
      await call(h.origin, "DELETE", "/v1/schedules/s1", { headers: { "x-test-role": "reader" } }),
      403,
    );
    expect(
      (await call(h.origin, "GET", "/v1/schedules/s1", { headers: { "x-test-role": "reader" } }))
        .status,
    ).toBe(200);

    // Accepted requests carry the actor through (and are undone, for the unchanged-store check).
    const accepted = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
      headers: { "x-test-tenant": "acme" },
    });
    expect((await h.store.getJob(accepted.body.id))?.tenant).toBe("acme");
    await call(h.origin, "DELETE", `/v1/jobs/${accepted.body.id}`);
    before = await snapshot(h.store);
  });

  it("404: unknown ids and unknown routes", async () => {
    for (const [method, path] of [
      ["GET", "/v1/jobs/j_missing"],
      ["GET", "/v1/jobs/j_missing?wait=200ms"],
      ["DELETE", "/v1/jobs/j_missing"],
      ["GET", "/v1/schedules/missing"],
      ["PATCH", "/v1/schedules/missing"],
      ["POST", "/v1/schedules/missing/pause"],
      ["DELETE", "/v1/schedules/missing"],
      ["GET", "/v1/schedules/missing/runs"],
      ["POST", "/v1/dlq/j_missing/retry"],
      ["DELETE", "/v1/dlq/j_missing"],
      ["GET", "/v2/jobs"],
      ["GET", "/v1/jobs/a/b"],
      ["GET", "/"],
    ] as const) {
      const json = method === "PATCH" ? { priority: 1 } : undefined;
      expectProblem(await call(h.origin, method, path, json ? { json } : {}), 404);
    }
  });

  it("405: a known path with another method, with Allow", async () => {
    const answer = await call(h.origin, "PUT", "/v1/jobs/j_any");
    expectProblem(answer, 405);
    expect(answer.headers.get("allow")).toBe("DELETE, GET, HEAD");
    expect((await call(h.origin, "PATCH", "/v1/jobs")).headers.get("allow")).toBe(
      "GET, HEAD, POST",
    );
    expect((await call(h.origin, "GET", "/v1/worker")).headers.get("allow")).toBe("POST");
    // A path two routes serve: the batch route's POST and the job route's methods.
    const batch = await call(h.origin, "PUT", "/v1/jobs/batch");
    expectProblem(batch, 405);
    expect(batch.headers.get("allow")).toBe("DELETE, GET, HEAD, POST");
    expect((await call(h.origin, "DELETE", "/v1/tick")).headers.get("allow")).toBe(
      "GET, HEAD, POST",
    );
    expectProblem(await call(h.origin, "POST", "/health"), 405);
  });

  it("409: a conflict with the job's state", async () => {
    const { body } = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo", delay: "1h" },
    });
    await call(h.origin, "DELETE", `/v1/jobs/${body.id}`);
    before = await snapshot(h.store);
    expectProblem(await call(h.origin, "DELETE", `/v1/jobs/${body.id}`), 409, /can be cancelled/);
  });

  it("413: a body over the limit, by Content-Length and by the bytes actually sent", async () => {
    const big = { handler: "echo", input: "x".repeat(2_000) };
    expectProblem(await call(h.origin, "POST", "/v1/jobs", { json: big }), 413);
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/s1", { json: { input: "x".repeat(2_000) } }),
      413,
    );
    const chunks = (parts: string[]) =>
      new ReadableStream<Uint8Array>({
        start(controller) {
          for (const part of parts) controller.enqueue(new TextEncoder().encode(part));
          controller.close();
        },
      });
    const streamed = await call(h.origin, "POST", "/v1/jobs", {
      body: chunks(['{"handler":"echo","input":"', "y".repeat(600), "y".repeat(600), '"}']),
      headers: { "content-type": "application/json" },
    });
    expectProblem(streamed, 413);
    // Queue deliveries may be 4× the limit (they wrap the input), and no more.
    const delivery = await call(h.origin, "POST", "/v1/worker", {
      body: "z".repeat(4_097),
      headers: { "content-type": "application/json" },
    });
    expectProblem(delivery, 413);
    // Under the limit, streamed, is fine.
    const small = await call(h.origin, "POST", "/v1/jobs", {
      body: chunks(['{"handler":"echo",', '"delay":"1h"}']),
      headers: { "content-type": "application/json" },
    });
    expect(small.status).toBe(202);
    await call(h.origin, "DELETE", `/v1/jobs/${small.body.id}`);
    before = await snapshot(h.store);
  });

  it("415: a body that is not application/json", async () => {
    const text = await call(h.origin, "POST", "/v1/jobs", {
      body: '{"handler":"echo"}',
      headers: { "content-type": "text/plain" },
    });
    expectProblem(text, 415, /text\/plain/);
    expectProblem(
      await call(h.origin, "POST", "/v1/jobs", { body: new Blob(['{"handler":"echo"}']) }),
      415,
    );
    expectProblem(
      await call(h.origin, "POST", "/v1/schedules", {
        body: "id=x",
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
      415,
    );
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/s1", {
        body: "{}",
        headers: { "content-type": "text/json" },
      }),
      415,
    );
    // `+json` media types and parameters are fine.
    const vendor = await call(h.origin, "POST", "/v1/jobs", {
      body: '{"handler":"echo","delay":"1h"}',
      headers: { "content-type": "application/vnd.api+json; charset=utf-8" },
    });
    expect(vendor.status).toBe(202);
    await call(h.origin, "DELETE", `/v1/jobs/${vendor.body.id}`);
    before = await snapshot(h.store);
  });

  it("415: a body with a content coding (gzip, br), whether or not it is coded", async () => {
    const json = '{"handler":"echo","delay":"1h"}';
    const sends: [string, string, BodyInit, string][] = [
      ["POST", "/v1/jobs", json, "gzip"],
      ["POST", "/v1/jobs", new Blob([gzipSync(json)]), "gzip"],
      ["POST", "/v1/jobs/batch", `{"jobs":[${json}]}`, "GZIP"],
      ["POST", "/v1/schedules", '{"id":"s9","handler":"echo","schedule":"1h"}', "br"],
      ["POST", "/v1/jobs", json, "identity, gzip"],
    ];
    for (const [method, path, body, coding] of sends) {
      const answer = await call(h.origin, method, path, {
        body,
        headers: { "content-type": "application/json", "content-encoding": coding },
      });
      expectProblem(answer, 415, /must not be encoded/);
    }
    // `identity` is no coding.
    const plain = await call(h.origin, "POST", "/v1/jobs", {
      body: json,
      headers: { "content-type": "application/json", "content-encoding": "identity" },
    });
    expect(plain.status).toBe(202);
    await call(h.origin, "DELETE", `/v1/jobs/${plain.body.id}`);
    before = await snapshot(h.store);
  });

  it("422: unknown handler, invalid cron, time zone or interval, input the handler refuses", async () => {
    expectProblem(
      await call(h.origin, "POST", "/v1/jobs", { json: { handler: "nope" } }),
      422,
      /no handler named "nope"/,
    );
    const typed = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "typed", input: { n: "one" } },
    });
    expectProblem(typed, 422);
    expect(typed.body.errors[0].path).toBe("input.n");
    const schedule = { id: "s2", handler: "echo", schedule: "1h" };
    for (const patch of [
      { handler: "nope" },
      { schedule: "61 * * * *" },
      { schedule: "0 0 30 2 *" },
      // Matches only in the zone's yearly daylight-saving gap (a cadence skips gap times).
      { schedule: "30 0/24 * 4 5L", tz: "Africa/Cairo" },
      { schedule: "0 9 * * *", tz: "Mars/Olympus_Mons" },
      { schedule: "0s" },
      { schedule: "400d" },
      { schedule: "5x" },
    ]) {
      const answer = await call(h.origin, "POST", "/v1/schedules", {
        json: { ...schedule, ...patch },
      });
      expectProblem(answer, 422);
    }
    expectProblem(
      await call(h.origin, "PATCH", "/v1/schedules/s1", {
        json: { tz: "Nowhere/City", schedule: "0 9 * * *" },
      }),
      422,
    );
    const gapOnly = await call(h.origin, "POST", "/v1/schedules", {
      json: { ...schedule, id: "gap-only", schedule: "30 0/24 * 4 5L", tz: "Africa/Cairo" },
    });
    expectProblem(gapOnly, 422);
    expect(gapOnly.body.type).toBe("urn:tickwork:problem:never_fires");
    expect((await call(h.origin, "GET", "/v1/schedules/gap-only")).status).toBe(404);
  });

  it("429: quota exceeded (a seam error) carries Retry-After", async () => {
    const answer = await call(h.origin, "POST", "/v1/jobs", {
      json: { handler: "echo" },
      headers: { "x-test-role": "greedy" },
    });
    expectProblem(answer, 429, /quota/);
    expect(answer.body.type).toBe("urn:tickwork:problem:quota_exceeded");
    expect(answer.headers.get("retry-after")).toBe("42");
  });

  it("500: an unexpected error is logged with the request id and not leaked", async () => {
    const answer = await call(h.origin, "GET", "/v1/jobs", {
      headers: { "x-test-role": "buggy", "x-request-id": "req-500" },
    });
    expectProblem(answer, 500);
    expect(JSON.stringify(answer.body)).not.toMatch(/hunter2|Error:|at /);
    expect(answer.headers.get("x-request-id")).toBe("req-500");
    expect(logged).toEqual([
      {
        msg: "request failed",
        fields: expect.objectContaining({
          requestId: "req-500",
          status: 500,
          error: expect.stringContaining("hunter2"),
        }),
      },
    ]);
  });
});

/** A store whose every call fails the way a store behind a dead connection does. */
function unreachable(store: Store): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      return async () => {
        throw Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6379"), {
          code: "ECONNREFUSED",
        });
      };
    },
  }) as Store;
}

describe("503: store unreachable", () => {
  const cases: { name: string; make(): { store: Store; close(): void } }[] = [
    {
      name: "memory store behind a dead connection",
      make: () => ({ store: unreachable(new MemoryStore()), close() {} }),
    },
    {
      name: "Redis store on a port nobody listens on",
      make() {
        const redis = new Redis("redis://127.0.0.1:1", {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        redis.on("error", () => {});
        return {
          store: new RedisStore({ client: fromIoredis(redis), prefix: "unreachable" }),
          close: () => redis.disconnect(),
        };
      },
    },
  ];

  it.each(cases)("answers 503 + Retry-After on the $name; /health stays 200", async ({ make }) => {
    const { store, close } = make();
    const h = await startHarness({ store, handlers: testHandlers().handlers });
    try {
      for (const [method, path, json] of [
        ["GET", "/ready"],
        ["GET", "/v1/jobs"],
        ["GET", "/v1/jobs/j_0000000000000000000xx"],
        ["POST", "/v1/jobs", { handler: "echo" }],
        ["POST", "/v1/schedules", { handler: "echo", schedule: "1h" }],
        ["POST", "/v1/tick"],
        ["GET", "/v1/dlq"],
      ] as const) {
        const answer = await call(h.origin, method, path, json ? { json } : {});
        expectProblem(answer, 503);
        expect(answer.headers.get("retry-after")).toBe("5");
      }
      const health = await call(h.origin, "GET", "/health");
      expect(health.status).toBe(200);
      expect(health.body).toEqual({ ok: true });
    } finally {
      await h.close();
      close();
    }
  });
});
