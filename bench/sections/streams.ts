/**
 * @module
 * `streams`: tickwork on Redis Streams (`RedisStore({ dispatch: "streams" })` + `RedisStreams`)
 * beside BullMQ, without HTTP, each contender in its own process (`servers/streams-contender.ts`)
 * on its own private Redis, one after the other; full: 5 rounds, the order alternating, each
 * figure the median over them and each ratio to BullMQ also taken within every round (`paired`,
 * which the targets read; quick: 1 round, 10,000 jobs instead of 20,000):
 *
 * 1. Submit in process: {@link LOOPS} concurrent loops, each awaiting `engine.broker.submit` /
 *    `queue.add` before the next, a warm-up of 2,000 submits, then the rest measured:
 *    submits/s, and Redis's own time per submit from `INFO commandstats` (see `ownUsecBetween`:
 *    script calls with what they ran, plus commands sent on their own, each counted once), beside
 *    Redis's CPU (`INFO cpu`, parsing and sockets included) and the client process's CPU.
 * 2. End to end: the same jobs (warm-up included), all submitted before, then the workers
 *    started: a `PullWorker` / BullMQ `Worker`, the same concurrency, a no-op handler; the time
 *    from starting them to the last success. Both are counted in the worker's process: tickwork's
 *    from the `PullWorker`'s acknowledged deliveries (read every 10 ms; a delivery is acked once
 *    its outcome is recorded), BullMQ's from the worker's `completed` events; both checked
 *    against the store afterwards.
 *
 * Where the machine allows, Redis runs on a core of its own and every other process of the
 * section on the rest (`bench/lib/cores.ts`), so `INFO commandstats` bills each contender Redis's
 * work, not the time the scheduler paused Redis for the contender's own processes.
 */
import type { Redis } from "ioredis";
import { startTsChild, type TsChild } from "../lib/children.ts";
import { type CorePlan, pinProcess, redisCorePlan } from "../lib/cores.ts";
import { medians, type PairedRatio, pairedRatio } from "../lib/median.ts";
import {
  type CommandUsage,
  commandUsage,
  ownUsecBetween,
  redisCpu,
  startRedis,
} from "../lib/redis.ts";

export type StreamsContender = "streams" | "bullmq" | "qstash";

/** Per contender. */
interface Both {
  streams: number;
  bullmq: number;
}

/** Per contender, tickwork on QStash (submits only) too. */
interface Three extends Both {
  qstash: number;
}

/** In-process submits; in `results.json` beside the HTTP submit figures under `submit`. */
export interface InProcessSubmitFigures {
  /**
   * Redis µs per submit from `INFO commandstats`, each command counted once. `qstash`: the
   * outbox's submit script, and anything its background publishes write back (nothing when the
   * queue takes them).
   */
  redis_us_per_submit: Three;
  /** redis_us_per_submit.streams / redis_us_per_submit.bullmq */
  redis_us_streams_vs_bullmq: number;
  /** redis_us_per_submit.qstash / redis_us_per_submit.bullmq */
  redis_us_qstash_vs_bullmq: number;
  /** The two ratios above taken within each round; the targets read their medians. */
  redis_us_paired: { streams_vs_bullmq: PairedRatio; qstash_vs_bullmq: PairedRatio };
  in_process: {
    /**
     * `own`: Redis ran on a core of its own, every other process on the rest (bench/lib/cores.ts);
     * `shared`: one core, no `taskset`, or `BENCH_SHARED_CORES=1`.
     */
    redis_core: "own" | "shared";
    loops: number;
    /** Measured submits per contender (after `warmup` more). */
    submits: number;
    warmup: number;
    /** Rounds run (full: 5, quick: 1); every figure is the median over them. */
    rounds: number;
    submits_per_s: Three;
    /** submits_per_s.streams / submits_per_s.bullmq */
    streams_vs_bullmq: number;
    /** Redis CPU (`INFO cpu`, user + sys) per submit, µs: sockets and parsing included. */
    redis_cpu_us_per_submit: Three;
    /** CPU of the submitting process per submit, µs (qstash: its publishes included). */
    client_cpu_us_per_submit: Three;
    /**
     * Commands per submit as `INFO commandstats` counts them (inner commands of scripts too),
     * from the last round; `commands_per_job` likewise.
     */
    commands_per_submit: Record<StreamsContender, Record<string, number>>;
    /** Entries in streams other than `*:events` once every submit is in (tickwork). */
    stream_entries: number;
  };
}

/** Workers draining submitted jobs; `results.json` key `e2e`. */
export interface E2eFigures {
  jobs: number;
  concurrency: number;
  rounds: number;
  tickwork_jobs_per_s: number;
  bullmq_jobs_per_s: number;
  /** tickwork_jobs_per_s / bullmq_jobs_per_s */
  tickwork_vs_bullmq: number;
  /** The same ratio taken within each round; the target reads its median. */
  tickwork_vs_bullmq_paired: PairedRatio;
  tickwork_ms: number;
  bullmq_ms: number;
  jobs_per_s_by_round: { tickwork: number[]; bullmq: number[] };
  /** Redis µs per job from `INFO commandstats`, each command counted once. */
  redis_us_per_job: { tickwork: number; bullmq: number };
  redis_cpu_us_per_job: { tickwork: number; bullmq: number };
  worker_cpu_us_per_job: { tickwork: number; bullmq: number };
  commands_per_job: { tickwork: Record<string, number>; bullmq: Record<string, number> };
  /** What each drain reported (final counts, tickwork's number of count reads). */
  drain: { tickwork: Record<string, number>; bullmq: Record<string, number> };
}

export interface StreamsFigures {
  submit: InProcessSubmitFigures;
  e2e: E2eFigures;
}

const LOOPS = 4;
const CONCURRENCY = 50;

interface Phase {
  ms: number;
  cpu_us: number;
  [figure: string]: number;
}

interface Snapshot {
  usage: CommandUsage;
  cpu: number;
  sent: Record<string, number>;
}

interface Window {
  /** Redis's own µs (commandstats, each command once). */
  usec: number;
  /** Redis CPU µs (INFO cpu). */
  cpu: number;
  commands: Record<string, number>;
}

async function snapshot(child: TsChild<unknown>, redis: Redis) {
  const [sent, usage, cpu] = await Promise.all([
    child.request<Record<string, number>>("sent"),
    commandUsage(redis),
    redisCpu(redis),
  ]);
  return { usage, cpu, sent } satisfies Snapshot;
}

function between(a: Snapshot, b: Snapshot): Window {
  const sent: Record<string, number> = {};
  for (const [name, n] of Object.entries(b.sent)) sent[name] = n - (a.sent[name] ?? 0);
  const commands: Record<string, number> = {};
  for (const [cmd, { calls }] of b.usage) {
    const n = calls - (a.usage.get(cmd)?.calls ?? 0);
    if (cmd !== "info" && n > 0) commands[cmd] = n;
  }
  return { usec: ownUsecBetween(a.usage, b.usage, sent), cpu: b.cpu - a.cpu, commands };
}

/** One round of one contender, per submit / per job. */
interface Figures {
  submits_per_s: number;
  redis_us_per_submit: number;
  redis_cpu_us_per_submit: number;
  client_cpu_us_per_submit: number;
  jobs_per_s: number;
  drain_ms: number;
  redis_us_per_job: number;
  redis_cpu_us_per_job: number;
  worker_cpu_us_per_job: number;
}

interface Run {
  figures: Figures;
  submitCommands: Record<string, number>;
  drainCommands: Record<string, number>;
  /** What the drain reported besides its time and CPU. */
  drain: Record<string, number>;
  streamEntries: number;
}

async function streamEntries(redis: Redis): Promise<number> {
  let total = 0;
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "COUNT", 1000, "TYPE", "stream");
    cursor = next;
    for (const key of found) if (!key.endsWith(":events")) total += await redis.xlen(key);
  } while (cursor !== "0");
  return total;
}

async function runContender(
  kind: StreamsContender,
  jobs: number,
  warmup: number,
  cores: CorePlan | undefined,
  log: (line: string) => void,
): Promise<Run> {
  const redis = await startRedis();
  let child: TsChild<unknown> | undefined;
  let double: TsChild<Record<string, string>> | undefined;
  try {
    if (cores) pinProcess(redis.pid, cores.redis);
    const env: Record<string, string> = { REDIS_URL: redis.url };
    if (kind === "qstash") {
      double = await startTsChild<Record<string, string>>("servers/qstash-double.ts");
      if (cores) pinProcess(double.pid, cores.others);
      Object.assign(env, {
        QSTASH_URL: double.ready.url,
        QSTASH_TOKEN: double.ready.token,
        QSTASH_CURRENT_SIGNING_KEY: double.ready.currentSigningKey,
        QSTASH_NEXT_SIGNING_KEY: double.ready.nextSigningKey,
      });
    }
    child = await startTsChild<unknown>("servers/streams-contender.ts", [kind], env);
    if (cores) pinProcess(child.pid, cores.others);
    await child.request<Phase>("submit", { from: 0, count: warmup, loops: LOOPS });
    await child.request("settle");
    const s0 = await snapshot(child, redis.admin);
    const measured = jobs - warmup;
    const submit = await child.request<Phase>("submit", {
      from: warmup,
      count: measured,
      loops: LOOPS,
    });
    // qstash: the publishes of the measured submits are done (and whatever they wrote back).
    await child.request("settle");
    const s1 = await snapshot(child, redis.admin);
    if (kind === "qstash") {
      const sw = between(s0, s1);
      const f = submitFigures(sw, submit, measured);
      const submitCommands = perJob(sw.commands, measured);
      log(
        `  ${kind.padEnd(7)} submit: ${f.submits_per_s} /s, Redis ${f.redis_us_per_submit} µs/submit (INFO cpu ${f.redis_cpu_us_per_submit}), client CPU ${f.client_cpu_us_per_submit} µs/submit: ${JSON.stringify(submitCommands)}`,
      );
      const none = { jobs_per_s: 0, drain_ms: 0, redis_us_per_job: 0 };
      const rest = { redis_cpu_us_per_job: 0, worker_cpu_us_per_job: 0 };
      return {
        figures: { ...f, ...none, ...rest },
        submitCommands,
        drainCommands: {},
        drain: {},
        streamEntries: 0,
      };
    }
    const entries = await streamEntries(redis.admin);
    const s2 = await snapshot(child, redis.admin);
    const drain = await child.request<Phase>("drain", { jobs, concurrency: CONCURRENCY });
    const s3 = await snapshot(child, redis.admin);
    const sw = between(s0, s1);
    const dw = between(s2, s3);
    const f: Figures = {
      ...submitFigures(sw, submit, measured),
      jobs_per_s: round(jobs / (drain.ms / 1000)),
      drain_ms: round(drain.ms),
      redis_us_per_job: round(dw.usec / jobs, 1),
      redis_cpu_us_per_job: round(dw.cpu / jobs, 1),
      worker_cpu_us_per_job: round(drain.cpu_us / jobs, 1),
    };
    const submitCommands = perJob(sw.commands, measured);
    const drainCommands = perJob(dw.commands, jobs);
    log(
      `  ${kind.padEnd(7)} submit: ${f.submits_per_s} /s, Redis ${f.redis_us_per_submit} µs/submit (INFO cpu ${f.redis_cpu_us_per_submit}), client CPU ${f.client_cpu_us_per_submit} µs/submit: ${JSON.stringify(submitCommands)}`,
    );
    log(
      `  ${kind.padEnd(7)} drain:  ${jobs} jobs in ${f.drain_ms} ms = ${f.jobs_per_s} jobs/s, Redis ${f.redis_us_per_job} µs/job (INFO cpu ${f.redis_cpu_us_per_job}), worker CPU ${f.worker_cpu_us_per_job} µs/job: ${JSON.stringify(drainCommands)}`,
    );
    const { ms: _ms, cpu_us: _cpu, ...rest } = drain;
    return { figures: f, submitCommands, drainCommands, drain: rest, streamEntries: entries };
  } finally {
    await child?.stop();
    await double?.stop();
    await redis.stop();
  }
}

function submitFigures(sw: Window, submit: Phase, measured: number) {
  return {
    submits_per_s: round(measured / (submit.ms / 1000)),
    redis_us_per_submit: round(sw.usec / measured, 1),
    redis_cpu_us_per_submit: round(sw.cpu / measured, 1),
    client_cpu_us_per_submit: round(submit.cpu_us / measured, 1),
  };
}

/**
 * `rounds` rounds, each contender on a fresh Redis and process, the order alternating (BullMQ
 * first in odd rounds); each figure is the median over the rounds.
 */
export async function benchStreams(
  quick: boolean,
  log: (line: string) => void,
): Promise<StreamsFigures> {
  const jobs = quick ? 10_000 : 20_000;
  const warmup = 2_000;
  const rounds = quick ? 1 : 5;
  const measured = jobs - warmup;
  log(
    `streams: in process, ${LOOPS} submit loops, ${warmup} warm-up + ${measured} measured submits, then workers (concurrency ${CONCURRENCY}, no-op handler) drain all ${jobs}; BullMQ queue.add + Worker vs tickwork broker.submit + PullWorker on RedisStreams; median of ${rounds} round(s)`,
  );
  const cores = redisCorePlan();
  log(
    cores
      ? `streams: Redis on CPU ${cores.redis} alone, every other process of the section on ${cores.others} (bench/lib/cores.ts)`
      : "streams: Redis shares the cores with the contenders",
  );
  const runs: Record<StreamsContender, Run[]> = { bullmq: [], streams: [], qstash: [] };
  // This process too (it reads INFO and relays requests): off Redis's core until the section ends.
  if (cores) pinProcess(process.pid, cores.others);
  try {
    for (let round = 0; round < rounds; round++) {
      const order: StreamsContender[] =
        round % 2 === 0 ? ["bullmq", "streams", "qstash"] : ["qstash", "streams", "bullmq"];
      for (const kind of order) {
        runs[kind].push(await runContender(kind, jobs, warmup, cores, log));
      }
    }
  } finally {
    if (cores) pinProcess(process.pid, cores.all);
  }
  const b = medians(runs.bullmq.map((r) => r.figures));
  const s = medians(runs.streams.map((r) => r.figures));
  const q = medians(runs.qstash.map((r) => r.figures));
  const byRound = (kind: StreamsContender, figure: "redis_us_per_submit" | "jobs_per_s") =>
    runs[kind].map((r) => r.figures[figure]);
  const lastB = runs.bullmq.at(-1)!;
  const lastS = runs.streams.at(-1)!;
  return {
    submit: {
      redis_us_per_submit: {
        streams: s.redis_us_per_submit,
        bullmq: b.redis_us_per_submit,
        qstash: q.redis_us_per_submit,
      },
      redis_us_streams_vs_bullmq: round(s.redis_us_per_submit / b.redis_us_per_submit, 2),
      redis_us_qstash_vs_bullmq: round(q.redis_us_per_submit / b.redis_us_per_submit, 2),
      redis_us_paired: {
        streams_vs_bullmq: pairedRatio(
          byRound("streams", "redis_us_per_submit"),
          byRound("bullmq", "redis_us_per_submit"),
        ),
        qstash_vs_bullmq: pairedRatio(
          byRound("qstash", "redis_us_per_submit"),
          byRound("bullmq", "redis_us_per_submit"),
        ),
      },
      in_process: {
        redis_core: cores ? "own" : "shared",
        loops: LOOPS,
        submits: measured,
        warmup,
        rounds,
        submits_per_s: {
          streams: s.submits_per_s,
          bullmq: b.submits_per_s,
          qstash: q.submits_per_s,
        },
        streams_vs_bullmq: round(s.submits_per_s / b.submits_per_s, 2),
        redis_cpu_us_per_submit: {
          streams: s.redis_cpu_us_per_submit,
          bullmq: b.redis_cpu_us_per_submit,
          qstash: q.redis_cpu_us_per_submit,
        },
        client_cpu_us_per_submit: {
          streams: s.client_cpu_us_per_submit,
          bullmq: b.client_cpu_us_per_submit,
          qstash: q.client_cpu_us_per_submit,
        },
        commands_per_submit: {
          streams: lastS.submitCommands,
          bullmq: lastB.submitCommands,
          qstash: runs.qstash.at(-1)!.submitCommands,
        },
        stream_entries: lastS.streamEntries,
      },
    },
    e2e: {
      jobs,
      concurrency: CONCURRENCY,
      rounds,
      tickwork_jobs_per_s: s.jobs_per_s,
      bullmq_jobs_per_s: b.jobs_per_s,
      tickwork_vs_bullmq: round(s.jobs_per_s / b.jobs_per_s, 2),
      tickwork_vs_bullmq_paired: pairedRatio(
        byRound("streams", "jobs_per_s"),
        byRound("bullmq", "jobs_per_s"),
      ),
      tickwork_ms: s.drain_ms,
      bullmq_ms: b.drain_ms,
      jobs_per_s_by_round: {
        tickwork: runs.streams.map((r) => r.figures.jobs_per_s),
        bullmq: runs.bullmq.map((r) => r.figures.jobs_per_s),
      },
      redis_us_per_job: { tickwork: s.redis_us_per_job, bullmq: b.redis_us_per_job },
      redis_cpu_us_per_job: { tickwork: s.redis_cpu_us_per_job, bullmq: b.redis_cpu_us_per_job },
      worker_cpu_us_per_job: {
        tickwork: s.worker_cpu_us_per_job,
        bullmq: b.worker_cpu_us_per_job,
      },
      commands_per_job: { tickwork: lastS.drainCommands, bullmq: lastB.drainCommands },
      drain: { tickwork: lastS.drain, bullmq: lastB.drain },
    },
  };
}

/** Each figure's median over the rounds. */
function perJob(commands: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(commands)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, round(v / n, 2)]),
  );
}

function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
