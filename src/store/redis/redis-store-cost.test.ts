/**
 * The Redis store's billed cost (see `redis-store.test.ts`): EVALSHA plus every command a script
 * runs, counted from `INFO commandstats` on a private redis-server nobody else touches.
 */
import { describe, expect, it } from "vitest";
import { privateRedis } from "../../../test/support/billed-redis.ts";
import { countingClient, withoutFunctions } from "../../../test/support/counting-client.ts";
import { ADMISSION, newJob, schedule, uniq } from "../../../test/support/redis-store-fixtures.ts";
import { RedisStore } from "./redis-store.ts";
import { fromIoredis } from "./script.ts";

describe("RedisStore cost (billed: EVALSHA + inner calls, on a private Redis)", () => {
  const priv = privateRedis();
  const billed = priv.billed;

  it("as Redis functions (FCALL for EVALSHA) a submit bills the same commands", async () => {
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    const submit = (client: ReturnType<typeof fromIoredis>, prefix: string) =>
      new RedisStore({ client, prefix }).submitJob(newJob(), timing, ADMISSION);
    const viaEval = withoutFunctions(fromIoredis(priv.redis));
    const viaFunctions = fromIoredis(priv.redis);
    await submit(viaEval, "cost-e"); // loads the script
    await submit(viaFunctions, "cost-f"); // loads the library
    const a = Object.fromEntries((await billed(() => submit(viaEval, "cost-e"))).byCommand);
    const b = Object.fromEntries((await billed(() => submit(viaFunctions, "cost-f"))).byCommand);
    expect(a.evalsha).toBe(1);
    const { evalsha, ...rest } = a;
    expect(b).toEqual({ fcall: evalsha, ...rest });
  });

  it("an idle beginTick is EVALSHA + TIME, ZRANGE x2, PTTL, and writes nothing", async () => {
    const { client, counter } = countingClient(withoutFunctions(fromIoredis(priv.redis)));
    const store = new RedisStore({ client, prefix: "cost" });
    for (let i = 0; i < 50; i++) await store.putSchedule(schedule({ id: `far${i}` }));
    const opts = {
      leaseMs: 5_000,
      horizonMs: 60_000,
      limit: 10,
      recoverLimit: 10,
      recoverGraceMs: 0,
    };
    await store.beginTick(opts); // loads the script
    counter.roundTrips = 0;
    const m = await billed(() => store.beginTick(opts));
    expect(counter.roundTrips).toBe(1);
    expect(Object.fromEntries(m.byCommand)).toEqual({ evalsha: 1, time: 1, zrange: 2, pttl: 1 });
    expect(m.total).toBe(5);
  });

  it("submitJob is one EVALSHA; events, idempotency and admission add known commands", async () => {
    const { client, counter } = countingClient(withoutFunctions(fromIoredis(priv.redis)));
    const store = new RedisStore({ client, prefix: "cost" });
    const quiet = new RedisStore({ client, prefix: "cost-quiet", eventsMaxLen: 0 });
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    await store.submitJob(newJob(), timing); // loads the script
    counter.roundTrips = 0;
    const plain = await billed(() => store.submitJob(newJob(), timing));
    const keyed = await billed(() =>
      store.submitJob(newJob({ idempotencyKey: uniq("k") }), timing),
    );
    const silent = await billed(() => quiet.submitJob(newJob(), timing));
    const guarded = await billed(() => store.submitJob(newJob(), timing, ADMISSION));
    const replay = await billed(async () => {
      const job = newJob({ idempotencyKey: uniq("k") });
      await store.submitJob(job, timing, ADMISSION);
      await store.submitJob({ ...job, id: uniq("job") }, timing, ADMISSION);
    });
    expect(counter.roundTrips).toBe(6);
    // TIME; HSET job, ZADD jobs; ZADD outbox (the job's first message: no body); ZADD pending;
    // HINCRBY submitted, queued; XADD
    expect(Object.fromEntries(plain.byCommand)).toEqual({
      evalsha: 1,
      time: 1,
      hset: 1,
      zadd: 3,
      hincrby: 2,
      xadd: 1,
    });
    expect(plain.total).toBe(9);
    expect(keyed.total).toBe(11); // + GET and SET of the idempotency key
    expect(silent.total).toBe(8); // eventsMaxLen 0: no XADD
    // Admission (the policy passes no evaluateEveryMs: every submit evaluates): HMGET degrade
    // (the stored level and its age), HMGET metrics (averages), ZCOUNT backlog, HSET degrade,
    // GET + SET quota.
    expect(Object.fromEntries(guarded.byCommand)).toEqual({
      evalsha: 1,
      time: 1,
      hmget: 2,
      zcount: 1,
      hincrby: 2,
      hset: 2,
      get: 1,
      set: 1,
      zadd: 3,
      xadd: 1,
    });
    expect(guarded.total).toBe(15);
    // Dispatching to Redis Streams, due at once: XADD of the delivery instead of the outbox's
    // ZADD, and one HINCRBY (s:in) instead of the backlog's ZADD and its two counters.
    const streams = new RedisStore({ client, prefix: "cost-streams", dispatch: "streams" });
    await streams.submitJob(newJob(), timing);
    const streamed = await billed(() => streams.submitJob(newJob(), timing));
    expect(Object.fromEntries(streamed.byCommand)).toEqual({
      evalsha: 1,
      time: 1,
      hset: 1,
      zadd: 1,
      hincrby: 1,
      xadd: 2,
    });
    expect(streamed.total).toBe(7);
    // Two made at once go in one group (docs/adr/0043-submits-in-groups.md): the script call,
    // TIME and HINCRBY once, HSET, ZADD and two XADDs each (the first group loads the script).
    const two = () => Promise.all([1, 2].map(() => streams.submitJob(newJob(), timing)));
    await two();
    const group = await billed(two);
    expect(Object.fromEntries(group.byCommand)).toEqual({
      evalsha: 1,
      time: 1,
      hset: 2,
      zadd: 2,
      hincrby: 1,
      xadd: 4,
    });
    expect(group.total).toBe(11);
    // Delayed, it parks in the delayed set and enters the backlog as in outbox mode.
    const later = await billed(() => streams.submitJob(newJob(), { ...timing, delayMs: 60_000 }));
    expect(later.byCommand.get("zadd")).toBe(3); // listing, delayed set, backlog
    expect(later.byCommand.get("hincrby")).toBe(2);
    // + ZRANGE, ZADD and HSET of the delayed set, and a wake-up XADD (it is the earliest).
    expect(later.total).toBe(12);
    // The replay answers before admission: GET key + HMGET of the first job.
    expect(replay.total).toBe(guarded.total + 2 + 4);
    console.log("submit billed:", {
      plain: plain.total,
      idempotencyKey: keyed.total,
      noEvents: silent.total,
      admission: guarded.total,
    });
  });

  it("works on a server that has never seen the scripts (NOSCRIPT → EVAL, once)", async () => {
    await priv.redis.script("FLUSH"); // private server: nobody else uses it
    const store = new RedisStore({
      client: withoutFunctions(fromIoredis(priv.redis)),
      prefix: "fresh",
    });
    const m = await billed(() => store.now());
    expect(Object.fromEntries(m.byCommand)).toEqual({ evalsha: 1, eval: 1, time: 1 });
    const again = await billed(() => store.now());
    expect(Object.fromEntries(again.byCommand)).toEqual({ evalsha: 1, time: 1 });
  });

  it("getJob of another tenant's job reads its tenant only (one HGET), as for a missing job", async () => {
    const store = new RedisStore({
      client: withoutFunctions(fromIoredis(priv.redis)),
      prefix: "cost-t",
    });
    const timing = { delayMs: 0, recoverGraceMs: 0 };
    const job = newJob({ tenant: "acme", input: { big: "x".repeat(100_000) } });
    await store.submitJob(job, timing);
    await store.getJob(job.id, "acme"); // loads the script
    const theirs = await billed(() => store.getJob(job.id, "globex"));
    const missing = await billed(() => store.getJob("j_nosuchjob", "globex"));
    expect(Object.fromEntries(theirs.byCommand)).toEqual({ evalsha: 1, hget: 1 });
    expect(Object.fromEntries(missing.byCommand)).toEqual(Object.fromEntries(theirs.byCommand));
    const own = await billed(() => store.getJob(job.id, "acme"));
    expect(Object.fromEntries(own.byCommand)).toEqual({ evalsha: 1, hget: 1, hmget: 1 });
  });
});
