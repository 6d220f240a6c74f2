/**
 * @module
 * `idle`: what doing nothing costs, in billed Redis commands (`INFO commandstats` on a private
 * Redis: EVAL/EVALSHA plus each command inside, as Upstash bills). tickwork: idle ticks with
 * 1,000 schedules stored and none due, × 1,440 ticks a day (one a minute). BullMQ: one repeatable
 * job every minute (`upsertJobScheduler`, `every: 60000`) and one `Worker` with default settings,
 * watched for a measured period and extrapolated to a day.
 */
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { createEngine, PullWorker, silentLogger } from "../../src/engine/index.ts";
import { fromIoredis, RedisStore, RedisStreams } from "../../src/store/redis/index.ts";
import { benchEngine, farTemplate, seedFar } from "../lib/engine.ts";
import { billedBetween, commandStats, commandsBetween, startRedis } from "../lib/redis.ts";

export interface IdleFigures {
  billed_per_tick: number;
  billed_per_day: number;
  bullmq_per_day: number;
  round_trips_per_tick: number;
  ticks_measured: number;
  schedules_stored: number;
  tickwork_commands: Record<string, number>;
  bullmq_window_s: number;
  bullmq_commands_in_window: number;
  /** Repeatable-job runs started inside the window (their commands are included). */
  bullmq_jobs_in_window: number;
  bullmq_commands: Record<string, number>;
  bullmq_settings: string;
  /**
   * An idle Redis Streams worker (PullWorker, nothing queued): billed commands per wake-up (one
   * blocking read that timed out, then the maintenance script), measured with short waits…
   */
  streams_worker_billed_per_wake: number;
  /** …and per minute at the defaults (one wake-up per `claimIdleMs`, 30 s). */
  streams_worker_billed_per_min: number;
  streams_worker_commands_per_wake: Record<string, number>;
}

const TICKS = 20;
const STORED = 1_000;
const DAY_S = 86_400;

async function tickworkIdle() {
  const redis = await startRedis();
  // An idle tick never publishes: no queue is needed behind the transport.
  const bench = await benchEngine(redis.url, {
    url: "http://127.0.0.1:9",
    token: "unused",
    currentSigningKey: "unused",
    nextSigningKey: "unused",
  });
  try {
    const { engine, store, counter } = bench;
    await seedFar(engine, await farTemplate(engine, await store.now()), STORED - 1);
    await engine.ticker.tick(); // warm-up
    const c0 = await commandStats(redis.admin);
    const rt0 = counter.roundTrips;
    for (let i = 0; i < TICKS; i++) {
      const result = await engine.ticker.tick();
      if (!result.leader || !result.idle) {
        throw new Error(`idle: tick ${i} was not idle: ${JSON.stringify(result)}`);
      }
    }
    const c1 = await commandStats(redis.admin);
    return {
      billed: billedBetween(c0, c1) / TICKS,
      roundTrips: (counter.roundTrips - rt0) / TICKS,
      commands: perTick(commandsBetween(c0, c1), TICKS),
    };
  } finally {
    bench.close();
    await redis.stop();
  }
}

/** An idle PullWorker's wake-ups: each a blocking read that timed out, then maintenance. */
async function streamsWorkerIdle(windowS: number) {
  const redis = await startRedis();
  const client = new Redis(redis.url);
  const waitMs = 1_000;
  // At the defaults (idleWaitMs 5 min ≥ maintainEveryMs 5 s) every wake-up maintains: keep that
  // ratio with the short waits measured here.
  const streams = new RedisStreams({ redis: client, prefix: "idle", maintainEveryMs: waitMs });
  const engine = createEngine({
    store: new RedisStore({ client: fromIoredis(client), prefix: "idle", dispatch: "streams" }),
    transport: streams,
    handlers: { noop: { run: async () => null } },
    logger: silentLogger,
  });
  const worker = new PullWorker({ runner: engine.runner, queue: streams, idleWaitMs: waitMs });
  try {
    await worker.start();
    await sleep(2 * waitMs); // past start-up (group creation, the first maintenance)
    const c0 = await commandStats(redis.admin);
    await sleep(windowS * 1000);
    const c1 = await commandStats(redis.admin);
    const commands = commandsBetween(c0, c1);
    const wakes = commands.xreadgroup ?? 0;
    if (wakes === 0) throw new Error("idle: the streams worker never woke up");
    const perWake = billedBetween(c0, c1) / wakes;
    return { perWake, commands: perTick(commands, wakes) };
  } finally {
    await worker.stop({ deadlineMs: 0 });
    await streams.close();
    client.disconnect();
    await redis.stop();
  }
}

async function bullmqIdle(windowS: number) {
  const redis = await startRedis();
  const queueConnection = new Redis(redis.url);
  const workerConnection = new Redis(redis.url, { maxRetriesPerRequest: null });
  const queue = new Queue("idle", { connection: queueConnection });
  const worker = new Worker("idle", async () => null, { connection: workerConnection });
  try {
    let started = 0;
    let firstDone: () => void = () => {};
    const first = new Promise<void>((resolve) => {
      firstDone = resolve;
    });
    worker.on("active", () => started++);
    worker.on("completed", () => firstDone());
    await worker.waitUntilReady();
    await queue.upsertJobScheduler("every-minute", { every: 60_000 }, { name: "heartbeat" });
    // The scheduler's first job runs at once; start the window after it, so the window holds the
    // steady state (and whatever runs fall inside it, counted below).
    await Promise.race([first, sleep(5_000)]);
    const c0 = await commandStats(redis.admin);
    const started0 = started;
    await sleep(windowS * 1000);
    const c1 = await commandStats(redis.admin);
    const billed = billedBetween(c0, c1);
    return {
      billed,
      perDay: Math.round((billed / windowS) * DAY_S),
      jobs: started - started0,
      commands: commandsBetween(c0, c1),
    };
  } finally {
    await worker.close();
    await queue.close();
    queueConnection.disconnect();
    workerConnection.disconnect();
    await redis.stop();
  }
}

export async function benchIdle(quick: boolean, log: (line: string) => void): Promise<IdleFigures> {
  const windowS = quick ? 20 : 60;
  const settings =
    'BullMQ 6.7 defaults: Worker { concurrency 1, drainDelay 5 s, stalledInterval 30 s, lockDuration 30 s }, Queue.upsertJobScheduler("every-minute", { every: 60000 })';
  log(
    `idle: billed commands (INFO commandstats). tickwork: ${TICKS} idle ticks, ${STORED} schedules stored, none due. BullMQ: ${settings}, watched ${windowS} s`,
  );
  const tw = await tickworkIdle();
  const bull = await bullmqIdle(windowS);
  const streams = await streamsWorkerIdle(quick ? 5 : 10);
  // At the defaults an idle worker wakes every claimIdleMs (30 s) to check for deliveries a stopped
  // consumer left pending (a lost wake-up included): two wake-ups a minute.
  const defaultWakesPerMin = 60_000 / 30_000;
  const figures: IdleFigures = {
    billed_per_tick: tw.billed,
    billed_per_day: tw.billed * 1_440,
    bullmq_per_day: bull.perDay,
    round_trips_per_tick: tw.roundTrips,
    ticks_measured: TICKS,
    schedules_stored: STORED,
    tickwork_commands: tw.commands,
    bullmq_window_s: windowS,
    bullmq_commands_in_window: bull.billed,
    bullmq_jobs_in_window: bull.jobs,
    bullmq_commands: bull.commands,
    bullmq_settings: settings,
    streams_worker_billed_per_wake: round2(streams.perWake),
    streams_worker_billed_per_min: round2(streams.perWake * defaultWakesPerMin),
    streams_worker_commands_per_wake: streams.commands,
  };
  log(
    `  tickwork: ${figures.billed_per_tick} billed / idle tick (${figures.round_trips_per_tick} round trip), ${figures.billed_per_day} / day at one tick a minute: ${JSON.stringify(tw.commands)}`,
  );
  log(
    `  BullMQ:   ${bull.billed} commands in ${windowS} s (${bull.jobs} repeatable-job runs started inside), ${figures.bullmq_per_day} / day: ${JSON.stringify(bull.commands)}`,
  );
  log(
    `  Streams worker, idle: ${figures.streams_worker_billed_per_wake} billed per wake-up, ${figures.streams_worker_billed_per_min} / min at one wake-up per 30 s: ${JSON.stringify(streams.commands)}`,
  );
  return figures;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

function perTick(commands: Record<string, number>, n: number): Record<string, number> {
  return Object.fromEntries(Object.entries(commands).map(([k, v]) => [k, v / n]));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
