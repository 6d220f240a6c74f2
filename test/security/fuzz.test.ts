/**
 * Acceptance 3: a property-based fuzz (fast-check) of bodies, query strings and headers against
 * the real HTTP server: whatever arrives, the answer is never a 5xx, every error is problem+json,
 * and no 4xx changes anything a client can observe (jobs, schedules, dead letters, counters —
 * compared before and after each refused request).
 */
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Harness } from "../http/harness.ts";
import { type StoreHandle, storeFactories } from "../support/stores.ts";
import { bearer, securedApp, storeState, type TestTenant, tenant } from "./support.ts";

/** Paths the fuzz aims at (ids made up or real), with the methods worth trying there. */
const TARGETS: { method: string; path: string }[] = [
  { method: "POST", path: "/v1/jobs" },
  { method: "GET", path: "/v1/jobs" },
  { method: "GET", path: "/v1/jobs/{id}" },
  { method: "DELETE", path: "/v1/jobs/{id}" },
  { method: "POST", path: "/v1/schedules" },
  { method: "GET", path: "/v1/schedules" },
  { method: "GET", path: "/v1/schedules/{id}" },
  { method: "PATCH", path: "/v1/schedules/{id}" },
  { method: "POST", path: "/v1/schedules/{id}/pause" },
  { method: "POST", path: "/v1/schedules/{id}/resume" },
  { method: "DELETE", path: "/v1/schedules/{id}" },
  { method: "GET", path: "/v1/schedules/{id}/runs" },
  { method: "GET", path: "/v1/dlq" },
  { method: "POST", path: "/v1/dlq/{id}/retry" },
  { method: "DELETE", path: "/v1/dlq/{id}" },
  { method: "GET", path: "/v1/tick" },
  { method: "POST", path: "/v1/worker" },
  { method: "POST", path: "/v1/dead" },
  { method: "PUT", path: "/v1/jobs" },
];

const FIELDS = [
  "handler",
  "input",
  "priority",
  "delay",
  "runAt",
  "timeout",
  "retries",
  "tags",
  "idempotencyKey",
  "id",
  "schedule",
  "tz",
  "maxRuns",
  "startAt",
  "endAt",
  "misfire",
  "overlap",
  "jitter",
  "__proto__",
  "constructor",
];

/** Values that are close to valid as often as they are far from it. */
const value = fc.oneof(
  fc.constantFrom(
    "echo",
    "hold",
    "flaky",
    "nope",
    "61 * * * *",
    "*/5 * * * *",
    "1h",
    "30s",
    "0s",
    "-1",
    "Europe/Berlin",
    "Mars/Olympus",
    "skip",
    "once",
    "all",
    "allow",
    "2026-01-01T00:00:00Z",
    "not a date",
    "",
    "\u0000",
    "😀",
    "__proto__",
  ),
  fc.integer({ min: -1_000, max: 1_000 }),
  fc.constantFrom(0, 1, 5, 10, 11, 1e21, -0, 2 ** 53, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 40 }),
  fc.array(fc.string({ maxLength: 70 }), { maxLength: 25 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** A JSON body: a valid one with a few fields changed, a record of known and unknown fields,
 * any JSON value, or deep nesting. */
const jsonBody = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.constantFrom(
          { handler: "echo", delay: "1h" },
          { handler: "echo", schedule: "1h" },
          { handler: "hold", input: { ms: 1 }, delay: "2h", tags: ["a"] },
          { priority: 3 },
          { handler: "nope", delay: "1h" },
          { handler: "echo", schedule: "61 * * * *", tz: "Mars/Olympus" },
        ),
        fc.oneof(fc.constant({}), fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 2 })),
      )
      .map(([base, changes]) => ({ ...base, ...changes })),
  },
  fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 10 })), value, {
    maxKeys: 8,
  }),
  fc.jsonValue({ maxDepth: 4 }),
  fc
    .integer({ min: 0, max: 6_000 })
    .map((n) => ({ handler: "echo", delay: "1h", input: "x".repeat(n) })),
  fc.integer({ min: 30, max: 40 }).map((depth) => {
    let v: unknown = 1;
    for (let i = 0; i < depth; i++) v = { a: v };
    return { handler: "echo", input: v };
  }),
);

const body = fc.oneof(
  {
    weight: 6,
    arbitrary: jsonBody.map((v) => ({
      text: JSON.stringify(v) ?? "null",
      type: "application/json",
    })),
  },
  fc.record({
    text: fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.constantFrom('{"handler":', "[[[[", '{"__proto__":1}', "\uFEFF{}", "{}".repeat(50)),
    ),
    type: fc.constantFrom(
      "application/json",
      "application/vnd.api+json",
      "text/plain",
      "application/x-www-form-urlencoded",
      "",
      "application/json; charset=latin1",
    ),
  }),
  fc.constant(undefined),
);

const query = fc.dictionary(
  fc.constantFrom("limit", "cursor", "status", "handler", "scheduleId", "wait", "x", "__proto__"),
  fc.oneof(
    fc.constantFrom("1", "0", "100", "101", "-1", "1.5", "abc", "queued", "active", "10ms", "%ZZ"),
    fc.string({ maxLength: 30 }),
  ),
  { maxKeys: 4 },
);

/** Which credentials: the right key, a read-only key, none, or garbage. */
const auth = fc.oneof(
  { weight: 8, arbitrary: fc.constant("admin") },
  fc.constantFrom("reader", "none", "garbage", "x-api-key", "basic"),
);

const request = fc.record({
  target: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(TARGETS[0]!, TARGETS[4]!, TARGETS[7]!) },
    { weight: 3, arbitrary: fc.constantFrom(...TARGETS) },
  ),
  id: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom("{job}", "s1") },
    fc.constantFrom("{job}", "s1", "j_missing", "a%2Fb", "..", "%00", "x".repeat(300)),
    fc.string({ minLength: 1, maxLength: 20 }).map(encodeURIComponent),
  ),
  query,
  body,
  auth,
  extraHeader: fc.option(
    fc.record({
      name: fc.constantFrom("x-request-id", "content-encoding", "accept", "x-forwarded-for"),
      value: fc.string({ maxLength: 60 }).filter((v) => /^[\x20-\x7e]*$/.test(v)),
    }),
  ),
});

describe.each(storeFactories.filter((f) => f.name !== "upstash"))("fuzz on $name", (factory) => {
  let handle: StoreHandle;
  let h: Harness;
  let acme: TestTenant;
  let jobId: string;

  beforeAll(async () => {
    handle = await factory.make();
    acme = await tenant(
      "acme",
      { admin: ["admin"], reader: ["read"] },
      { quotas: { submit: { perMinute: 1_000 } }, maxInputBytes: 100 },
    );
    h = await securedApp(handle.store, [acme], { app: { bodyLimitBytes: 4_096 } });
    const job = await fetch(`${h.origin}/v1/jobs`, {
      method: "POST",
      headers: { ...bearer(acme.keys.admin!), "content-type": "application/json" },
      body: JSON.stringify({ handler: "echo", delay: "1h" }),
    });
    jobId = ((await job.json()) as { id: string }).id;
    await fetch(`${h.origin}/v1/schedules`, {
      method: "POST",
      headers: { ...bearer(acme.keys.admin!), "content-type": "application/json" },
      body: JSON.stringify({ id: "s1", handler: "echo", schedule: "1h" }),
    });
  });

  afterAll(async () => {
    await h.close();
    await handle.cleanup();
  });

  it("never answers 5xx, and a 4xx changes nothing", async () => {
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        const id = r.id === "{job}" ? jobId : r.id;
        const path = r.target.path.replace("{id}", id);
        const search = new URLSearchParams(r.query).toString();
        const headers = new Headers();
        if (r.auth === "admin") headers.set("authorization", `Bearer ${acme.keys.admin!.key}`);
        if (r.auth === "reader") headers.set("authorization", `Bearer ${acme.keys.reader!.key}`);
        if (r.auth === "garbage") headers.set("authorization", "Bearer tw_garbage");
        if (r.auth === "x-api-key") headers.set("x-api-key", acme.keys.admin!.key);
        if (r.auth === "basic") headers.set("authorization", "Basic YTpi");
        if (r.extraHeader) headers.set(r.extraHeader.name, r.extraHeader.value);
        const withBody = r.body !== undefined && r.target.method !== "GET";
        if (withBody && r.body!.type) headers.set("content-type", r.body!.type);
        const before = await storeState(h.store);
        const res = await fetch(`${h.origin}${path}${search ? `?${search}` : ""}`, {
          method: r.target.method,
          headers,
          ...(withBody ? { body: r.body!.text } : {}),
        });
        const text = await res.text();
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        expect(res.status, `${r.target.method} ${path}: ${text}`).toBeLessThan(500);
        expect(res.headers.get("x-request-id")).toBeTruthy();
        if (res.status >= 400) {
          expect(res.headers.get("content-type")).toBe("application/problem+json");
          const problem = JSON.parse(text) as { status: number; type: string };
          expect(problem.status).toBe(res.status);
          expect(problem.type).toMatch(/^urn:tickwork:problem:[a-z_]+$/);
          expect(await storeState(h.store), `${r.target.method} ${path} → ${res.status}`).toBe(
            before,
          );
        }
      }),
      {
        numRuns: Number(process.env.FUZZ_RUNS ?? 300),
        seed: Number(process.env.FUZZ_SEED ?? 20_261_126),
      },
    );
    // The fuzz reached past auth and validation as well as being refused by them.
    const statuses = [...seen.keys()];
    for (const status of [200, 202, 400, 401, 403, 404, 413, 415, 422]) {
      expect(statuses).toContain(status);
    }
  });
});
