/**
 * @module
 * One contender of the `streams` benchmark, in its own process (no HTTP): submits made in this
 * process, then the workers that run them, on a private Redis.
 *
 * tickwork is imported by its name: the built package, as an app that installed it runs it (see
 * `bench/lib/children.ts`); its store is opened as `tickwork start` opens it (`openStore`).
 *
 * - `streams`: `createEngine` on the store with `dispatch: "streams"` (the submit script adds
 *   the job to the stream) and the `RedisStreams` transport; `engine.broker.submit`, then a
 *   `PullWorker` on the same `RedisStreams`.
 * - `bullmq`: BullMQ `queue.add`, then a BullMQ `Worker`.
 * - `qstash`: `engine.broker.submit` on `RedisStore` (the outbox) publishing to the QStash double
 *   (`QSTASH_URL`, from the parent); submits only.
 *
 * Both with a no-op handler. Degradation thresholds as the submit benchmark sets them (the
 * submitted backlog would otherwise turn the controller `critical` and reject the submits).
 *
 * Requests (besides the built-in `cpu` and `exit`, see `serveParent`):
 * - `submit { from, count, loops }`: `count` submits, inputs `{ n: from … }`, from `loops`
 *   concurrent loops (each awaits its submit before the next); answers `{ ms, cpu_us }`.
 * - `drain { jobs, concurrency }`: start the workers, wait until `jobs` jobs have finished
 *   (streams: the `PullWorker`'s count of acknowledged deliveries, read in this process every
 *   {@link POLL_MS} ms; BullMQ: the worker's `completed` events), answer `{ ms, cpu_us, ... }`
 *   (time and this process's CPU from the start to the last success), after stopping the workers
 *   and checking the final counts (streams: the store's totals).
 * - `settle`: wait until the background publishes of the submits so far are done (qstash).
 * - `sent`: commands this process has sent to Redis so far, by name (every ioredis connection,
 *   duplicates included), for `ownUsecBetween`.
 */
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
// The package by name, as users import it: the built dist/ when started by bench/run.ts (see
// bench/lib/children.ts), the sources under a plain `tsx`.
import { createEngine, PullWorker, silentLogger } from "tickwork";
import { nodeQStashHttp, openStore } from "tickwork/node";
import { QStashTransport } from "tickwork/qstash";
import { RedisStreams } from "tickwork/redis";
import { serveParent } from "../lib/children.ts";
import { inLoops } from "../lib/loops.ts";
import { BENCH_DEGRADATION } from "../lib/settings.ts";

const kind = process.argv[2];
const redisUrl = process.env.REDIS_URL;
if (!redisUrl) throw new Error("REDIS_URL is required");

/** How often the streams contender reads its worker's counts while draining. */
const POLL_MS = 10;
/** A drain that makes no progress for this long fails. */
const STALL_MS = 30_000;
const PREFIX = "bench";

// Count every command sent, by name, on every connection of this process.
const sent: Record<string, number> = {};
const proto = Redis.prototype as unknown as {
  sendCommand(command: { name: string }, ...rest: unknown[]): unknown;
};
const sendCommand = proto.sendCommand;
proto.sendCommand = function (this: unknown, command, ...rest) {
  const name = command.name.toLowerCase();
  sent[name] = (sent[name] ?? 0) + 1;
  return sendCommand.call(this, command, ...rest);
};

interface Contender {
  submit(i: number): Promise<unknown>;
  drain(jobs: number, concurrency: number): Promise<Record<string, number>>;
}

function cpuNow(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function streamsContender(url: string): Promise<Contender> {
  // As `tickwork start` opens it (`openStore`: writes coalesced per event-loop turn).
  const { store, redis } = await openStore(
    { kind: "redis", url, prefix: PREFIX, dispatch: "streams" },
    silentLogger,
  );
  if (!redis) throw new Error("openStore gave no ioredis client for Redis Streams");
  const streams = new RedisStreams({ redis, prefix: PREFIX });
  const engine = createEngine({
    store,
    transport: streams,
    handlers: { noop: { run: async () => null } },
    degradation: BENCH_DEGRADATION,
    logger: silentLogger,
  });
  return {
    submit: (i) => engine.broker.submit({ handler: "noop", input: { n: i } }),
    async drain(jobs, concurrency) {
      const worker = new PullWorker({
        runner: engine.runner,
        queue: streams,
        concurrency,
        logger: silentLogger,
      });
      const t0 = performance.now();
      const cpu0 = cpuNow();
      await worker.start();
      let polls = 0;
      let last = -1;
      let progressAt = t0;
      for (;;) {
        // Counted in this process, as BullMQ's `completed` events are: a delivery is acked once
        // its outcome is recorded. The store's totals are checked once the drain is over.
        const { acked, retried, failed } = worker.stats();
        polls++;
        if (retried > 0 || failed > 0) {
          throw new Error(`streams drain: ${retried} attempts retried, ${failed} failed`);
        }
        if (acked >= jobs) break;
        const now = performance.now();
        if (acked !== last) {
          last = acked;
          progressAt = now;
        } else if (now - progressAt > STALL_MS) {
          throw new Error(`streams drain: stalled at ${last} of ${jobs} acknowledged`);
        }
        await sleep(POLL_MS);
      }
      const ms = performance.now() - t0;
      const cpu_us = cpuNow() - cpu0;
      const { left } = await worker.stop();
      const pulled = worker.stats();
      await streams.close();
      const { totals, jobs: gauges } = await engine.stats();
      if (totals.succeeded !== jobs || totals.started !== jobs) {
        throw new Error(
          `streams drain: ${totals.succeeded} succeeded and ${totals.started} started, not ${jobs}`,
        );
      }
      return {
        ms,
        cpu_us,
        polls,
        succeeded: totals.succeeded,
        left_in_flight: left,
        ...prefixed("worker_", { ...pulled }),
        ...prefixed("left_", gauges),
      };
    },
  };
}

function bullmqContender(url: string): Contender {
  const queue = new Queue("bench", { connection: new Redis(url) });
  return {
    submit: (i) => queue.add("noop", { n: i }),
    async drain(jobs, concurrency) {
      const worker = new Worker("bench", async () => null, {
        connection: new Redis(url, { maxRetriesPerRequest: null }),
        concurrency,
        autorun: false,
      });
      await worker.waitUntilReady();
      let completed = 0;
      let progressAt = performance.now();
      let fail: (error: Error) => void = () => {};
      const done = new Promise<void>((resolve, reject) => {
        fail = reject;
        worker.on("completed", () => {
          progressAt = performance.now();
          if (++completed === jobs) resolve();
        });
      });
      worker.on("failed", (job, error) =>
        fail(new Error(`bullmq drain: job ${job?.id} failed: ${error.message}`)),
      );
      worker.on("error", (error) => fail(error));
      const stall = setInterval(() => {
        if (performance.now() - progressAt > STALL_MS) {
          fail(new Error(`bullmq drain: stalled at ${completed} of ${jobs} completed`));
        }
      }, 1_000);
      const t0 = performance.now();
      const cpu0 = cpuNow();
      progressAt = t0;
      const running = worker.run().catch((error: unknown) => fail(error as Error));
      try {
        await done;
      } finally {
        clearInterval(stall);
      }
      const ms = performance.now() - t0;
      const cpu_us = cpuNow() - cpu0;
      await worker.close();
      await running;
      const counts = await queue.getJobCounts("completed", "failed", "waiting", "active");
      if (counts.completed !== jobs) {
        throw new Error(`bullmq drain: ${JSON.stringify(counts)} after ${jobs} completed events`);
      }
      return { ms, cpu_us, completed: counts.completed, ...prefixed("left_", counts) };
    },
  };
}

function prefixed(prefix: string, record: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [`${prefix}${k}`, v]));
}

/**
 * tickwork on QStash, submits only: `RedisStore` (the outbox) and `QStashTransport` publishing in
 * the background to the QStash double at `QSTASH_URL` (as `tickwork start` runs it; a submit's
 * publish writes nothing back to Redis unless the queue refuses it). No drain (the double's
 * deliveries go nowhere).
 */
async function qstashContender(url: string): Promise<Contender & { settle(): Promise<void> }> {
  const env = process.env;
  // As `tickwork start` opens it (`openStore`: writes coalesced per event-loop turn).
  const { store } = await openStore({ kind: "redis", url, prefix: PREFIX }, silentLogger);
  const transport = new QStashTransport({
    token: env.QSTASH_TOKEN ?? "",
    baseUrl: env.QSTASH_URL ?? "",
    workerUrl: "http://127.0.0.1:9/v1/worker",
    failureCallbackUrl: "http://127.0.0.1:9/v1/dead",
    currentSigningKey: env.QSTASH_CURRENT_SIGNING_KEY ?? "",
    nextSigningKey: env.QSTASH_NEXT_SIGNING_KEY ?? "",
    // As `tickwork start` sends its batches.
    http: nodeQStashHttp(),
  });
  const engine = createEngine({
    store,
    transport,
    handlers: { noop: { run: async () => null } },
    degradation: BENCH_DEGRADATION,
    backgroundPublish: true,
    logger: silentLogger,
  });
  return {
    submit: (i) => engine.broker.submit({ handler: "noop", input: { n: i } }),
    drain: () => Promise.reject(new Error("qstash: submits only, no drain")),
    settle: () => engine.broker.settled(),
  };
}

let contender: Contender & { settle?(): Promise<void> };
if (kind === "streams") contender = await streamsContender(redisUrl);
else if (kind === "bullmq") contender = bullmqContender(redisUrl);
else if (kind === "qstash") contender = await qstashContender(redisUrl);
else throw new Error(`unknown contender ${kind}: streams | bullmq | qstash`);

async function submitLoops(from: number, count: number, loops: number) {
  const t0 = performance.now();
  const cpu0 = cpuNow();
  await inLoops(count, loops, (i) => contender.submit(i), from);
  return { ms: performance.now() - t0, cpu_us: cpuNow() - cpu0 };
}

serveParent(
  {},
  {
    submit: (m) => submitLoops(Number(m.from), Number(m.count), Number(m.loops)),
    drain: (m) => contender.drain(Number(m.jobs), Number(m.concurrency)),
    sent: () => ({ ...sent }),
    settle: async () => {
      await contender.settle?.();
      return true;
    },
  },
);
