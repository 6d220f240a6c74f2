/**
 * @module
 * `npx tsx bench/drain-ab.ts [--rounds N] [--jobs N] [dir …]`: the Redis Streams worker's drain,
 * alternating between built packages, to compare a change with the code before it on one host at
 * one time (ADR 0027's and ADR 0031's addenda were measured this way).
 *
 * Each `dir` is a built package's `dist/` (default: `dist`; build the other one in a git worktree,
 * e.g. `git worktree add /tmp/old HEAD~1 && (cd /tmp/old && npm ci && npm run build)`). Every
 * round runs each directory once, in a fresh process: it submits `--jobs` no-op jobs
 * (`engine.broker.submit`, 4 loops), then drains them with a `PullWorker` of concurrency 50 and
 * counts its acknowledged deliveries. One private Redis for the whole run, flushed before each
 * drain, on a core of its own where the machine allows (`bench/lib/cores.ts`), the worker on the
 * others. Prints each run, then per directory the medians of jobs/s, of the worker's and Redis's
 * CPU per job (Redis's from `INFO cpu`), and of the submits before the drain: submits/s and the
 * process's CPU per submit.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { childRun, mediansByDir } from "./lib/ab.ts";
import { pinProcess, redisCorePlan } from "./lib/cores.ts";
import { inLoops } from "./lib/loops.ts";
import { startRedis } from "./lib/redis.ts";
import { BENCH_DEGRADATION } from "./lib/settings.ts";

interface DrainRun {
  dir: string;
  jobs_per_s: number;
  worker_cpu_us_per_job: number;
  /** The submits before the drain: 4 loops of `engine.broker.submit`. */
  submits_per_s: number;
  /** This process's CPU per submit while submitting. */
  submit_cpu_us: number;
  /** Redis's CPU per drained job (`INFO cpu`: the server process's user and system time). */
  redis_cpu_us_per_job: number;
}

const CONCURRENCY = 50;

if (process.argv[2] === "--child") {
  const [dir, url, jobsArg] = process.argv.slice(3) as [string, string, string];
  console.log(JSON.stringify(await drainOnce(dir, url, Number(jobsArg))));
  process.exit(0);
} else {
  await main(process.argv.slice(2));
}

async function main(argv: string[]): Promise<void> {
  let rounds = 5;
  let jobs = 20_000;
  const dirs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--rounds") rounds = Number(argv[++i]);
    else if (arg === "--jobs") jobs = Number(argv[++i]);
    else dirs.push(resolve(arg));
  }
  if (dirs.length === 0) dirs.push(resolve("dist"));
  if (!(rounds > 0) || !(jobs > 0)) throw new Error("--rounds and --jobs take positive numbers");
  const redis = await startRedis();
  const cores = redisCorePlan();
  if (cores) pinProcess(redis.pid, cores.redis);
  const runs: DrainRun[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      for (const dir of dirs) {
        await redis.admin.flushall();
        const run = await child(dir, redis.url, jobs, cores?.others);
        runs.push(run);
        console.log(
          `${dir}: ${run.jobs_per_s} jobs/s, worker CPU ${run.worker_cpu_us_per_job} µs/job, Redis CPU ${run.redis_cpu_us_per_job} µs/job; ${run.submits_per_s} submits/s, ${run.submit_cpu_us} µs CPU each`,
        );
      }
    }
  } finally {
    await redis.stop();
  }
  for (const { dir, count, m } of mediansByDir(dirs, runs)) {
    console.log(
      `${dir}: medians of ${count}: ${m.jobs_per_s} jobs/s, worker CPU ${m.worker_cpu_us_per_job} µs/job, Redis CPU ${m.redis_cpu_us_per_job} µs/job; ${m.submits_per_s} submits/s, ${m.submit_cpu_us} µs CPU each`,
    );
  }
}

/** One drain in a fresh process (pinned to `cpus`), answering its figures. */
function child(dir: string, url: string, jobs: number, cpus?: string): Promise<DrainRun> {
  const file = new URL(import.meta.url).pathname;
  return childRun<DrainRun>(file, [dir, url, String(jobs)], `drain of ${dir}`, cpus);
}

/** Submit `jobs` no-op jobs with the package in `dir`, then drain them; this process's figures. */
async function drainOnce(dir: string, url: string, jobs: number): Promise<DrainRun> {
  const load = (entry: string) => import(pathToFileURL(resolve(dir, entry)).href);
  const { createEngine, PullWorker, silentLogger } = await load("index.js");
  const { openStore } = await load("adapter/node/index.js");
  const { RedisStreams } = await load("store/redis/index.js");
  const { store, redis } = await openStore(
    { kind: "redis", url, prefix: "drain", dispatch: "streams" },
    silentLogger,
  );
  const streams = new RedisStreams({ redis, prefix: "drain" });
  const engine = createEngine({
    store,
    transport: streams,
    handlers: { noop: { run: async () => null } },
    // A backlog this size must not turn the degradation controller away from `normal`.
    degradation: BENCH_DEGRADATION,
    logger: silentLogger,
  });
  const s0 = performance.now();
  const scpu0 = process.cpuUsage();
  await inLoops(jobs, 4, (n: number) => engine.broker.submit({ handler: "noop", input: { n } }));
  const submitMs = performance.now() - s0;
  const scpu = process.cpuUsage(scpu0);
  const worker = new PullWorker({
    runner: engine.runner,
    queue: streams,
    concurrency: CONCURRENCY,
    logger: silentLogger,
  });
  const redisCpu = async () => {
    const info: string = await redis.info("cpu");
    const field = (name: string) => Number(new RegExp(`${name}:([0-9.]+)`).exec(info)?.[1]);
    return (field("used_cpu_user") + field("used_cpu_sys")) * 1e6;
  };
  const r0 = await redisCpu();
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await worker.start();
  while (worker.stats().acked < jobs) await new Promise((r) => setTimeout(r, 10));
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const redisUs = (await redisCpu()) - r0;
  await worker.stop();
  await streams.close();
  const { totals } = await engine.stats();
  if (totals.succeeded !== jobs) {
    throw new Error(`${totals.succeeded} of ${jobs} jobs succeeded`);
  }
  return {
    dir,
    jobs_per_s: Math.round((jobs / ms) * 1000),
    worker_cpu_us_per_job: Math.round(((cpu.user + cpu.system) / jobs) * 10) / 10,
    submits_per_s: Math.round((jobs / submitMs) * 1000),
    submit_cpu_us: Math.round(((scpu.user + scpu.system) / jobs) * 10) / 10,
    redis_cpu_us_per_job: Math.round((redisUs / jobs) * 10) / 10,
  };
}
