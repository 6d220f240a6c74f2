/**
 * The Cloudflare Queues consumer's answer to a `RetryAfterError` whose time is not a finite,
 * non-negative number (a handler that parsed an absent `Retry-After`: `Number(undefined)` is NaN),
 * and to a `concurrency` option that is not a number (`Number(env.UNSET)`). Real Redis. A NaN wait
 * parked the message for 12 h; an infinite one was acked with the job's watch at `inf`, which the
 * reaper never reaches (the job stayed `failed` for good); a NaN concurrency started no lane, so
 * no message of the batch was answered and the runtime acked them all.
 */
import { Redis as IORedis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { RetryAfterError } from "../../src/core/errors.ts";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import {
  CloudflareQueuesTransport,
  consumeQueueBatch,
  type QueueSendRequest,
} from "../../src/transport/cloudflare-queues/index.ts";

const redis = new IORedis("redis://127.0.0.1:6379");
const PREFIX = `cfra${Math.random().toString(36).slice(2, 8)}`;
afterAll(async () => {
  const keys = await redis.keys(`{${PREFIX}}:*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

function setup(retryAfterMs: number) {
  const sent: string[] = [];
  const queue = {
    send: async () => {},
    sendBatch: async (messages: Iterable<QueueSendRequest>) => {
      for (const m of messages) sent.push(String(m.body));
    },
  };
  const engine = createEngine({
    store: new RedisStore({ client: fromIoredis(redis), prefix: PREFIX }),
    transport: new CloudflareQueuesTransport({ queue }),
    handlers: {
      upstream: {
        run: () => {
          throw new RetryAfterError("upstream said slow down", retryAfterMs);
        },
      },
    },
    logger: silentLogger,
  });
  return { engine, sent };
}

async function deliver(engine: ReturnType<typeof setup>["engine"], body: string) {
  const answers: string[] = [];
  await consumeQueueBatch(
    {
      queue: "tickwork",
      messages: [
        {
          id: "m1",
          body,
          attempts: 1,
          ack: () => answers.push("ack"),
          retry: (o) => answers.push(`retry ${o?.delaySeconds}s`),
        },
      ],
    },
    (b) => engine.runner.runPulled(b),
  );
  return answers;
}

describe("RetryAfterError extremes on Cloudflare Queues", () => {
  it("NaN: retried with the backoff (as on QStash, which ignores a NaN Retry-After), not parked 12 h", async () => {
    const { engine, sent } = setup(Number.NaN);
    const { job } = await engine.broker.submit({ handler: "upstream", input: 1 });
    const answers = await deliver(engine, sent[0]!);
    expect(answers).toEqual(["retry 1s"]);
    expect((await engine.store.getJob(job.id))?.status).toBe("failed");
  });

  it("Infinity: acked, and the job is still brought back by its watch (not stranded)", async () => {
    const { engine, sent } = setup(Number.POSITIVE_INFINITY);
    const { job } = await engine.broker.submit({ handler: "upstream", input: 1 });
    const answers = await deliver(engine, sent[0]!);
    const watch = await redis.zscore(`{${PREFIX}}:outbox`, job.id);
    expect(answers).toEqual(["ack"]);
    expect(watch).not.toBeNull();
    expect(Number.isFinite(Number(watch))).toBe(true);
  });
});

describe("consumeQueueBatch concurrency", () => {
  it("answers every message even when `concurrency` is NaN (e.g. Number(env.UNSET))", async () => {
    const answered: string[] = [];
    const result = await consumeQueueBatch(
      {
        queue: "q",
        messages: ["a", "b"].map((id) => ({
          id,
          body: "{}",
          attempts: 1,
          ack: () => answered.push(id),
          retry: () => answered.push(id),
        })),
      },
      async () => ({ kind: "done", id: "x", status: "succeeded" }),
      { concurrency: Number.NaN },
    );
    expect(answered.sort()).toEqual(["a", "b"]);
    expect(result.acked).toBe(2);
  });
});
