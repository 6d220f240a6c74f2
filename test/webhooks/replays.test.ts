/**
 * Replays and pre-claimed keys, over a real socket on the memory store and on Redis:
 *
 * - GitHub, Shopify and an `hmac` sender with `idHeader` sign neither their delivery id nor a
 *   timestamp (or, for `hmac`, only a timestamp): one captured delivery sent five times with
 *   fresh (or no) delivery ids is one job, run once — those endpoints dedupe on the body's digest;
 * - the `hook:` idempotency-key prefix is the server's: `POST /v1/jobs`, `POST /v1/flows` (its
 *   key, or a child's) and a handler's `ctx.jobs.submit`/`submitFlow` naming one are refused 400
 *   naming the field, with nothing stored; the genuine delivery of that event is then a new job,
 *   and its redelivery replays it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../../src/config/keys.ts";
import { TickworkError } from "../../src/core/errors.ts";
import type { Handlers } from "../../src/engine/index.ts";
import { call, expectProblem, type Harness, startHarness, until } from "../http/harness.ts";
import { makeRedisStore, type StoreHandle, storeFactories } from "../support/stores.ts";
import { footprint } from "./harness.ts";
import { githubSender, hmacSender, type Sender, shopifySender, stripeSender } from "./senders.ts";

const KEY = "key-acme-0123456789abcdef0123456789ab";

const factories = [
  storeFactories.find((f) => f.name === "memory")!,
  {
    name: "redis",
    make: async (): Promise<StoreHandle & { keys?: () => Promise<number> }> => {
      const handle = await makeRedisStore();
      const keys = async () =>
        (await handle.redis.keys(`{${handle.prefix}}:*`)).filter((k) => !k.endsWith("}:hooks"))
          .length;
      return { ...handle, keys };
    },
  },
];

/** What a handler's own submits answered: the status of each refusal, and its field. */
type Refusals = { status: number; path?: string }[];

describe.each(factories)("webhook replays and reserved keys on $name", (factory) => {
  const stripe = stripeSender();
  const unsigned = [githubSender(), shopifySender(), hmacSender()];
  const runs: unknown[] = [];
  let handle: StoreHandle & { keys?: () => Promise<number> };
  let h: Harness;

  const handlers: Handlers = {
    "hook.receive": {
      run: async (input: unknown) => {
        runs.push(input);
        return { ok: true };
      },
    },
    // Tries to claim a webhook's key from inside a job: every way is refused.
    "claim.keys": {
      run: async (input: unknown, ctx) => {
        const key = (input as { key: string }).key;
        const refusals: Refusals = [];
        const attempts = [
          () => ctx.jobs.submit({ handler: "hook.receive", idempotencyKey: key }),
          () =>
            ctx.jobs.submitFlow({
              children: [{ handler: "hook.receive" }],
              parent: { handler: "hook.receive" },
              idempotencyKey: key,
            }),
          () =>
            ctx.jobs.submitFlow({
              children: [{ handler: "hook.receive", idempotencyKey: key }],
              parent: { handler: "hook.receive" },
            }),
        ];
        for (const attempt of attempts) {
          try {
            await attempt();
            refusals.push({ status: 0 });
          } catch (error) {
            const e = error as TickworkError;
            refusals.push({
              status: e instanceof TickworkError ? e.status : -1,
              ...(e.errors?.[0] ? { path: e.errors[0].path } : {}),
            });
          }
        }
        return refusals;
      },
    },
  };

  beforeAll(async () => {
    handle = await factory.make();
    h = await startHarness({
      store: handle.store,
      handlers,
      app: {
        dev: false,
        tickSecret: false,
        tenants: [
          {
            id: "default",
            keys: [{ hash: await hashKey(KEY), scopes: ["read", "jobs:write"] }],
            webhooks: Object.fromEntries([
              ["stripe", { verifier: stripe.verifier, handler: "hook.receive" }],
              ...unsigned.map((s) => [s.scheme, { verifier: s.verifier, handler: "hook.receive" }]),
            ]),
          },
        ],
      },
    });
  });

  afterAll(async () => {
    await h?.close();
    await handle?.cleanup();
  });

  const deliver = async (s: Sender, name: string, body: string, id: string, drop?: string) => {
    const headers = await s.sign(body, id);
    if (drop) delete headers[drop];
    return call(h.origin, "POST", `/v1/hooks/${name}`, { body, headers });
  };
  const auth = { authorization: `Bearer ${KEY}` };

  for (const s of unsigned) {
    it(`${s.scheme}: one captured body sent 5 times with fresh delivery ids is one job, run once`, async () => {
      const original = `evt_${s.scheme}_${Math.random().toString(36).slice(2)}`;
      const body = s.body(original);
      const idHeader = { github: "x-github-delivery", shopify: "x-shopify-webhook-id" }[
        s.scheme as "github" | "shopify"
      ];
      const answers = [];
      for (let i = 0; i < 5; i++) {
        // New ids each time; the last one without its id header at all.
        answers.push(
          await deliver(s, s.scheme, body, `${original}-replay-${i}`, i === 4 ? idHeader : ""),
        );
      }
      for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(202);
      expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
      expect(answers.map((a) => a.headers.get("idempotent-replayed"))).toEqual([
        null,
        "true",
        "true",
        "true",
        "true",
      ]);
      const id = answers[0]!.body.id as string;
      await until(async () => (await h.engine.store.getJob(id))?.status === "succeeded");
      // The sender's id is still shown (the first delivery's).
      const job = await h.engine.store.getJob(id);
      expect(job?.input).toMatchObject({ event: { id: `${original}-replay-0` } });
      const ran = runs.filter((r) => JSON.stringify(r).includes(original));
      expect(ran).toHaveLength(1);
    });
  }

  it("POST /v1/jobs and /v1/flows may not name a hook: key: 400 naming the field, nothing stored", async () => {
    const eventId = `evt_future_${Math.random().toString(36).slice(2)}`;
    const key = `hook:stripe:${eventId}`;
    const before = await footprint(h.engine.store, handle.keys);
    const job = await call(h.origin, "POST", "/v1/jobs", {
      headers: auth,
      json: { handler: "hook.receive", idempotencyKey: key },
    });
    expectProblem(job, 400);
    expect(job.body.errors).toEqual([{ path: "idempotencyKey", message: expect.any(String) }]);
    const flow = await call(h.origin, "POST", "/v1/flows", {
      headers: auth,
      json: {
        children: [{ handler: "hook.receive" }],
        parent: { handler: "hook.receive" },
        idempotencyKey: "hook:stripe",
      },
    });
    expectProblem(flow, 400);
    expect(flow.body.errors).toEqual([{ path: "idempotencyKey", message: expect.any(String) }]);
    const child = await call(h.origin, "POST", "/v1/flows", {
      headers: auth,
      json: {
        children: [{ handler: "hook.receive", idempotencyKey: key }],
        parent: { handler: "hook.receive" },
      },
    });
    expectProblem(child, 400);
    expect(child.body.errors).toEqual([
      { path: "children.0.idempotencyKey", message: expect.any(String) },
    ]);
    expect(await footprint(h.engine.store, handle.keys)).toEqual(before);
    // The genuine delivery is a new job, and its redelivery replays it.
    const body = stripe.body(eventId);
    const first = await deliver(stripe, "stripe", body, eventId);
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const again = await deliver(stripe, "stripe", body, eventId);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    expect((await h.engine.store.getJob(first.body.id))?.idempotencyKey).toBe(key);
    await until(async () => (await h.engine.store.getJob(first.body.id))?.status === "succeeded");
    // A redelivery answers the job's id only: whoever resends a captured delivery does not read
    // how the job ended.
    const late = await deliver(stripe, "stripe", body, eventId);
    expect(late.headers.get("idempotent-replayed")).toBe("true");
    expect(late.body).toEqual({ id: first.body.id });
  });

  it("a handler's ctx.jobs.submit and submitFlow may not name a hook: key either", async () => {
    const key = `hook:stripe:evt_inside_${Math.random().toString(36).slice(2)}`;
    const answer = await call(h.origin, "POST", "/v1/jobs", {
      headers: auth,
      json: { handler: "claim.keys", input: { key } },
    });
    expect(answer.status).toBe(202);
    await until(async () => (await h.engine.store.getJob(answer.body.id))?.status === "succeeded");
    const job = await h.engine.store.getJob(answer.body.id);
    expect(job?.result).toEqual([
      { status: 400, path: "idempotencyKey" },
      { status: 400, path: "idempotencyKey" },
      { status: 400, path: "children.0.idempotencyKey" },
    ]);
    const jobs = await h.engine.store.listJobs({ tenant: "default", limit: 100 });
    expect(
      jobs.items.filter((j) => j.idempotencyKey?.startsWith("hook:stripe:evt_inside")),
    ).toEqual([]);
  });
});
