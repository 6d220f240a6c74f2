/**
 * A command whose reply was lost is sent again when ioredis reconnects (and `@upstash/redis`
 * retries a request that failed): the store's script runs twice with the same arguments
 * (docs/adr/0032-scripts-run-twice.md). Whatever the second run answers, it must change nothing
 * the first did not: no job reset, no second attempt, no second delivery, nothing counted twice.
 *
 * A differential on a real Redis: random operations (submit, begin with a delivery token, finish,
 * cancel, dead-letter, DLQ retry and delete) run twice each on one store and once on another,
 * and after every operation the two must hold the same jobs, backlog, outbox, stream and
 * totals (times masked: the stores run a few milliseconds apart). In both dispatch modes.
 */
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { NewJob } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { deletePrefixes } from "../redis-rest/harness.ts";
import { specOf } from "../support/job-spec.ts";
import { maskTimes } from "../support/masked.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
afterAll(async () => {
  await deletePrefixes(prefixes);
  redis.disconnect();
});

type Dispatch = "outbox" | "streams";

function makeStore(dispatch: Dispatch) {
  const prefix = `resent-ops-${randomUUID()}`;
  prefixes.push(prefix);
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch });
  return { store, k: keys(prefix) };
}

type Op =
  | { op: "submit"; delayed: boolean; idem: string | null }
  | { op: "begin"; k: number; leaseMs: 1 | 60_000 }
  | { op: "finish"; k: number; outcome: "ok" | "fail" | "final" }
  | { op: "cancel" | "retryDead" | "deleteDead"; k: number }
  | { op: "dead"; k: number };

const k = fc.nat(10);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    arbitrary: fc.record({
      op: fc.constant("submit" as const),
      delayed: fc.boolean(),
      idem: fc.option(fc.constantFrom("a", "b"), { freq: 3 }),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constant("begin" as const),
      k,
      leaseMs: fc.constantFrom(1, 60_000),
    }),
    weight: 4,
  },
  {
    arbitrary: fc.record({
      op: fc.constant("finish" as const),
      k,
      outcome: fc.constantFrom("ok", "fail", "final"),
    }),
    weight: 4,
  },
  fc.record({ op: fc.constantFrom("cancel", "retryDead", "deleteDead"), k }),
  fc.record({ op: fc.constant("dead" as const), k }),
);

const TIME_KEYS = new Set(
  "createdAt runAt startedAt finishedAt notBefore recoverAt leaseUntil retryAfterMs".split(" "),
);

const masked = (value: unknown) => maskTimes(value, TIME_KEYS);

const ERR = { name: "Error", message: "boom" };

/** One operation's command, to be sent once or twice; `undefined` when there is nothing to send. */
async function command(
  store: Store,
  op: Op,
  id: string | undefined,
  job: NewJob,
  token: { id: string; expiresAt: number },
): Promise<(() => Promise<unknown>) | undefined> {
  if (op.op === "submit") {
    const timing = op.delayed
      ? { delayMs: 60_000, recoverGraceMs: 1_000 }
      : { delayMs: 0, recoverGraceMs: 1_000 };
    return () => store.submitJob(structuredClone(job), timing);
  }
  const record = id ? await store.getJob(id) : null;
  if (!id || !record) return undefined;
  const spec = specOf(record);
  switch (op.op) {
    case "begin":
      return () => store.beginRun(spec, op.leaseMs, 60_000, token);
    case "finish": {
      const outcome =
        op.outcome === "ok"
          ? { ok: true as const, result: { done: id } }
          : { ok: false as const, error: ERR, final: op.outcome === "final" };
      return () => store.finishRun(id, record.attempts, outcome, 60_000);
    }
    case "cancel":
      return () => store.cancelJob(id);
    case "dead":
      return () => store.markDead(spec, ERR, { attempts: record.attempts }, token);
    case "retryDead":
      return () => store.retryDead(id, { recoverGraceMs: 1_000 });
    case "deleteDead":
      return () => store.deleteDead(id);
  }
}

/** What a run could change, with ids (the same in both stores) and times masked. */
async function state(s: ReturnType<typeof makeStore>, ids: string[]) {
  const { store, k: key } = s;
  const jobs = [];
  for (const id of ids) jobs.push(await store.getJob(id));
  const { jobs: gauges, totals, backlog } = await store.stats();
  const stream = `${key.root}:q`;
  return masked({
    jobs,
    gauges,
    totals,
    backlog,
    // Members sorted: a zset orders by score, a time, so two stores a few milliseconds apart may
    // tie (and order by member) where the other did not.
    pending: (await redis.zrange(`${key.root}:pending`, 0, -1)).sort(),
    outbox: (await redis.zrange(key.outbox, 0, -1)).sort(),
    // Deliveries (`j` the spec, `r` its retries) and wake-ups (`w` a time).
    stream: (await redis.xrange(stream, "-", "+")).map(([, fields]) =>
      fields.map((v, i) =>
        fields[i - 1] === "j" ? JSON.parse(v) : fields[i - 1] === "w" ? "<time>" : v,
      ),
    ),
    delayed: (await redis.zrange(`${stream}:delayed`, 0, -1)).sort(),
  });
}

/** Waits until the store's clock has passed `end`: a 1 ms lease lapses for both stores alike. */
async function pastOnStoreClock(store: Store, end: number) {
  for (let i = 0; (await store.now()) <= end; i++) expect(i).toBeLessThan(10_000);
}

describe.each(["outbox", "streams"] as const)(
  "%s mode: every command sent twice changes what it changes once",
  (dispatch) => {
    it("random operations, each run twice on one store and once on another: same state after each", async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 4, maxLength: 25 }), async (rest) => {
          const ops: Op[] = [{ op: "submit", delayed: false, idem: null }, ...rest];
          const twice = makeStore(dispatch);
          const once = makeStore(dispatch);
          const ids: string[] = [];
          let n = 0;
          for (const op of ops) {
            const id = "k" in op ? ids[op.k % Math.max(1, ids.length)] : undefined;
            n += 1;
            const job: NewJob = {
              id: `j_${randomUUID().replaceAll("-", "").slice(0, 20)}`,
              tenant: "default",
              handler: "email.send",
              input: { n },
              priority: 5,
              timeoutMs: 30_000,
              retries: 1,
              tags: [],
              ...(op.op === "submit" && op.idem ? { idempotencyKey: op.idem } : {}),
            };
            const token = { id: `jwt_${randomUUID()}`, expiresAt: Date.now() + 300_000 };
            const sendTwice = await command(twice.store, op, id, job, token);
            const sendOnce = await command(once.store, op, id, job, token);
            expect(sendTwice === undefined).toBe(sendOnce === undefined);
            if (!sendTwice || !sendOnce) continue;
            const first = await sendTwice().catch((error: unknown) => error);
            // The second run's answer may differ (a cancel already done answers 409); its writes
            // may not.
            await sendTwice().catch(() => undefined);
            const only = await sendOnce().catch((error: unknown) => error);
            expect(masked(first)).toEqual(masked(only));
            if (op.op === "submit" && first && typeof first === "object" && "job" in first) {
              const stored = (first as { job: { id: string } }).job.id;
              if (!ids.includes(stored)) ids.push(stored);
            }
            if (op.op === "begin" && op.leaseMs === 1) {
              for (const s of [twice, once]) {
                const record = await s.store.getJob(id!);
                if (record?.startedAt) await pastOnStoreClock(s.store, record.startedAt + 1);
              }
            }
            expect(await state(twice, ids)).toEqual(await state(once, ids));
          }
        }),
        { numRuns: 25 },
      );
    });
  },
);
