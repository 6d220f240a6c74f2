/**
 * @module
 * One process of the system under test, started by the chaos orchestrator (`run.ts`) and killed by
 * it at random: an `app` (the HTTP app on a real port: submits, schedules, `/v1/worker`,
 * `/v1/dead`, the dead-letter list) or a `tick` process (the Node tick timer). Both open Redis the
 * way `tickwork start` does (`openStore`: ioredis with its production settings) through the fault
 * proxy, and publish through `QStashTransport` (the real `@upstash/qstash` client) to the double —
 * or, with `transport: "streams"`, through `RedisStreams` on that same connection, each app
 * process pulling and running deliveries with a `PullWorker` (what `tickwork start` does).
 *
 * The `work` handler writes its side effect to the ledger (a direct Redis connection). The store's
 * `finishRun` is wrapped only to observe it (ledger marks `F`/`E`) and, with a small probability,
 * to kill the process after a completed run and before its result is recorded: the one window
 * no at-least-once system closes, injected on purpose and counted apart.
 *
 * Reports to the parent over IPC: `listening` (app), `inflight` (handlers running), `log` counts,
 * a `beat` every second (in flight, `finishRun` calls pending, event-loop lag) and, on Streams,
 * the worker's counts (`worker`: pulled, acked, … and deliveries taken over from other consumers).
 */
import { Redis } from "ioredis";
import * as z from "zod";
import { type OpenStore, openStore, serve, startTicker } from "../../src/adapter/node/index.ts";
import { createApp } from "../../src/http/index.ts";
import {
  createEngine,
  type Handlers,
  type Logger,
  PullWorker,
  type Store,
  type Transport,
} from "../../src/index.ts";
import { RedisStreams, type StreamsClient } from "../../src/store/redis/index.ts";
import type { PulledMessage, PullQueue } from "../../src/transport/port.ts";
import { QStashTransport } from "../../src/transport/qstash/index.ts";
import { prng } from "../../test/support/prng.ts";
import {
  type ChildConfig,
  ENGINE_OPTIONS,
  HANDLER_TIMEOUT_MS,
  handlerMs,
  STREAMS_CONCURRENCY,
  TRANSPORT_OPTIONS,
  transientFailure,
} from "./config.ts";
import { Ledger } from "./ledger.ts";
import { RunNames } from "./run-names.ts";

const config = JSON.parse(process.env.CHAOS_CHILD ?? "null") as ChildConfig;
if (!config) throw new Error("CHAOS_CHILD is not set: this file is started by bench/chaos/run.ts");

const send = (message: unknown) => {
  if (process.connected) process.send?.(message);
};
// The orchestrator going away ends its children.
process.on("disconnect", () => process.exit(0));
if (!process.connected) process.exit(0);

/** Counts log lines by level and message; the totals go to the parent once a second. */
function countingLogger(): Logger {
  let counts: Record<string, number> = {};
  setInterval(() => {
    if (Object.keys(counts).length === 0) return;
    send({ t: "log", counts });
    counts = {};
  }, 1_000).unref();
  const logger: Logger = {
    debug() {},
    info() {},
    warn: (msg) => {
      counts[`warn: ${msg}`] = (counts[`warn: ${msg}`] ?? 0) + 1;
    },
    error: (msg, fields) => {
      const key = `error: ${msg}${fields?.error ? ` (${String(fields.error).slice(0, 80)})` : ""}`;
      counts[key] = (counts[key] ?? 0) + 1;
    },
    child: () => logger,
  };
  return logger;
}

const logger = countingLogger();
const rng = prng(config.seed ^ (config.slot * 7_919) ^ (config.generation * 104_729));
const ledger = new Ledger(new Redis(config.ledgerUrl));
let runSeq = 0;
let inflight = 0;
/** `finishRun` calls not yet returned. */
let finishing = 0;
// A heartbeat: what is in flight, and how late this beat's timer fired (event-loop lag).
let beatDue = Date.now() + 1_000;
setInterval(() => {
  const now = Date.now();
  send({ t: "beat", inflight, finishing, lagMs: now - beatDue });
  beatDue = now + 1_000;
}, 1_000).unref();
/** Run names, so every `finishRun` call (retries included) marks the run it records. */
const runs = new RunNames();

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

const handlers: Handlers = {
  work: {
    input: z.object({ failTimes: z.number().int().min(0) }).nullable(),
    timeout: HANDLER_TIMEOUT_MS,
    retries: 3,
    run: async (input, ctx) => {
      const run = `${config.slot}.${process.pid}.${++runSeq}`;
      runs.started(ctx.jobId, ctx.attempt, run);
      send({ t: "inflight", n: ++inflight });
      const began = Date.now();
      try {
        await ledger.mark("S", ctx.jobId, run, ctx.attempt);
        await sleep(handlerMs(ctx.jobId, ctx.attempt), ctx.signal);
        const failTimes = (input as { failTimes: number } | null)?.failTimes ?? 0;
        if (ctx.attempt <= failTimes || transientFailure(ctx.jobId, ctx.attempt)) {
          throw new Error(`planned failure of attempt ${ctx.attempt}`);
        }
        ctx.signal.throwIfAborted();
        // Completed past the handler's timeout with its signal not aborted yet: the process was
        // stalled (SIGSTOP) and its timers all fire late; noted, for the verdict.
        const tookMs = Date.now() - began;
        await ledger.completed(
          ctx.jobId,
          run,
          ctx.attempt,
          tookMs > HANDLER_TIMEOUT_MS ? `late:${tookMs}` : "",
        );
        return { run };
      } finally {
        send({ t: "inflight", n: --inflight });
      }
    },
  },
};

/** The store, with `finishRun` observed (and, rarely, the process killed just before it). */
function observed(store: Store): Store {
  // Every argument goes on to the store: the runner's `reapAfterMs` (the suite's 20 s, so a
  // failed attempt's watch comes due within the drain) and its options (`recordOnly`).
  const finishRun: Store["finishRun"] = async (id, attempt, outcome, reapAfterMs, options) => {
    const { run, first } = runs.finishing(id, attempt);
    if (first && outcome.ok && rng.chance(config.afterCompletionCrashRate)) {
      await ledger.mark("X", id, run, attempt);
      process.kill(process.pid, "SIGKILL");
      await new Promise(() => {});
    }
    finishing++;
    try {
      const result = await store.finishRun(id, attempt, outcome, reapAfterMs, options);
      runs.finished(id, attempt);
      // `recorded` is a success recorded without its job read back: marked as `ok`, which the
      // verdict reads as a recorded success.
      const kind = result.kind === "recorded" ? "ok" : result.kind;
      await ledger.mark("F", id, run, attempt, `${kind}:${outcome.ok ? "success" : "failure"}`);
      return result;
    } catch (error) {
      await ledger.mark("E", id, run, attempt, String(error).slice(0, 200));
      throw error;
    } finally {
      finishing--;
    }
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "finishRun") return finishRun;
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Try `step` again (up to 50 times, 100 ms apart): a start may meet a fault too. */
async function persist<T>(step: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await step();
    } catch (error) {
      if (i >= 50) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Open the store as `tickwork start` does (Streams: submits put deliveries on the stream). */
function open(): Promise<OpenStore> {
  // The first connection may meet a fault too: try again, as a restarting container would.
  return persist(() =>
    openStore(
      {
        kind: "redis",
        url: config.redisUrl,
        prefix: config.prefix,
        dispatch: config.transport === "streams" ? "streams" : "outbox",
        // The verdict reads every expected id's final record: keep every run (the default keeps
        // each schedule's last 100, and the full run's interval schedules fire 200 times each).
        retention: { maxRunsPerSchedule: 0, maxFinishedJobs: 0 },
      },
      logger,
    ),
  );
}

/** The Streams queue, with the deliveries it took over from other consumers counted. */
function counted(queue: PullQueue, counts: { claimed: number }): PullQueue {
  return new Proxy(queue, {
    get(target, prop, receiver) {
      if (prop === "pull") {
        return async (max: number, waitMs: number): Promise<PulledMessage[]> => {
          const messages = await target.pull(max, waitMs);
          for (const m of messages) if (m.claimed) counts.claimed++;
          return messages;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

async function main(): Promise<void> {
  const opened = await open();
  const store = observed(opened.store);
  const streams =
    config.transport === "streams"
      ? new RedisStreams({ redis: opened.redis as StreamsClient, prefix: config.prefix })
      : undefined;
  const transport: Transport =
    streams ??
    new QStashTransport({
      token: config.qstash.token,
      baseUrl: config.qstash.url,
      workerUrl: `${config.publicUrl}/v1/worker`,
      failureCallbackUrl: `${config.publicUrl}/v1/dead`,
      currentSigningKey: config.qstash.currentSigningKey,
      nextSigningKey: config.qstash.nextSigningKey,
      ...TRANSPORT_OPTIONS,
    });
  const engine = createEngine({
    ...ENGINE_OPTIONS,
    store,
    transport,
    handlers,
    logger,
    instanceId: `${config.role}-${config.slot}.${config.generation}`,
    // As `tickwork start` runs (the QStash runs keep the engine's default).
    ...(streams ? { backgroundPublish: true } : {}),
  });
  if (config.role === "tick") {
    startTicker(engine, config.tickEveryMs, { logger });
    send({ t: "ready" });
    return;
  }
  const app = createApp({ engine, publicUrl: config.publicUrl, dev: true });
  const server = await serve(app, { port: 0, signals: false, log: () => {} });
  if (streams) {
    const counts = { claimed: 0 };
    const worker = new PullWorker({
      runner: engine.runner,
      queue: counted(streams, counts),
      concurrency: STREAMS_CONCURRENCY,
      logger,
    });
    await persist(() => worker.start());
    setInterval(
      () => send({ t: "worker", counts: { ...worker.stats(), ...counts } }),
      1_000,
    ).unref();
  }
  send({ t: "listening", port: server.port });
}

main().catch((error: unknown) => {
  console.error(`chaos child ${config.role}-${config.slot} failed to start:`, error);
  process.exit(1);
});
