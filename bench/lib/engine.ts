/**
 * @module
 * The tickwork side of the in-process sections: an engine on a private Redis through a counting
 * script client (every EVAL/EVALSHA is one round trip), publishing with `QStashTransport` to the
 * QStash double, and the seeding helpers.
 */
import { Redis } from "ioredis";
import { nodeQStashHttp } from "../../src/adapter/node/qstash-http.ts";
import type { ScheduleRecord } from "../../src/core/model.ts";
import { createEngine, type Engine, silentLogger } from "../../src/engine/index.ts";
import type { EngineOptions } from "../../src/engine/options.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { functionLibrary } from "../../src/store/redis/script.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { countingClient } from "../../test/support/counting-client.ts";

/** The one handler every benchmark job and schedule names. */
export const HANDLER = "bench.work";

/** Where a QStash (or its double) is reached. */
export interface QueueTarget {
  url: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
}

export interface BenchEngine {
  engine: Engine;
  store: RedisStore;
  /** Script calls (round trips) so far. */
  counter: { roundTrips: number };
  redis: Redis;
  close(): void;
}

/**
 * An engine on `redisUrl` (production defaults unless `options` says otherwise), publishing to
 * `queue`, delivering to `workerOrigin` (nothing listens there unless the caller serves the app).
 */
export async function benchEngine(
  redisUrl: string,
  queue: QueueTarget,
  options: EngineOptions & { workerOrigin?: string } = {},
): Promise<BenchEngine> {
  const redis = new Redis(redisUrl);
  const { client, counter } = countingClient(fromIoredis(redis));
  const store = new RedisStore({ client });
  const origin = options.workerOrigin ?? "http://127.0.0.1:9";
  const transport = new QStashTransport({
    token: queue.token,
    baseUrl: queue.url,
    workerUrl: `${origin}/v1/worker`,
    failureCallbackUrl: `${origin}/v1/dead`,
    currentSigningKey: queue.currentSigningKey,
    nextSigningKey: queue.nextSigningKey,
    // As `tickwork start` sends its batches (node:http; see docs/adr/0025-node-http-for-qstash-batches.md).
    http: nodeQStashHttp(),
  });
  const engine = createEngine({
    logger: silentLogger,
    ...options,
    store,
    transport,
    handlers: { [HANDLER]: { run: () => null } },
  });
  // Every script cached and loaded as a function, so counts are steady-state (no NOSCRIPT → EVAL
  // fallbacks, no first FCALL → FUNCTION LOAD).
  for (const script of Object.values(scripts)) {
    await redis.script("LOAD", script.source);
    await redis.function("LOAD", "REPLACE", functionLibrary(script));
  }
  return { engine, store, counter, redis, close: () => redis.disconnect() };
}

/** Run `fn(i)` for `i` in `[from, from + count)`, `parallel` calls in flight at a time. */
export async function inBatches(
  from: number,
  count: number,
  parallel: number,
  fn: (i: number) => Promise<unknown>,
): Promise<void> {
  for (let start = from; start < from + count; start += parallel) {
    const end = Math.min(from + count, start + parallel);
    const calls: Promise<unknown>[] = [];
    for (let i = start; i < end; i++) calls.push(fn(i));
    await Promise.all(calls);
  }
}

/**
 * Create (or re-arm) schedules `<prefix>0 …` through the broker (`createSchedule`, the API's
 * path): a `"1h"` interval anchored at `startAt`, so each has exactly one occurrence at `startAt`
 * and the next an hour later. With `startAt` inside the tick's look-ahead, each is due once.
 */
export async function armDue(
  engine: Engine,
  prefix: string,
  count: number,
  startAt: number,
): Promise<void> {
  await inBatches(0, count, 500, (i) =>
    engine.broker.createSchedule({
      id: `${prefix}${i}`,
      handler: HANDLER,
      schedule: "1h",
      startAt,
      input: { n: i },
    }),
  );
}

/**
 * A realistic stored schedule far from due, as the broker writes it: a weekday-morning cron in a
 * named time zone, first due a week after `now` or later. Read back from the store, so seeded
 * copies carry exactly the record format `putSchedule` writes.
 */
export async function farTemplate(engine: Engine, now: number): Promise<ScheduleRecord> {
  const { schedule } = await engine.broker.createSchedule({
    id: "far-template",
    handler: HANDLER,
    schedule: "0 9 * * 1-5",
    tz: "Europe/Berlin",
    startAt: now + 7 * 86_400_000,
    input: { report: "daily", to: "team@example.com" },
    tags: ["reports"],
  });
  const stored = await engine.store.getSchedule(schedule.id);
  if (!stored) throw new Error("the template schedule does not read back");
  return stored;
}

/** Copies of a schedule hash `far-<from>` … `far-<to - 1>`, and their index entries (see cloneFar). */
const CLONE_LUA = `
local prefix, before, after = ARGV[1], ARGV[2], ARGV[3]
local from, to, revBase = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local nrest = tonumber(ARGV[7])
local rest = {}
for j = 1, nrest do rest[j] = ARGV[7 + j] end
local nidx = tonumber(ARGV[8 + nrest])
local base = 8 + nrest
for i = from, to - 1 do
  local id = 'far-' .. i
  local args = { 'def', before .. '"id":"' .. id .. '"' .. after, 'rev', tostring(revBase + i + 1) }
  for j = 1, nrest do args[4 + j] = rest[j] end
  redis.call('HSET', prefix .. id, unpack(args))
  for x = 1, nidx do
    redis.call('ZADD', ARGV[base + 2 * x - 1], ARGV[base + 2 * x], id)
  end
end
return to - from
`;

/**
 * Store `count` copies of the stored schedule `template` as `far-<i>` with raw writes made inside
 * Redis (the store API's one script per schedule is too slow for a million): it finds every key
 * `putSchedule` wrote for the template (its hash, and each index zset holding it), copies the hash
 * with the id inside `def` and a fresh `rev` (the rev sequence raised to match), and adds each
 * copy to the same indexes with the same score. Fails if the template's write touched anything
 * else; then checks samples read back through `getSchedule` exactly as the template, but for id
 * and rev.
 */
export async function cloneFar(
  bench: BenchEngine,
  template: ScheduleRecord,
  count: number,
): Promise<void> {
  const { redis, engine } = bench;
  const k = keys();
  const hashKey = k.schedule(template.id);
  const indexes: { key: string; score: string }[] = [];
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `${k.root}*`, "COUNT", 1000);
    cursor = next;
    for (const key of found) {
      if (key === hashKey) continue;
      if (key.includes(template.id)) {
        throw new Error(`cloneFar: putSchedule also wrote ${key}; the seeder does not copy it`);
      }
      if ((await redis.type(key)) !== "zset") continue;
      const score = await redis.zscore(key, template.id);
      if (score !== null) indexes.push({ key, score });
    }
  } while (cursor !== "0");
  const fields = await redis.hgetall(hashKey);
  if (!fields.def || !fields.rev) throw new Error(`cloneFar: ${hashKey} is not a schedule hash`);
  const base = Number(await redis.get(k.revSeq));
  if (!Number.isInteger(base)) throw new Error(`cloneFar: ${k.revSeq} holds no rev sequence`);
  // The copies are made inside Redis, a batch per script call: building a million commands in
  // the client costs more in garbage collection than Redis needs to write them.
  const idField = `"id":${JSON.stringify(template.id)}`;
  const at = fields.def.indexOf(idField);
  if (at < 0 || fields.def.indexOf(idField, at + 1) >= 0) {
    throw new Error(`cloneFar: ${idField} is not in the template's def exactly once`);
  }
  const rest = Object.entries(fields)
    .filter(([name]) => name !== "def" && name !== "rev")
    .flat();
  const batch = 20_000;
  for (let from = 0; from < count; from += batch) {
    await redis.eval(
      CLONE_LUA,
      0,
      k.schedule(""),
      fields.def.slice(0, at),
      fields.def.slice(at + idField.length),
      from,
      Math.min(count, from + batch),
      base,
      rest.length,
      ...rest,
      indexes.length,
      ...indexes.flatMap((index) => [index.key, index.score]),
    );
  }
  await redis.set(k.revSeq, String(base + count));
  for (const i of [0, Math.floor(count / 2), count - 1]) {
    if (i >= 0) await expectCopy(engine, template, `far-${i}`);
  }
}

async function expectCopy(engine: Engine, template: ScheduleRecord, id: string): Promise<void> {
  const back = await engine.store.getSchedule(id);
  const { id: _a, rev: _b, ...want } = template;
  const got = back === null ? null : (({ id: _c, rev: _d, ...rest }) => rest)(back);
  if (back?.id !== id || JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(
      `seeded schedule ${id} does not read back as written: ${JSON.stringify(back)} vs ${JSON.stringify(template)}`,
    );
  }
}

/**
 * Store `count` copies of `template` as `far-<i>` through the store API (`putSchedule`, many in
 * flight), then check one reads back through `getSchedule` as written.
 */
export async function seedFar(
  engine: Engine,
  template: ScheduleRecord,
  count: number,
): Promise<void> {
  await inBatches(0, count, 2_000, (i) =>
    engine.store.putSchedule({ ...template, id: `far-${i}`, rev: 0 }),
  );
  if (count > 0) await expectCopy(engine, template, `far-${Math.floor(Math.random() * count)}`);
}
