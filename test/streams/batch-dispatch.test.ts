/**
 * The Redis store's `submitJobs` (lua/submitMany-7.lua) against `submitJob` (lua/submitJob-7.lua),
 * in both dispatch modes: the same items, stored once as one batch and once one by one on a
 * second store, leave the same state behind — answers, job records, the outbox or the stream
 * (deliveries, delayed set and bodies), the pending backlog, counters, events and the quota —
 * times of creation aside. So a batch on Redis Streams XADDs in the script exactly as single
 * submits do, and a batch on a queue leaves exactly their outbox messages to publish.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { NewJob } from "../../src/core/model.ts";
import { unknownDependencies } from "../../src/store/port/deps.ts";
import type {
  Admission,
  Store,
  SubmitItem,
  SubmitItemResult,
  SubmitResult,
} from "../../src/store/port.ts";
import { fromIoredis, RedisStore, type ScriptClient } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) {
    const found = await redis.keys(`{${prefix}}:*`);
    if (found.length > 0) await redis.del(...found);
  }
  redis.disconnect();
});

function makeStore(dispatch: "outbox" | "streams") {
  const prefix = `bd-${randomUUID()}`;
  prefixes.push(prefix);
  return { store: new RedisStore({ client: fromIoredis(redis), prefix, dispatch }), prefix };
}

/** Everything a submit writes, with each store's prefix and creation times made comparable. */
async function state(prefix: string, store: Store, ids: string[]) {
  const k = keys(prefix);
  const stream = `${k.root}:q`;
  const [entries, delayed, bodies, outbox, messages, pending, metrics, events] = await Promise.all([
    redis.xrange(stream, "-", "+"),
    redis.zrange(`${stream}:delayed`, 0, -1, "WITHSCORES"),
    redis.hgetall(`${stream}:bodies`),
    redis.zrange(k.outbox, 0, -1, "WITHSCORES"),
    redis.hgetall(k.outboxMsg),
    redis.zrange(k.pending, 0, -1, "WITHSCORES"),
    redis.hgetall(k.metrics),
    store.events({ limit: 1_000 }),
  ]);
  const jobs = await Promise.all(ids.map((id) => store.getJob(id)));
  const text = JSON.stringify({
    entries: entries.map(([, fields]) => fields),
    delayed,
    bodies,
    outbox,
    messages,
    pending,
    metrics: Object.fromEntries(Object.entries(metrics).filter(([f]) => /^[tg]:/.test(f))),
    events: events.events.map(({ id: _id, at: _at, ...rest }) => rest),
    jobs,
  });
  return JSON.parse(text.replaceAll(/(\\?"createdAt\\?":)\d+/g, (_, key) => `${key}0`));
}

function job(n: number, overrides: Partial<NewJob> = {}): NewJob {
  return {
    id: `job-${String(n).padStart(4, "0")}`,
    tenant: "acme",
    handler: "email.send",
    input: { n, text: 'é \u2028 "q"' },
    priority: 5,
    timeoutMs: 30_000,
    retries: 3,
    tags: ["batch"],
    ...overrides,
  };
}

/** `items` through `submitJob`, one by one, answered as `submitJobs` answers them. */
async function oneByOne(
  store: Store,
  items: SubmitItem[],
  admission?: Admission,
): Promise<SubmitItemResult[]> {
  const out: SubmitItemResult[] = [];
  for (const { job, runAt, delayMs } of items) {
    const timing = { ...(runAt !== undefined ? { runAt } : {}), delayMs, recoverGraceMs: 5_000 };
    try {
      out.push(await store.submitJob(structuredClone(job), timing, admission));
    } catch (error) {
      const ids = (job.after ?? []).filter((id) => id.startsWith("nope"));
      expect(error).toEqual(unknownDependencies(ids));
      out.push({ unknown: ids });
    }
  }
  return out;
}

describe.each(["outbox", "streams"] as const)("submitJobs on dispatch %s", (dispatch) => {
  it("leaves what the same submits one by one leave, times of creation aside", async () => {
    const a = makeStore(dispatch);
    const b = makeStore(dispatch);
    const now = await a.store.now();
    const items: SubmitItem[] = [
      { job: job(1), runAt: now - 1_000, delayMs: 0 },
      { job: job(2, { idempotencyKey: "k" }), runAt: now + 60_000, delayMs: 0 },
      { job: job(3), runAt: now + 30_000, delayMs: 0 },
      { job: job(4, { idempotencyKey: "k" }), runAt: now, delayMs: 0 },
      { job: job(5, { after: ["job-0001"] }), runAt: now, delayMs: 0 },
      { job: job(6, { after: ["job-0001", "nope-1"] }), runAt: now, delayMs: 0 },
      // Due or delayed must not depend on when each script runs (the two stores run at different
      // times): every runAt is far from `now` (the earliest delayed one adds a wake entry).
      { job: job(7, { priority: 9, tags: [] }), runAt: now + 20_000, delayMs: 0 },
      { job: job(8, { idempotencyKey: "k2" }), runAt: now - 5, delayMs: 0 },
    ];
    const admission: Admission = {
      quota: { key: "acme:submit", windows: [{ windowMs: 60_000, limit: 5 }] },
    };
    const batch = await a.store.submitJobs!(
      structuredClone(items),
      { recoverGraceMs: 5_000 },
      admission,
    );
    const single = await oneByOne(b.store, items, admission);
    const mask = (results: SubmitItemResult[]) =>
      JSON.parse(JSON.stringify(results).replaceAll(/"(createdAt|resetMs)":\d+/g, '"$1":0'));
    expect(mask(batch)).toEqual(mask(single));
    // 5 admitted by the quota (the replay is not counted), the 8th denied.
    expect(
      batch.map((r) =>
        "denied" in r
          ? "denied"
          : "unknown" in r
            ? "unknown"
            : (r as SubmitResult).replayed
              ? "replayed"
              : (r as SubmitResult).job.status,
      ),
    ).toEqual(["queued", "queued", "queued", "replayed", "waiting", "unknown", "queued", "denied"]);
    const ids = items.map((i) => i.job.id);
    expect(await state(a.prefix, a.store, ids)).toEqual(await state(b.prefix, b.store, ids));
  });
});

describe("submitJobs' answer", () => {
  it("carries a replayed job once per chunk, however many items repeat its key", async () => {
    const prefix = `bd-${randomUUID()}`;
    prefixes.push(prefix);
    // The script's raw answers, as they come back from Redis.
    const answers: string[] = [];
    const base = fromIoredis(redis);
    const seen = (source: string, answer: unknown) => {
      if (source === scripts.submitMany.sha1 || source === scripts.submitMany.source) {
        answers.push(String(answer));
      }
      return answer;
    };
    const client: ScriptClient = {
      evalsha: async (sha1, k, args) => seen(sha1, await base.evalsha(sha1, k, args)),
      eval: async (script, k, args) => seen(script, await base.eval(script, k, args)),
    };
    const store = new RedisStore({ client, prefix });
    const big = { n: 0, text: "x".repeat(100_000) };
    const first = job(1, { idempotencyKey: "big", input: big });
    await store.submitJob(first, { delayMs: 0, recoverGraceMs: 5_000 });
    // 150 tiny items with the stored job's key, then one with a key a tiny item of the chunk uses.
    const items: SubmitItem[] = [
      ...Array.from({ length: 150 }, (_, i) => ({
        job: job(i + 2, { idempotencyKey: "big" }),
        delayMs: 0,
      })),
      { job: job(200, { idempotencyKey: "new" }), delayMs: 0 },
      { job: job(201, { idempotencyKey: "new" }), delayMs: 0 },
    ];
    answers.length = 0;
    const results = await store.submitJobs!(items, { recoverGraceMs: 5_000 });
    const stored = await store.getJob(first.id);
    for (const r of results.slice(0, 150)) expect(r).toEqual({ job: stored, replayed: true });
    const made = results[150] as SubmitResult;
    expect(made.replayed).toBe(false);
    expect(results[151]).toEqual({ job: await store.getJob(made.job.id), replayed: true });
    // The big job's text once in the answer, not 150 times.
    expect(answers).toHaveLength(1);
    expect(answers[0]!.length).toBeLessThan(2 * big.text.length);
  });
});
