/**
 * @module
 * `npx tsx bench/submit-ab.ts [--rounds N] [dir …]`: Redis's time per Streams submit, alternating
 * between built packages, to compare a change to the submit script with the code before it on one
 * host at one time (ADR 0041 was measured this way).
 *
 * Each `dir` is a built package's `dist/` (default: `dist`; see `bench/drain-ab.ts` for building
 * another commit). Every round runs each directory once, in a fresh process against a fresh
 * private Redis (on a core of its own where the machine allows, `bench/lib/cores.ts`): 2,000
 * warm-up submits, then 18,000 measured, both in 4 loops of `engine.broker.submit` on
 * `RedisStore({ dispatch: "streams" })`. It prints each run's `FCALL` µs per submit
 * (`INFO commandstats`: a submit is one function call, or its part of one that several submits
 * share, its commands inside), Redis's whole CPU per submit (`INFO cpu`: reading requests and writing
 * replies included), function calls per submit, the submitting process's CPU per submit,
 * submits per second and the growth of
 * `used_memory` per measured job, then the medians per directory. The order of the directories
 * is reversed every other round.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { childRun, mediansByDir } from "./lib/ab.ts";
import { pinProcess, redisCorePlan } from "./lib/cores.ts";
import { inLoops } from "./lib/loops.ts";
import { commandUsage, redisCpu, startRedis } from "./lib/redis.ts";
import { BENCH_DEGRADATION } from "./lib/settings.ts";

const WARMUP = 2_000;
const MEASURED = 18_000;

interface SubmitRun {
  dir: string;
  us_per_submit: number;
  cpu_us_per_submit: number;
  client_cpu_us_per_submit: number;
  calls_per_submit: number;
  submits_per_s: number;
  bytes_per_job: number;
}

if (process.argv[2] === "--child") {
  const [dir, url] = process.argv.slice(3) as [string, string];
  console.log(JSON.stringify(await submitOnce(dir, url)));
  process.exit(0);
} else {
  await main(process.argv.slice(2));
}

async function main(argv: string[]): Promise<void> {
  let rounds = 5;
  const dirs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--rounds") rounds = Number(argv[++i]);
    else dirs.push(resolve(arg));
  }
  if (dirs.length === 0) dirs.push(resolve("dist"));
  if (!(rounds > 0)) throw new Error("--rounds takes a positive number");
  const cores = redisCorePlan();
  const runs: SubmitRun[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const dir of round % 2 === 0 ? dirs : [...dirs].reverse()) {
      const redis = await startRedis();
      try {
        if (cores) pinProcess(redis.pid, cores.redis);
        const run = await child(dir, redis.url, cores?.others);
        runs.push(run);
        console.log(
          `${dir}: ${run.us_per_submit} µs/submit (INFO cpu ${run.cpu_us_per_submit}), ${run.calls_per_submit} calls/submit, client CPU ${run.client_cpu_us_per_submit} µs/submit, ${run.submits_per_s} submits/s, ${run.bytes_per_job} bytes/job`,
        );
      } finally {
        await redis.stop();
      }
    }
  }
  for (const { dir, count, m } of mediansByDir(dirs, runs)) {
    console.log(
      `${dir}: medians of ${count}: ${m.us_per_submit} µs/submit (INFO cpu ${m.cpu_us_per_submit}), ${m.calls_per_submit} calls/submit, client CPU ${m.client_cpu_us_per_submit} µs/submit, ${m.submits_per_s} submits/s, ${m.bytes_per_job} bytes/job`,
    );
  }
}

/** One run in a fresh process (pinned to `cpus`), answering its figures. */
function child(dir: string, url: string, cpus?: string): Promise<SubmitRun> {
  const file = new URL(import.meta.url).pathname;
  return childRun<SubmitRun>(file, [dir, url], `submits of ${dir}`, cpus);
}

async function submitOnce(dir: string, url: string): Promise<SubmitRun> {
  const load = (entry: string) => import(pathToFileURL(resolve(dir, entry)).href);
  const { createEngine, silentLogger } = await load("index.js");
  const { openStore } = await load("adapter/node/index.js");
  const { RedisStreams } = await load("store/redis/index.js");
  const { store, redis } = await openStore(
    { kind: "redis", url, prefix: "submit", dispatch: "streams" },
    silentLogger,
  );
  const engine = createEngine({
    store,
    transport: new RedisStreams({ redis, prefix: "submit" }),
    handlers: { noop: { run: async () => null } },
    degradation: BENCH_DEGRADATION,
    logger: silentLogger,
  });
  const submit = (n: number) => engine.broker.submit({ handler: "noop", input: { n } });
  const memory = async () => Number(/used_memory:(\d+)/.exec(await redis.info("memory"))![1]);
  await inLoops(WARMUP, 4, submit);
  const [u0, m0, c0] = [await commandUsage(redis), await memory(), await redisCpu(redis)];
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  await inLoops(MEASURED, 4, (n: number) => submit(WARMUP + n));
  const ms = performance.now() - started;
  const cpu = process.cpuUsage(cpu0);
  const [u1, m1, c1] = [await commandUsage(redis), await memory(), await redisCpu(redis)];
  const f0 = u0.get("fcall") ?? { calls: 0, usec: 0 };
  const f1 = u1.get("fcall") ?? { calls: 0, usec: 0 };
  redis.disconnect();
  return {
    dir,
    us_per_submit: Math.round(((f1.usec - f0.usec) / MEASURED) * 100) / 100,
    cpu_us_per_submit: Math.round(((c1 - c0) / MEASURED) * 100) / 100,
    client_cpu_us_per_submit: Math.round(((cpu.user + cpu.system) / MEASURED) * 100) / 100,
    calls_per_submit: Math.round(((f1.calls - f0.calls) / MEASURED) * 100) / 100,
    submits_per_s: Math.round(MEASURED / (ms / 1000)),
    bytes_per_job: Math.round((m1 - m0) / MEASURED),
  };
}
