/**
 * Coalesced writes on a private redis-server (its `INFO stats` counts the reads Redis made, which
 * nobody else's commands move): the first command of an event-loop turn leaves at once and the
 * rest of the turn's in one write, every answer still goes to its own command in order, and a
 * connection lost with commands still corked loses none of them.
 */
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrivateRedis, startRedisServer } from "../../../test/support/redis-server.ts";
import { coalesceWrites } from "./coalesce.ts";
import { connectIoredis } from "./ioredis.ts";

let server: PrivateRedis;
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});

afterAll(async () => {
  admin.disconnect();
  await server?.stop();
});

/** The reads Redis has made of its clients' sockets (`INFO stats`). */
async function readsProcessed(): Promise<number> {
  const info = await admin.info("stats");
  const match = /^total_reads_processed:(\d+)/m.exec(info);
  if (!match) throw new Error(`no total_reads_processed in INFO stats:\n${info}`);
  return Number(match[1]);
}

/** Redis's reads while `work` runs, less the one that reads the closing `INFO`. */
async function readsDuring(work: () => Promise<unknown>): Promise<number> {
  const before = await readsProcessed();
  await work();
  return (await readsProcessed()) - before - 1;
}

describe("coalesceWrites", () => {
  it("sends the first command of a turn at once and the rest in one write, in order", async () => {
    const redis = coalesceWrites(new Redis(server.url));
    try {
      await redis.ping();
      const key = "coalesce:one-turn";
      let answers: unknown[] = [];
      const corkedAfter: number[] = [];
      const reads = await readsDuring(async () => {
        // 200 commands issued in one turn, as the submits of requests that arrived together.
        const pending: Promise<number>[] = [];
        for (let i = 0; i < 200; i++) {
          pending.push(redis.incr(key));
          if (i < 2) corkedAfter.push(redis.stream.writableCorked);
        }
        answers = await Promise.all(pending);
      });
      expect(answers).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      // The first written at once, the socket corked from the second on, uncorked after the turn.
      expect(corkedAfter).toEqual([0, 1]);
      expect(redis.stream.writableCorked).toBe(0);
      // The first alone, the other 199 together (one read when Redis reads after both arrived).
      expect(reads).toBeGreaterThanOrEqual(1);
      expect(reads).toBeLessThanOrEqual(2);
    } finally {
      redis.disconnect();
    }
  });

  it("sends commands of separate callbacks of one turn together", async () => {
    const redis = coalesceWrites(new Redis(server.url));
    try {
      await redis.ping();
      const key = "coalesce:callbacks";
      let answers: unknown[] = [];
      const reads = await readsDuring(async () => {
        // Each from its own callback, as each request's submit comes from its own socket's; a
        // flush after each callback (a microtask, `process.nextTick`) would write 20 times.
        answers = await Promise.all(
          Array.from(
            { length: 20 },
            () => new Promise((resolve) => setImmediate(() => resolve(redis.incr(key)))),
          ),
        );
      });
      expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(reads).toBeLessThanOrEqual(2);
    } finally {
      redis.disconnect();
    }
  });

  it("answers every command as one write per command would, over any interleaving of turns", async () => {
    const redis = coalesceWrites(new Redis(server.url));
    await redis.ping();
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("set" as const),
        key: fc.nat(3),
        value: fc.string({ maxLength: 8 }),
      }),
      fc.record({ kind: fc.constant("get" as const), key: fc.nat(3) }),
      fc.record({ kind: fc.constant("incr" as const), key: fc.nat(3) }),
      fc.record({ kind: fc.constant("del" as const), key: fc.nat(3) }),
    );
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          // Turns of commands; each turn issued at once, the next one a turn later, while
          // answers to the earlier ones may still be on their way.
          fc.array(fc.array(op, { maxLength: 12 }), { minLength: 1, maxLength: 8 }),
          async (turns) => {
            const prefix = `coalesce:p${run++}:`;
            const model = new Map<number, string>();
            const expected: unknown[] = [];
            const answers: Promise<unknown>[] = [];
            for (const turn of turns) {
              for (const o of turn) {
                const key = prefix + o.key;
                const current = model.get(o.key);
                if (o.kind === "set") {
                  model.set(o.key, o.value);
                  expected.push("OK");
                  answers.push(redis.set(key, o.value));
                } else if (o.kind === "get") {
                  expected.push(current ?? null);
                  answers.push(redis.get(key));
                } else if (o.kind === "del") {
                  model.delete(o.key);
                  expected.push(current === undefined ? 0 : 1);
                  answers.push(redis.del(key));
                } else if (current === undefined || /^-?(0|[1-9]\d{0,17})$/.test(current)) {
                  const next = Number(current ?? "0") + 1;
                  model.set(o.key, String(next));
                  expected.push(next);
                  answers.push(redis.incr(key));
                } else {
                  // Not an integer: Redis refuses INCR and leaves the value alone.
                  expected.push("refused");
                  answers.push(redis.incr(key).catch(() => "refused"));
                }
              }
              await new Promise((resolve) => setImmediate(resolve));
            }
            expect(await Promise.all(answers)).toEqual(expected);
          },
        ),
        { numRuns: 60 },
      );
    } finally {
      redis.disconnect();
    }
  });

  it("loses no command corked when the connection drops, and corks the new one", async () => {
    // As `tickwork start` connects: coalesced, reconnecting with backoff.
    const { redis, close } = await connectIoredis({
      url: server.url,
      purpose: "the coalesced-writes test",
      maxRetriesPerRequest: 5,
    });
    try {
      const key = "coalesce:dropped";
      const reconnected = new Promise<void>((resolve) => redis.once("ready", () => resolve()));
      // Issued in one turn, then the socket destroyed before the turn ends: the first command
      // has left, the 19 corked behind it never do. ioredis resends every command written but
      // not answered.
      const first = Array.from({ length: 20 }, () => redis.incr(key));
      redis.stream.destroy();
      await reconnected;
      const answers = await Promise.all(first);
      // The first may have run before the drop as well as when resent (as without corking);
      // each corked one runs once.
      const start = answers[0]!;
      expect([1, 2]).toContain(start);
      expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => start + i));
      const reads = await readsDuring(async () => {
        const more = await Promise.all(Array.from({ length: 20 }, () => redis.incr(key)));
        expect(more).toEqual(Array.from({ length: 20 }, (_, i) => start + 20 + i));
      });
      expect(reads).toBeLessThanOrEqual(2);
    } finally {
      await close();
    }
  });
});
