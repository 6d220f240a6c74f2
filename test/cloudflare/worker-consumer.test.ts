/**
 * `createWorker({ consumer })`: the Worker's `queue()` handler runs with the consumer settings
 * given (here a busy floor), as `createTickwork` does with its own; before, `createWorker` had no
 * way to pass them and always used the defaults. Real Redis behind the Upstash REST bridge; the
 * queue binding is a double of Queues' producer, and `queue()` gets a batch shaped as the
 * runtime's.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createWorker } from "../../src/adapter/cloudflare/index.ts";
import type { QueueSendRequest } from "../../src/transport/cloudflare-queues/index.ts";
import { BRIDGE_TOKEN, deletePrefix, freshPrefix, sharedBridge } from "../redis-rest/harness.ts";

const PREFIX = freshPrefix("cfw");
afterAll(() => deletePrefix(PREFIX));

describe("createWorker's bindings", () => {
  it("an UPSTASH_REDIS_REST_URL the client refuses is a TickworkConfigError naming it", () => {
    const worker = createWorker({ handlers: { one: { run: () => 1 } } });
    const env = {
      UPSTASH_REDIS_REST_URL: "redis://127.0.0.1:6379",
      UPSTASH_REDIS_REST_TOKEN: "t",
      TICKWORK_API_KEY: "k",
      CRON_SECRET: "c",
      TICKWORK_QUEUE: { send: async () => {}, sendBatch: async () => {} },
    };
    const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
    expect(() => worker.fetch(new Request("http://w/v1/jobs"), env as never, ctx as never)).toThrow(
      expect.objectContaining({
        name: "TickworkConfigError",
        variable: "UPSTASH_REDIS_REST_URL",
      }),
    );
  });
});

describe("createWorker's bindings, malformed or of the wrong type", () => {
  const QSTASH = {
    UPSTASH_REDIS_REST_URL: "https://eu1-example.upstash.io",
    UPSTASH_REDIS_REST_TOKEN: "t",
    QSTASH_TOKEN: "q",
    QSTASH_CURRENT_SIGNING_KEY: "c",
    QSTASH_NEXT_SIGNING_KEY: "n",
    TICKWORK_PUBLIC_URL: "https://w.workers.dev",
    TICKWORK_API_KEY: "k",
    CRON_SECRET: "cron-secret",
  };
  const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };

  it.each([
    ["QSTASH_URL", "qstash eu1"],
    ["QSTASH_URL", "AXyzTOKENvalueSECRET"],
    ["QSTASH_URL", 1],
    ["TICKWORK_BASE_PATH", 7],
  ])("%s = %j is a TickworkConfigError naming it, without its value", (name, value) => {
    const worker = createWorker({ handlers: { one: { run: () => 1 } } });
    let thrown: unknown;
    try {
      worker.fetch(
        new Request("http://w/health"),
        { ...QSTASH, [name]: value } as never,
        ctx as never,
      );
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ name: "TickworkConfigError", variable: name });
    expect((thrown as Error).message).not.toContain(String(value));
  });

  it("a CRON_SECRET stored with its line break still accepts the cron's bearer", async () => {
    const worker = createWorker({ handlers: { one: { run: () => 1 } } });
    const env = {
      ...QSTASH,
      UPSTASH_REDIS_REST_URL: (await sharedBridge()).url,
      UPSTASH_REDIS_REST_TOKEN: BRIDGE_TOKEN,
      TICKWORK_PREFIX: PREFIX,
      CRON_SECRET: "cron-secret\n",
    };
    const tick = new Request("https://w.workers.dev/v1/tick", {
      method: "POST",
      headers: { authorization: "Bearer cron-secret" },
    });
    const res = await worker.fetch(tick, env as never, ctx as never);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ leader: true });
  });
});

describe("createWorker's consumer settings", () => {
  it("a busy floor given to createWorker is the one its queue() uses", async () => {
    const sent: string[] = [];
    const env = {
      UPSTASH_REDIS_REST_URL: (await sharedBridge()).url,
      UPSTASH_REDIS_REST_TOKEN: BRIDGE_TOKEN,
      TICKWORK_API_KEY: "k",
      CRON_SECRET: "c",
      TICKWORK_PREFIX: PREFIX,
      TICKWORK_QUEUE: {
        send: async () => {},
        sendBatch: async (messages: Iterable<QueueSendRequest>) => {
          for (const m of messages) sent.push(String(m.body));
        },
      },
    };
    const ctx = { waitUntil: () => {}, passThroughOnException: () => {}, props: {} };
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let running: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      running = resolve;
    });
    const worker = createWorker({
      handlers: {
        one: {
          concurrency: 1,
          run: () => {
            running();
            return held;
          },
        },
      },
      consumer: { busyFloor: () => 42_000 },
    });
    for (const n of [1, 2]) {
      const res = await worker.fetch(
        new Request("http://w/v1/jobs", {
          method: "POST",
          headers: { authorization: "Bearer k", "content-type": "application/json" },
          body: JSON.stringify({ handler: "one", input: { n } }),
        }),
        env as never,
        ctx as never,
      );
      expect(res.status).toBe(202);
    }
    await new Promise<void>((resolve, reject) => {
      const check = () => (sent.length >= 2 ? resolve() : setTimeout(check, 10));
      setTimeout(() => reject(new Error("nothing published")), 10_000).unref();
      check();
    });
    const answers: string[] = [];
    const message = (body: string, id: string) => ({
      id,
      body,
      attempts: 1,
      timestamp: new Date(),
      ack: () => answers.push(`${id} ack`),
      retry: (o?: { delaySeconds?: number }) => answers.push(`${id} retry ${o?.delaySeconds}`),
    });
    // The first holds the one slot; the second is limited and sent back after the floor, 42 s.
    const first = worker.queue(
      { queue: "tickwork-jobs", messages: [message(sent[0]!, "m1")] } as never,
      env as never,
      ctx as never,
    );
    await started;
    await worker.queue(
      { queue: "tickwork-jobs", messages: [message(sent[1]!, "m2")] } as never,
      env as never,
      ctx as never,
    );
    release();
    await first;
    expect(answers.sort()).toEqual(["m1 ack", "m2 retry 42"]);
  });
});
