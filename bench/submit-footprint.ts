/**
 * @module
 * `npx tsx bench/submit-footprint.ts [streams,bullmq,…]`: what one submit leaves in Redis and
 * costs it, a Streams submit (`engine.broker.submit` on `RedisStore({ dispatch: "streams" })`)
 * against BullMQ's `queue.add`, each contender in turn on a private `redis-server`: 2,000 warm-up
 * submits, then 20,000 measured (4 concurrent loops). Per submit it prints:
 *
 * - Redis's time inside the script (`INFO commandstats`: `fcall`, `evalsha`), per call and per
 *   submit: concurrent Streams submits share one call (docs/adr/0043-submits-in-groups.md), so
 *   the time per submit is the one to set beside BullMQ's (one call per add);
 * - the growth of `used_memory`;
 * - Redis's page faults and CPU time, from `perf stat` on the server (left out when `perf` cannot
 *   run here).
 *
 * `REDIS_HASH_MAX_LISTPACK_VALUE=512` sets that on the server first (Redis's default is 64: a hash
 * holding a longer value, such as a job's, is a hash table).
 *
 * Contenders may repeat (`streams,bullmq,streams,bullmq`) to see how far this host moves between
 * runs. Not part of `npm run bench`; the README quotes a run of it.
 */
import { spawn } from "node:child_process";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { createEngine, silentLogger } from "../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../src/store/redis/index.ts";
import { inLoops } from "./lib/loops.ts";
import { startRedis } from "./lib/redis.ts";
import { BENCH_DEGRADATION } from "./lib/settings.ts";

const WARMUP = 2_000;
const N = 20_000;

async function scriptUsage(admin: Redis, command: string) {
  const info = await admin.info("commandstats");
  const m = new RegExp(`cmdstat_${command}:calls=(\\d+),usec=(\\d+)`).exec(info);
  return m ? { calls: Number(m[1]), usec: Number(m[2]) } : { calls: 0, usec: 0 };
}

async function usedMemory(admin: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await admin.info("memory"))?.[1]);
}

/** `perf stat` on `pid` until the returned function is called; its page faults and CPU ms. */
function perfStat(pid: number): () => Promise<{ faults: number; cpuMs: number } | undefined> {
  const perf = spawn("perf", ["stat", "-e", "page-faults,task-clock", "-p", String(pid)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let text = "";
  let failed = false;
  perf.stderr.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  perf.on("error", () => {
    failed = true;
  });
  return async () => {
    if (failed || perf.exitCode !== null) return undefined;
    const exited = new Promise((resolve) => perf.once("exit", resolve));
    perf.kill("SIGINT");
    await exited;
    const number = (re: RegExp) => Number(re.exec(text)?.[1]?.replace(/,/g, ""));
    const faults = number(/([\d,]+)\s+page-faults/);
    const cpuMs = number(/([\d.,]+)\s+msec task-clock/);
    return Number.isFinite(faults) && Number.isFinite(cpuMs) ? { faults, cpuMs } : undefined;
  };
}

for (const who of (process.argv[2] ?? "streams,bullmq").split(",")) {
  const redis = await startRedis();
  const admin = new Redis(redis.url);
  const listpackValue = process.env.REDIS_HASH_MAX_LISTPACK_VALUE;
  if (listpackValue) await admin.config("SET", "hash-max-listpack-value", listpackValue);
  const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
  let submit: (n: number) => Promise<unknown>;
  let command: string;
  let close = async () => {};
  if (who === "bullmq") {
    const queue = new Queue("bench", { connection });
    submit = (n) => queue.add("work", { n });
    command = "evalsha";
    close = () => queue.close();
  } else if (who === "streams") {
    const store = new RedisStore({
      client: fromIoredis(connection),
      prefix: "bench",
      dispatch: "streams",
    });
    const engine = createEngine({
      store,
      transport: new RedisStreams({ redis: connection, prefix: "bench" }),
      handlers: { "bench.work": { run: async () => null } },
      degradation: BENCH_DEGRADATION,
      logger: silentLogger,
    });
    submit = (n) => engine.broker.submit({ handler: "bench.work", input: { n } });
    command = "fcall";
  } else {
    throw new Error(`unknown contender ${who} (streams, bullmq)`);
  }
  await inLoops(WARMUP, 4, submit);
  const before = await scriptUsage(admin, command);
  const memoryBefore = await usedMemory(admin);
  const stop = perfStat(redis.pid);
  await inLoops(N, 4, submit);
  const perf = await stop();
  const after = await scriptUsage(admin, command);
  const memoryAfter = await usedMemory(admin);
  const parts = [
    `${who.padEnd(8)} script ${((after.usec - before.usec) / (after.calls - before.calls)).toFixed(1)} µs a call, ${((after.usec - before.usec) / N).toFixed(1)} µs a submit`,
    `used_memory +${Math.round((memoryAfter - memoryBefore) / N)} B`,
    perf
      ? `page faults ${(perf.faults / N).toFixed(2)}, Redis CPU ${((perf.cpuMs * 1000) / N).toFixed(1)} µs`
      : "perf stat not available",
  ];
  console.log(`${parts.join(" · ")} per submit`);
  await close();
  await connection.quit();
  await admin.quit();
  await redis.stop();
}
process.exit(0);
