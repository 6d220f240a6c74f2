/**
 * `POST /v1/jobs/batch` over real HTTP (docs/api.md, "Batch submit"): one outcome per job, in
 * order, each judged as `POST /v1/jobs` judges a job (schema, handler input, scope, tenant,
 * manifest, placement, dependencies, idempotency); hostile requests answered with one problem and
 * nothing written; the client's `jobs.submitMany`.
 */
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createClient, type SubmitManyOutcome } from "../../src/client/index.ts";
import { MAX_BATCH_JOBS } from "../../src/core/batch.ts";
import type { Actor, Handlers } from "../../src/engine/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import {
  type Answer,
  call,
  expectProblem,
  type Harness,
  snapshot,
  startHarness,
  until,
} from "./harness.ts";

const redis = new Redis("redis://127.0.0.1:6379");
afterAll(() => redis.disconnect());

const handlers: Handlers = {
  echo: { run: (input) => input },
  "email.send": { input: z.object({ to: z.string() }), run: () => "sent" },
};

/** Acts as the JSON of the `x-test-actor` header (no header: everything allowed). */
function authorize(c: { req: { header(name: string): string | undefined } }): Actor {
  const header = c.req.header("x-test-actor");
  return header ? (JSON.parse(header) as Actor) : { tenant: "default" };
}

let h: Harness | undefined;
const prefixes: string[] = [];
afterEach(async () => {
  await h?.close();
  h = undefined;
});
afterAll(async () => {
  for (const prefix of prefixes) {
    const keys = await redis.keys(`{${prefix}}:*`);
    if (keys.length > 0) await redis.del(...keys);
  }
});

async function start(store: Store = new MemoryStore()): Promise<Harness> {
  h = await startHarness({
    store,
    handlers,
    app: { authorize },
  });
  return h;
}

function redisStore(): Store {
  const prefix = `batch-http-${Math.random().toString(36).slice(2, 10)}`;
  prefixes.push(prefix);
  return new RedisStore({ client: fromIoredis(redis), prefix });
}

const batch = (origin: string, json: unknown, headers: Record<string, string> = {}) =>
  call(origin, "POST", "/v1/jobs/batch", { json, headers });

/** Each item's outcome, failed ones as `<index>:<status>:<problem code>`. */
function outcomes(answer: Answer): string[] {
  return answer.body.items.map(
    (item: { outcome: string; status: number; problem?: { type: string } }, i: number) =>
      item.outcome === "failed"
        ? `${i}:${item.status}:${item.problem!.type.replace("urn:tickwork:problem:", "")}`
        : item.outcome,
  );
}

describe("POST /v1/jobs/batch", () => {
  it.each([
    ["memory", () => new MemoryStore()],
    ["redis", redisStore],
  ])(
    "%s: 1,000 jobs with 3 bad ones answer 200: 997 accepted, 3 item 422s; sent again, 997 replays",
    async (_name, make) => {
      const { origin, store } = await start(make());
      const run = Math.random().toString(36).slice(2, 8);
      const jobs = Array.from({ length: MAX_BATCH_JOBS }, (_, i) => ({
        handler: "email.send",
        input: i === 3 || i === 404 || i === 998 ? { to: i } : { to: `u${i}@example.com` },
        idempotencyKey: `${run}-${i}`,
      }));
      const first = await batch(origin, { jobs });
      expect(first.status).toBe(200);
      expect(first.headers.get("content-type")).toMatch(/^application\/json/);
      expect(first.body).toMatchObject({ accepted: 997, replayed: 0, failed: 3 });
      const seen = outcomes(first);
      expect(seen.filter((o) => o !== "accepted")).toEqual([
        "3:422:invalid_input",
        "404:422:invalid_input",
        "998:422:invalid_input",
      ]);
      const bad = first.body.items[404];
      expect(bad.problem).toMatchObject({
        status: 422,
        title: "Unprocessable Content",
        detail: expect.stringContaining("email.send"),
        errors: [{ path: "input.to", message: expect.any(String) }],
      });
      const ok = first.body.items[0];
      expect(ok).toEqual({
        outcome: "accepted",
        status: 202,
        job: {
          id: expect.stringMatching(/^j_/),
          handler: "email.send",
          status: "queued",
          runAt: expect.any(String),
          priority: expect.any(Number),
          attempts: 0,
          createdAt: expect.any(String),
        },
      });
      // Each accepted job is the one GET /v1/jobs/:id shows.
      const got = await call(origin, "GET", `/v1/jobs/${ok.job.id}`);
      expect(got.body).toMatchObject({ id: ok.job.id, input: { to: "u0@example.com" } });
      expect((await store.stats()).totals.submitted).toBe(997);

      const again = await batch(origin, { jobs });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ accepted: 0, replayed: 997, failed: 3 });
      expect(again.body.items[0]).toMatchObject({
        outcome: "replayed",
        status: 200,
        job: { id: ok.job.id, handler: "email.send", createdAt: ok.job.createdAt },
      });
      expect((await store.stats()).totals.submitted).toBe(997);
    },
  );

  it("a key repeated within one batch: the first job is stored, the later ones replay it", async () => {
    const { origin, store } = await start();
    const answer = await batch(origin, {
      jobs: [
        { handler: "echo", idempotencyKey: "same" },
        { handler: "echo", input: 2 },
        { handler: "echo", idempotencyKey: "same", input: "different" },
      ],
    });
    expect(outcomes(answer)).toEqual(["accepted", "accepted", "replayed"]);
    expect(answer.body.items[2].job.id).toBe(answer.body.items[0].job.id);
    expect((await store.stats()).totals.submitted).toBe(2);
  });

  it("judges every item on its own: schema, handler, placement, dependencies, scope of the manifest", async () => {
    const { origin, store } = await start();
    const dep = await call(origin, "POST", "/v1/jobs", { json: { handler: "echo" } });
    const actor: Actor = {
      tenant: "default",
      scopes: ["jobs:write", "read"],
      manifest: { submit: ["echo"], maxTimeoutMs: 60_000 },
    };
    const answer = await batch(
      origin,
      {
        jobs: [
          null,
          42,
          [],
          { handler: "echo", after: [dep.body.id] },
          { handler: "nope" },
          { handler: "email.send", input: { to: "a@b.c" } },
          { handler: "echo", timeout: 120_000 },
          { handler: "echo", after: ["j_00000000000000000000x"] },
          { handler: "echo", placement: { tags: "not-a-list" } },
          { handler: "echo", idempotencyKey: "hook:taken" },
          { handler: "echo", priority: 5 },
        ],
      },
      { "x-test-actor": JSON.stringify(actor) },
    );
    expect(answer.status).toBe(200);
    expect(outcomes(answer)).toEqual([
      "0:400:invalid_request",
      "1:400:invalid_request",
      "2:400:invalid_request",
      "accepted",
      "4:403:handler_not_permitted",
      "5:403:handler_not_permitted",
      "6:422:timeout_not_permitted",
      "7:422:unknown_dependencies",
      "8:400:invalid_request",
      "9:400:invalid_request",
      "accepted",
    ]);
    expect(answer.body.items[3].job.status).toBe("waiting");
    const listed = await call(origin, "GET", "/v1/jobs?limit=100");
    expect(listed.body.items).toHaveLength(3);
    expect((await store.stats()).totals.submitted).toBe(3);
  });

  it("needs the jobs:write scope and stores jobs under the actor's tenant", async () => {
    const { origin } = await start();
    const reader = { tenant: "acme", scopes: ["read"] };
    const refused = await batch(
      origin,
      { jobs: [{ handler: "echo" }] },
      { "x-test-actor": JSON.stringify(reader) },
    );
    expectProblem(refused, 403);
    const writer = { tenant: "acme", scopes: ["read", "jobs:write"] };
    const answer = await batch(
      origin,
      { jobs: [{ handler: "echo" }] },
      { "x-test-actor": JSON.stringify(writer) },
    );
    const id = answer.body.items[0].job.id;
    const own = await call(origin, "GET", `/v1/jobs/${id}`, {
      headers: { "x-test-actor": JSON.stringify(writer) },
    });
    expect(own.status).toBe(200);
    const other = await call(origin, "GET", `/v1/jobs/${id}`, {
      headers: { "x-test-actor": JSON.stringify({ tenant: "globex", scopes: ["read"] }) },
    });
    expectProblem(other, 404);
  });

  it.each([
    ["memory", () => new MemoryStore()],
    ["redis", redisStore],
  ])(
    "%s: after naming another tenant's job is that item's 422, as an unknown id; nothing written for it",
    async (_name, make) => {
      const { origin, store } = await start(make());
      const as = (tenant: string) => ({
        "x-test-actor": JSON.stringify({ tenant, scopes: ["jobs:write", "read"] }),
      });
      const theirs = await call(origin, "POST", "/v1/jobs", {
        json: { handler: "echo", input: "secret" },
        headers: as("globex"),
      });
      expect(theirs.status).toBe(202);
      const unknown = "j_00000000000000000000x";
      const answer = await batch(
        origin,
        {
          jobs: [
            { handler: "echo", after: [theirs.body.id] },
            { handler: "echo", after: [unknown] },
          ],
        },
        as("acme"),
      );
      expect(outcomes(answer)).toEqual([
        "0:422:unknown_dependencies",
        "1:422:unknown_dependencies",
      ]);
      // The same answer as for an id that names no job: nothing tells the other tenant's job exists.
      const [other, none] = answer.body.items.map(
        (i: { problem: { detail: string } }) => i.problem,
      );
      expect(other.detail.replace(theirs.body.id, unknown)).toBe(none.detail);
      expect(JSON.stringify(answer.body)).not.toContain("secret");
      expect((await store.stats()).totals.submitted).toBe(1);
    },
  );

  it("a quota admits up to its limit; the rest get item 429s, and RateLimit headers say where it stands", async () => {
    const { origin, store } = await start();
    const actor = {
      tenant: "metered",
      scopes: ["jobs:write"],
      manifest: { quotas: { submit: { perMinute: 5 } } },
    };
    const headers = { "x-test-actor": JSON.stringify(actor) };
    const answer = await batch(
      origin,
      { jobs: Array.from({ length: 8 }, () => ({ handler: "echo" })) },
      headers,
    );
    expect(outcomes(answer)).toEqual([
      ...Array(5).fill("accepted"),
      "5:429:quota_exceeded",
      "6:429:quota_exceeded",
      "7:429:quota_exceeded",
    ]);
    expect(answer.headers.get("ratelimit-limit")).toBe("5");
    expect(answer.headers.get("ratelimit-remaining")).toBe("0");
    expect((await store.stats()).totals.submitted).toBe(5);
    // Spent: the next batch is all 429s, and nothing is written.
    const next = await batch(origin, { jobs: [{ handler: "echo" }] }, headers);
    expect(outcomes(next)).toEqual(["0:429:quota_exceeded"]);
    expect(next.headers.get("ratelimit-remaining")).toBe("0");
    expect(Number(next.headers.get("ratelimit-reset"))).toBeGreaterThan(0);
    expect((await store.stats()).totals.submitted).toBe(5);
    // The client says when the refused items may go again; with no quota, it says nothing.
    const tw = createClient({ url: origin, headers });
    const refused = await tw.jobs.submitMany([{ handler: "echo" }]);
    expect(refused.failed).toBe(1);
    expect(refused.rateLimit).toMatchObject({ limit: 5, remaining: 0 });
    expect(refused.rateLimit?.resetSeconds).toBeGreaterThan(0);
    expect(refused.rateLimit?.resetSeconds).toBeLessThanOrEqual(60);
    const free = await createClient({ url: origin }).jobs.submitMany([{ handler: "echo" }]);
    expect(free.accepted).toBe(1);
    expect(free.rateLimit).toBeUndefined();
  });

  it("a single submit's handle tells where the quota stands", async () => {
    const { origin } = await start();
    const actor = {
      tenant: "metered",
      scopes: ["jobs:write"],
      manifest: { quotas: { submit: { perMinute: 5 } } },
    };
    const tw = createClient({ url: origin, headers: { "x-test-actor": JSON.stringify(actor) } });
    const first = await tw.jobs.submit({ handler: "echo" });
    expect(first.rateLimit).toMatchObject({ limit: 5, remaining: 4 });
    const second = await tw.jobs.submit({ handler: "echo" });
    expect(second.rateLimit).toMatchObject({ limit: 5, remaining: 3 });
    expect((await createClient({ url: origin }).jobs.submit({ handler: "echo" })).rateLimit).toBe(
      undefined,
    );
  });

  describe("hostile requests: one problem, nothing written", () => {
    it.each([
      ["a body that is an array", [{ handler: "echo" }], 400],
      ["jobs that is not an array", { jobs: { 0: { handler: "echo" } } }, 400],
      ["jobs that is a string", { jobs: "echo" }, 400],
      ["no jobs", {}, 400],
      ["null", null, 400],
      ["an empty batch", { jobs: [] }, 400],
      ["a key besides jobs (a misspelt option)", { jobs: [{ handler: "echo" }], priorty: 9 }, 400],
      [
        `${MAX_BATCH_JOBS + 1} jobs`,
        { jobs: Array.from({ length: MAX_BATCH_JOBS + 1 }, () => ({ handler: "echo" })) },
        413,
      ],
    ])("%s", async (_name, json, status) => {
      const { origin, store } = await start();
      const before = await snapshot(store);
      expectProblem(await batch(origin, json), status);
      expect(await snapshot(store)).toBe(before);
    });

    it("hostile values in items: each that item's 4xx, nothing written for it, the rest stored", async () => {
      const { origin, store } = await start();
      // Raw JSON: lone surrogates as escapes, numbers JSON.stringify would not write.
      const body = `{"jobs":[
        {"handler":"echo","runAt":1e300},
        {"handler":"echo","runAt":"+275761-01-01T00:00:00.000Z"},
        {"handler":"echo","delay":1e300},
        {"handler":"echo","priority":1e300},
        {"handler":"echo","timeout":-1e300},
        {"handler":"echo","idempotencyKey":"\\ud800"},
        {"handler":"ec\\udfffho"},
        {"handler":"echo","tags":["\\ud800"]},
        {"handler":"echo","after":["j_x:idem:7:default:k"]},
        {"handler":"echo","input":1e300}
      ]}`;
      const answer = await call(origin, "POST", "/v1/jobs/batch", {
        body,
        headers: { "content-type": "application/json" },
      });
      expect(answer.status).toBe(200);
      expect(outcomes(answer)).toEqual([
        "0:422:out_of_range",
        // A date that exists past JavaScript's: out of range, as the same instant in ms.
        "1:422:out_of_range",
        "2:422:out_of_range",
        ...[3, 4, 5, 6, 7, 8].map((i) => `${i}:400:invalid_request`),
        "accepted",
      ]);
      expect((await store.stats()).totals.submitted).toBe(1);
    });

    it("a reserved key (__proto__, constructor) anywhere, even in one item", async () => {
      const { origin, store } = await start();
      const before = await snapshot(store);
      const body = `{"jobs":[{"handler":"echo"},{"handler":"echo","input":{"__proto__":{"admin":true}}}]}`;
      const answer = await call(origin, "POST", "/v1/jobs/batch", {
        body,
        headers: { "content-type": "application/json" },
      });
      expectProblem(answer, 400, /reserved key/);
      const ctor = await batch(origin, { jobs: [{ handler: "echo", constructor: 1 }] });
      expectProblem(ctor, 400);
      expect(await snapshot(store)).toBe(before);
    });

    it("not JSON, the wrong media type, or over the body limit", async () => {
      const { origin, store } = await start();
      const before = await snapshot(store);
      const text = await call(origin, "POST", "/v1/jobs/batch", {
        body: "jobs",
        headers: { "content-type": "text/plain" },
      });
      expectProblem(text, 415);
      const broken = await call(origin, "POST", "/v1/jobs/batch", {
        body: '{"jobs":[',
        headers: { "content-type": "application/json" },
      });
      expectProblem(broken, 400);
      const big = "x".repeat(9 * 1024 * 1024);
      const huge = await batch(origin, { jobs: [{ handler: "echo", input: big }] });
      expectProblem(huge, 413);
      expect(await snapshot(store)).toBe(before);
    });
  });
});

describe("client.jobs.submitMany", () => {
  it("answers one outcome per job with a handle for each stored one", async () => {
    const { origin } = await start();
    const tw = createClient({ url: origin });
    const { items, accepted, replayed, failed } = await tw.jobs.submitMany([
      { handler: "echo", input: { n: 1 }, idempotencyKey: "c1" },
      { handler: "nope" },
      { handler: "echo", input: { n: 1 }, idempotencyKey: "c1" },
    ]);
    expect({ accepted, replayed, failed }).toEqual({ accepted: 1, replayed: 1, failed: 1 });
    const [first, bad, again] = items as [SubmitManyOutcome, SubmitManyOutcome, SubmitManyOutcome];
    if (first.outcome !== "accepted" || again.outcome !== "replayed" || bad.outcome !== "failed")
      throw new Error(`unexpected outcomes: ${JSON.stringify(items)}`);
    expect(again.job.id).toBe(first.job.id);
    expect(again.job.replayed).toBe(true);
    expect(bad.problem).toMatchObject({
      status: 422,
      type: "urn:tickwork:problem:unknown_handler",
    });
    // The handle works: the job runs (local transport) and its result comes back.
    expect(await first.job.result({ timeout: "10s" })).toEqual({ n: 1 });
    await until(async () => (await tw.jobs.get(first.job.id)).status === "succeeded");
  });
});
