/**
 * @module
 * `retention`: the Redis bytes one `"1s"` schedule with a 64 KB input costs, without count caps
 * ("before": finished runs kept 7 days, the old behaviour) and with the store's defaults
 * (`DEFAULT_RETENTION`: at most 100 finished runs per schedule, 50,000 finished jobs), side by
 * side, each on a private Redis.
 *
 * N runs are driven through the real engine without waiting N seconds: the schedule is created
 * through the broker (`misfire: "all"`, `maxRuns: N`, `startAt` N s in the past), then its
 * `nextRunAt` is rewound to `startAt` in the store — the state of a schedule created N s ago whose
 * ticks never ran — so ticks plan the backlog (`catchUpLimit: N`, 50 occurrences a tick). Each
 * tick publishes to the `LocalTransport`, which delivers signed requests to the app's
 * `/v1/worker` in process (`deliver: app.fetch`); the handler runs and the store records every run
 * `succeeded`. The section waits on signals (the transport idle, the store's counters) with a
 * bounded timeout, never on the clock.
 *
 * `used_memory` is sampled after N/2 and after N runs (all succeeded, outbox empty), against a
 * baseline taken once the schedule is stored; at each sample the keys are also counted and sized
 * (`MEMORY USAGE`) by kind: job records, the runs index, tombstones of runs dropped early, replay
 * guards (`delivery:<jti>`, kept until the signature expires, 5 min), the events stream and the
 * rest. Those bounded by time or length grow with N here only because N runs take seconds, not N
 * seconds: the steady state of a real `"1s"` schedule puts them at their bounds instead (see
 * `after_steady_bytes`). Last, on the "after" Redis, one tick of a live `"1s"` schedule with the
 * default 60 s horizon measures what waits in the outbox ahead of time, whatever the retention.
 */
import { Redis } from "ioredis";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { createApp } from "../../src/http/index.ts";
import type { StoreRetention } from "../../src/store/port.ts";
import { DEFAULT_RETENTION, fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { scripts } from "../../src/store/redis/scripts.generated.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";
import { SIGNATURE_TTL_SEC } from "../../src/transport/signing.ts";
import { HANDLER } from "../lib/engine.ts";
import { type PrivateRedis, startRedis, usedMemory } from "../lib/redis.ts";
import { BENCH_API_KEY, BENCH_DEGRADATION } from "../lib/settings.ts";

/** The schedule's input, as JSON in UTF-8 bytes. */
const INPUT_BYTES = 64 * 1024;
/** Occurrences one tick plans (`tick.perScheduleLimit`; a 64 KB input fits 60 in one commit). */
const PER_TICK = 50;
/** Longest wait for one tick's deliveries, or for the store to show every run finished. */
const WAIT_MS = 120_000;
const DAY_S = 86_400;
const ORIGIN = "http://retention.bench";
const SCHEDULE_ID = "every-second";
/** Tombstones a `"1s"` schedule past its run cap keeps: one per run of the last hour. */
const TOMBSTONES_1S = 3_600;
/** `RedisStore`'s default `eventsMaxLen`. */
const EVENTS_MAX_LEN = 10_000;

/** The old behaviour: finished jobs kept 7 days, no count caps. */
const UNCAPPED: StoreRetention = {
  jobMs: 7 * DAY_S * 1000,
  idempotencyMs: DAY_S * 1000,
  maxFinishedJobs: 0,
  maxRunsPerSchedule: 0,
};

/** Keys of one kind: how many, and their `MEMORY USAGE` in bytes. */
export interface KeyKind {
  keys: number;
  bytes: number;
}

/** One sample, after `runs` runs succeeded. */
export interface RetentionSample {
  runs: number;
  /** `used_memory` growth since the schedule was stored. */
  growth_bytes: number;
  /** Finished runs the schedule still lists (its runs index). */
  listed_runs: number;
  /** Job records (hashes) still in Redis: the runs kept, each with a copy of the input. */
  job_records: KeyKind;
  /** The schedule's runs index (zset). */
  runs_index: KeyKind;
  /** Tombstones of runs dropped early (kept at most 1 h). */
  tombstones: KeyKind;
  /** Replay guards of deliveries (kept until the signature expires: 5 min). */
  delivery_guards: KeyKind;
  /** The events stream (exact trim at `eventsMaxLen`, 10,000 by default); `keys`: its entries. */
  events: KeyKind;
  /** Every other key the runs touched (expiry and listing indexes, backlog, metrics, …). */
  other: KeyKind;
}

/** One retention setting's two samples. */
export interface RetentionCase {
  retention: StoreRetention;
  half: RetentionSample;
  full: RetentionSample;
  /** Measured on the "after" Redis only: the same for any retention. */
  lookahead?: LookAhead | undefined;
}

/**
 * What a live `"1s"` schedule holds ahead of time: one tick plans the occurrences of its horizon,
 * and each waits in the outbox with the input until it runs (whatever the retention).
 */
export interface LookAhead {
  horizon_ms: number;
  /** Occurrences one tick planned (outbox messages after it). */
  watches: number;
  /** used_memory growth over that tick. */
  bytes: number;
  bytes_per_watch: number;
}

export interface RetentionFigures {
  /** The schedule's input, JSON bytes. */
  input_bytes: number;
  /** Runs driven (N); samples at N/2 and N. */
  runs: number;
  /** Before (no caps): growth / N, each run kept with its input for 7 days. */
  before_bytes_per_run: number;
  /** Before: a `"1s"` schedule's growth per day (86,400 runs). */
  before_bytes_per_day: number;
  /** Before: the 7-day ceiling (604,800 runs kept). */
  before_bytes_7d: number;
  /** After (defaults): growth at N/2 and at N runs; ≈ flat once past the 100-run cap. */
  after_bytes_half: number;
  after_bytes_full: number;
  /** After: runs still listed / job records kept at N (the cap: 100). */
  after_listed_runs: number;
  after_job_records: number;
  /** After: at both samples, no more than `maxRunsPerSchedule` runs listed and job records kept. */
  after_cap_held: boolean;
  /**
   * After, steady state of a real `"1s"` schedule: the growth at N with what this fast run left
   * in amounts of its own pace (tombstones, replay guards, events) replaced by what a 1 s pace
   * leaves at their bounds, at the sizes measured: 3,600 tombstones (1 h), 300 replay guards
   * (5 min), the events stream full (10,000 entries; it is deployment-wide).
   */
  after_steady_bytes: number;
  /**
   * Either way: the occurrences one tick plans ahead (60 s horizon: 60 of a `"1s"` schedule) wait
   * in the outbox with the input until they run: `60 × bytes per watch`.
   */
  lookahead_bytes: number;
  before: RetentionCase;
  after: RetentionCase;
}

const MIB = 1024 * 1024;
const mib = (bytes: number) => (bytes / MIB).toFixed(1);
const gib = (bytes: number) => (bytes / (1024 * MIB)).toFixed(2);

export async function benchRetention(
  quick: boolean,
  log: (line: string) => void,
): Promise<RetentionFigures> {
  const n = quick ? 300 : 1_000;
  log(
    `retention: used_memory growth of a private Redis as one "1s" schedule with a ${INPUT_BYTES / 1024} KB input runs ${n} times (ticks catch up a backlog, LocalTransport delivers to /v1/worker in process), sampled at ${n / 2} and ${n} runs`,
  );
  const before = await runCase("before (no caps: 7 days)", UNCAPPED, n, log);
  const after = await runCase(
    `after (defaults: ${DEFAULT_RETENTION.maxRunsPerSchedule} runs per schedule, ${DEFAULT_RETENTION.maxFinishedJobs} finished jobs)`,
    { ...DEFAULT_RETENTION },
    n,
    log,
    true,
  );

  const perRun = Math.round(before.full.growth_bytes / n);
  const a = after.full;
  const cap = DEFAULT_RETENTION.maxRunsPerSchedule;
  const held = (x: RetentionSample) => x.listed_runs <= cap && x.job_records.keys <= cap;
  // A real "1s" schedule's steady state: what this fast run left of each bounded kind at its own
  // pace, replaced by what a 1 s pace leaves at the bound (sizes as measured).
  const each = (kind: KeyKind) => (kind.keys > 0 ? kind.bytes / kind.keys : 0);
  const steady =
    a.growth_bytes -
    a.tombstones.bytes -
    a.delivery_guards.bytes -
    a.events.bytes +
    TOMBSTONES_1S * each(a.tombstones) +
    SIGNATURE_TTL_SEC * each(a.delivery_guards) +
    EVENTS_MAX_LEN * each(a.events);
  const look = after.lookahead;
  const lookahead = look ? Math.round((look.bytes_per_watch * look.horizon_ms) / 1000) : 0;
  const figures: RetentionFigures = {
    input_bytes: INPUT_BYTES,
    runs: n,
    before_bytes_per_run: perRun,
    before_bytes_per_day: perRun * DAY_S,
    before_bytes_7d: perRun * DAY_S * 7,
    after_bytes_half: after.half.growth_bytes,
    after_bytes_full: a.growth_bytes,
    after_listed_runs: a.listed_runs,
    after_job_records: a.job_records.keys,
    after_cap_held: held(after.half) && held(a),
    after_steady_bytes: Math.round(steady),
    lookahead_bytes: lookahead,
    before,
    after,
  };
  log(
    `  before: ${perRun} B per retained run (${Math.round(before.half.growth_bytes / before.half.runs)} at ${before.half.runs} runs): ${mib(figures.before_bytes_per_day)} MiB/day for a "1s" schedule, up to ${gib(figures.before_bytes_7d)} GiB over the 7 days`,
  );
  log(
    `  after: ${mib(after.half.growth_bytes)} MiB at ${after.half.runs} runs, ${mib(a.growth_bytes)} MiB at ${n} (the rise: ${a.tombstones.keys - after.half.tombstones.keys} tombstones, ${a.delivery_guards.keys - after.half.delivery_guards.keys} replay guards, ${a.events.keys - after.half.events.keys} events); steady ≈ ${mib(figures.after_steady_bytes)} MiB for a real "1s" schedule (${cap} runs, ${TOMBSTONES_1S} tombstones, ${SIGNATURE_TTL_SEC} replay guards, ${EVENTS_MAX_LEN} events)`,
  );
  log(
    `  either way: + ${mib(lookahead)} MiB of look-ahead (${look?.horizon_ms ?? 0} ms of occurrences waiting in the outbox, ${look?.bytes_per_watch ?? 0} B each)`,
  );
  if (!figures.after_cap_held) {
    log(
      `  CAP NOT HELD (maxRunsPerSchedule ${cap}): ${after.half.listed_runs} runs listed and ${after.half.job_records.keys} job records after ${after.half.runs} runs, ${a.listed_runs} and ${a.job_records.keys} after ${n}`,
    );
  }
  return figures;
}

/** One retention setting on a fresh private Redis: N runs, sampled at N/2 and N. */
async function runCase(
  label: string,
  retention: StoreRetention,
  n: number,
  log: (line: string) => void,
  lookAhead = false,
): Promise<RetentionCase> {
  const redis = await startRedis();
  const conn = new Redis(redis.url);
  const errors: string[] = [];
  let fetchApp: (request: Request) => Response | Promise<Response> = () =>
    new Response(null, { status: 503 });
  const transport = new LocalTransport({
    workerUrl: `${ORIGIN}/v1/worker`,
    failureCallbackUrl: `${ORIGIN}/v1/dead`,
    signingKey: "sig_bench_retention",
    deliver: (request) => fetchApp(request),
    backoff: () => 50,
    onError: (error) => errors.push(error.message),
  });
  try {
    const store = new RedisStore({ client: fromIoredis(conn), retention });
    const engine = createEngine({
      logger: silentLogger,
      store,
      transport,
      handlers: { [HANDLER]: { run: () => null } },
      degradation: BENCH_DEGRADATION,
      tick: { catchUpLimit: n, perScheduleLimit: PER_TICK },
    });
    const app = createApp({
      engine,
      publicUrl: ORIGIN,
      apiKeys: [BENCH_API_KEY],
      tickSecret: false,
    });
    fetchApp = (request) => app.fetch(request);
    // Every script cached first: the script cache is not part of what the runs cost.
    for (const script of Object.values(scripts)) await conn.script("LOAD", script.source);

    const input = { blob: "x".repeat(INPUT_BYTES - JSON.stringify({ blob: "" }).length) };
    const now = await store.now();
    const startAt = Math.floor(now / 1000) * 1000 - (n + 10) * 1000;
    const { schedule } = await engine.broker.createSchedule({
      id: SCHEDULE_ID,
      handler: HANDLER,
      schedule: "1s",
      startAt,
      maxRuns: n,
      misfire: "all",
      input,
    });
    const stored = await store.getSchedule(schedule.id);
    if (!stored) throw new Error("retention: the schedule does not read back");
    // The broker starts a new schedule from now; rewind it to startAt, as if created N s ago
    // with no tick since: n occurrences are due, all in the past.
    const put = await store.putSchedule({ ...stored, nextRunAt: startAt }, stored.rev);
    if (put.kind !== "ok" || put.schedule.nextRunAt !== startAt) {
      throw new Error(`retention: rewinding the schedule failed: ${JSON.stringify(put)}`);
    }

    const m0 = await usedMemory(redis.admin);
    const drive = async (target: number): Promise<RetentionSample> => {
      for (;;) {
        const { totals } = await engine.stats();
        if (totals.dispatched >= target) break;
        const tick = await engine.ticker.tick();
        if (!tick.leader || tick.fenced || tick.idle || tick.dispatched === 0) {
          throw new Error(
            `retention: a tick dispatched nothing at ${totals.dispatched} of ${target}: ${JSON.stringify(tick)}`,
          );
        }
        await within(transport.idle(), WAIT_MS, `the deliveries of tick ${totals.ticks + 1}`);
      }
      const stats = await until(
        () => engine.stats(),
        (s) => s.totals.succeeded >= target && s.outbox === 0 && s.jobs.running === 0,
        WAIT_MS,
        `${target} runs succeeded`,
      );
      const { totals } = stats;
      if (
        totals.dispatched !== target ||
        totals.succeeded !== target ||
        totals.failed !== 0 ||
        errors.length > 0
      ) {
        throw new Error(
          `retention: after driving to ${target} runs: ${JSON.stringify(totals)}; transport errors: ${errors.slice(0, 3).join("; ")}`,
        );
      }
      const sample = await measure(redis, schedule.id, target, m0);
      log(
        `  ${label}, ${target} runs: +${mib(sample.growth_bytes)} MiB; ${sample.listed_runs} runs listed, job records ${kind(sample.job_records)}, runs index ${kind(sample.runs_index)}, tombstones ${kind(sample.tombstones)}, replay guards ${kind(sample.delivery_guards)}, events ${kind(sample.events)}, other ${kind(sample.other)}`,
      );
      return sample;
    };
    const half = await drive(n / 2);
    const full = await drive(n);
    if (!lookAhead) return { retention, half, full };

    // Look-ahead: a live "1s" schedule from 5 s on, one tick with the default tick options (a
    // 60 s horizon): the occurrences it plans wait in the outbox, each with the input, until they
    // run. Their deliveries are never made (the transport is closed before their time).
    const ahead = new LocalTransport({
      workerUrl: `${ORIGIN}/v1/worker`,
      signingKey: "sig_bench_retention",
      deliver: () => new Response(null, { status: 503 }),
      onError: () => {},
    });
    try {
      const live = createEngine({
        logger: silentLogger,
        store,
        transport: ahead,
        handlers: { [HANDLER]: { run: () => null } },
        degradation: BENCH_DEGRADATION,
      });
      const liveStart = Math.ceil((await store.now()) / 1000) * 1000 + 5_000;
      await live.broker.createSchedule({
        id: "every-second-live",
        handler: HANDLER,
        schedule: "1s",
        startAt: liveStart,
        input,
      });
      const m2 = await usedMemory(redis.admin);
      const tick = await live.ticker.tick();
      const m3 = await usedMemory(redis.admin);
      const watches = await redis.admin.hlen(keys().outboxMsg);
      if (!tick.leader || tick.idle || tick.dispatched === 0 || watches !== tick.dispatched) {
        throw new Error(
          `retention: the look-ahead tick: ${JSON.stringify(tick)}, ${watches} outbox messages`,
        );
      }
      const lookahead = {
        horizon_ms: live.options.tick.horizonMs,
        watches,
        bytes: m3 - m2,
        bytes_per_watch: Math.round((m3 - m2) / watches),
      };
      log(
        `  ${label}, look-ahead: one tick (horizon ${lookahead.horizon_ms} ms) planned ${watches} occurrences of a live "1s" schedule, +${mib(lookahead.bytes)} MiB in the outbox until they run (${lookahead.bytes_per_watch} B each)`,
      );
      return { retention, half, full, lookahead };
    } finally {
      await ahead.close();
    }
  } finally {
    await transport.close();
    conn.disconnect();
    await redis.stop();
  }
}

function kind(k: KeyKind): string {
  return `${k.keys} (${k.bytes > 10 * 1024 ? `${(k.bytes / 1024).toFixed(0)} KiB` : `${k.bytes} B`})`;
}

/** used_memory growth, then every key of the deployment counted and sized by kind. */
async function measure(
  redis: PrivateRedis,
  scheduleId: string,
  runs: number,
  m0: number,
): Promise<RetentionSample> {
  const growth = (await usedMemory(redis.admin)) - m0;
  const k = keys();
  const runsKey = k.runs(scheduleId);
  const prefixes = {
    job_records: k.job(""),
    tombstones: k.gone(""),
    delivery_guards: k.delivery(""),
  };
  const kinds = {
    job_records: { keys: 0, bytes: 0 },
    runs_index: { keys: 0, bytes: 0 },
    tombstones: { keys: 0, bytes: 0 },
    delivery_guards: { keys: 0, bytes: 0 },
    events: { keys: 0, bytes: 0 },
    other: { keys: 0, bytes: 0 },
  };
  // The schedule itself (its hash holds the input once) was there at the baseline.
  const baseline = new Set([k.schedule(scheduleId), k.due, k.schedules("default"), k.revSeq]);
  let cursor = "0";
  do {
    const [next, found] = await redis.admin.scan(cursor, "MATCH", `${k.root}*`, "COUNT", 1000);
    cursor = next;
    const pipeline = redis.admin.pipeline();
    for (const key of found) pipeline.memory("USAGE", key, "SAMPLES", "0");
    const sizes = (await pipeline.exec()) ?? [];
    found.forEach((key, i) => {
      if (baseline.has(key)) return;
      const bytes = Number(sizes[i]?.[1] ?? 0);
      const name =
        key === runsKey
          ? "runs_index"
          : key === k.events
            ? "events"
            : ((Object.keys(prefixes) as (keyof typeof prefixes)[]).find((p) =>
                key.startsWith(prefixes[p]),
              ) ?? "other");
      kinds[name].keys++;
      kinds[name].bytes += bytes;
    });
  } while (cursor !== "0");
  kinds.events.keys = await redis.admin.xlen(k.events);
  return {
    runs,
    growth_bytes: growth,
    listed_runs: await redis.admin.zcard(runsKey),
    ...kinds,
  };
}

/** `promise`, or an error naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`retention: waited ${ms} ms for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Poll `read` until `done` holds (every 10 ms), or fail naming `what` after `ms`. */
async function until<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  ms: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(`retention: waited ${ms} ms for ${what}: ${JSON.stringify(value)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
