/**
 * @module
 * `npm run chaos [-- --quick] [-- --seed N]`: the fault suite. It tries hard to lose or double a
 * job, then counts.
 *
 * Parts (all real but QStash, which is the wire-faithful double):
 * - a private `redis-server`, reached by every app, worker and tick process only through a TCP
 *   fault proxy (drops, resets, stalls, lost replies, short outages);
 * - the QStash double, behind a fault layer on its publish API (5xx, accepted-but-reported-failed,
 *   timeouts), with its own delivery faults switched on and off (duplicate deliveries, reordered
 *   and late deliveries) and its retries with backoff and failure callbacks;
 * - 3 app processes (HTTP app: submit, schedules, `/v1/worker`, `/v1/dead`, dead-letter list)
 *   behind a balancer, SIGKILLed at random while handlers run and restarted; deliveries to a dead
 *   one fail (502) and are retried by the double; rarely a process kills itself after a handler
 *   completed and before `finishRun` (the documented window, counted apart);
 * - 3 tick processes (the Node tick timer, every 500 ms, racing for the lease), killed now and then;
 * - the workload: schedules whose exact occurrences are known in advance, and jobs submitted over
 *   HTTP with idempotency keys and client retries; dead jobs are retried from the dead-letter list.
 *
 * The ledger (a separate key prefix on a direct connection) records each handler completion.
 * After the faults stop, the system drains until every expected run completed (or nothing moves);
 * then `lost` and `doubled` are counted, a summary printed and `bench/chaos.json` written.
 *
 * The seed fixes every random choice of the fault schedule, the balancer and the processes; the
 * interleaving of real processes and sockets is not reproducible, so a seed reproduces the
 * conditions of a run, not its exact history.
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Redis } from "ioredis";
import type { JobRecord } from "../../src/index.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { type Prng, prng } from "../../test/support/prng.ts";
import { type DeliveryRecord, startQStashDouble } from "../../test/support/qstash-double/index.ts";
import { startRedisServer } from "../../test/support/redis-server.ts";
import { Balancer, type SlotPorts } from "./balancer.ts";
import {
  DELIVERY_TIMEOUT_MS,
  ENGINE_OPTIONS,
  HANDLER_TIMEOUT_MS,
  TRANSPORT_OPTIONS,
} from "./config.ts";
import { childCommand, Fleet, type Slot } from "./fleet.ts";
import { Ledger } from "./ledger.ts";
import { type PublishFaultKind, QStashFaultLayer } from "./qstash-faults.ts";
import { type RedisFaultKind, RedisFaultProxy } from "./redis-proxy.ts";
import { causeCounts, judge, type StoreView } from "./report.ts";
import { FULL, jobBody, lastFireAt, plannedSchedules, QUICK } from "./workload.ts";

const OUTPUT = new URL("../chaos.json", import.meta.url);
/** Above this event-loop stall of the orchestrator, a run is reported as not valid. */
const MAX_VALID_LAG_MS = 3_000;
const PREFIX = "chaos";

/** How hard the faults hit (the same in both modes; the modes differ in size). */
const INTENSITY = {
  /** Mean time between Redis faults (exponential). */
  redisFaultEveryMs: 1_000,
  /** Weights of the Redis fault kinds. */
  redisWeights: { drop: 25, reset: 20, stall: 25, reply_lost: 28, outage: 2 } as Record<
    RedisFaultKind,
    number
  >,
  stallMs: [100, 1_000],
  outageMs: [300, 1_500],
  /** Mean time between SIGKILLs of an app process running handlers. */
  workerKillEveryMs: 10_000,
  /** Mean time between SIGKILLs of a tick process. */
  tickerKillEveryMs: 15_000,
  /** Probability that a completed run kills its process before `finishRun`. */
  afterCompletionCrashRate: 0.002,
  /** Probability of each publish fault, per publish request. */
  publishFaults: {
    publish_5xx: 0.03,
    accepted_reported_failed: 0.03,
    publish_timeout_accepted: 0.02,
    publish_timeout_lost: 0.02,
  } as Record<PublishFaultKind, number>,
  /** Probability that a delivery's answer is held past the queue's timeout. */
  deliveryTimeout: 0.01,
  /** Mean time between switches of the double's duplicate and reorder faults. */
  doubleSwitchEveryMs: 2_000,
  /** Share of time the double duplicates every first delivery. */
  duplicateShare: 0.3,
  /** Share of time the double holds first deliveries back a random 0–`reorderMs`. */
  reorderShare: 0.5,
  reorderMs: 500,
  /** A restarted process comes back after this long (a cold start). */
  restartMs: [100, 500],
};

interface Args {
  quick: boolean;
  seed: number;
  /** The same workload without any fault: the baseline. */
  faults: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { quick: false, seed: Math.floor(Math.random() * 2 ** 31), faults: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--quick") args.quick = true;
    else if (a === "--no-faults") args.faults = false;
    else if (a === "--seed") {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 0)
        throw new RangeError("--seed needs a non-negative integer");
      args.seed = n;
    } else if (a?.startsWith("--seed=")) args.seed = Number(a.slice(7));
    else throw new RangeError(`unknown option ${a}; use --quick, --seed N, --no-faults`);
  }
  return args;
}

/** Undone in reverse on exit, on an error or on Ctrl-C: no process or redis-server is left behind. */
const cleanups: (() => Promise<unknown>)[] = [];

async function cleanUp(): Promise<void> {
  for (const undo of cleanups.splice(0).reverse()) await undo().catch(() => undefined);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const between = (rng: Prng, [lo, hi]: number[]) => lo! + rng.int(hi! - lo! + 1);
const exponential = (rng: Prng, mean: number) => -Math.log(1 - rng.next()) * mean;

interface Answer {
  status: number;
  body: Record<string, unknown>;
  retryAfterMs: number | undefined;
}

/** Client counters. */
const client = {
  requests: 0,
  retries: 0,
  replayed: 0,
  /** Jobs whose client gave up (the job may exist all the same). */
  abandoned: 0,
  refused: [] as string[],
  /** Answers by status (`0`: no answer). */
  statuses: {} as Record<string, number>,
};

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const size = args.quick ? QUICK : FULL;
  const seed = args.seed;
  const stream = (n: number) => prng((seed * 31 + n) >>> 0);
  const rngRedis = stream(1);
  const rngPublish = stream(2);
  const rngBalancer = stream(3);
  const rngKill = stream(4);
  const rngDouble = stream(5);
  const rngRestart = stream(6);
  const started = Date.now();
  const loadAtStart = os.loadavg()[0] ?? 0;
  const log = (line: string) =>
    console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
  log(`chaos ${args.quick ? "--quick" : "(full)"} --seed ${seed}`);

  // ── infrastructure ─────────────────────────────────────────────────────────
  const redis = await startRedisServer();
  cleanups.push(() => redis.stop());
  const direct = new Redis(redis.url);
  cleanups.push(async () => direct.disconnect());
  const ledger = new Ledger(direct);
  await ledger.reset();
  const proxy = await RedisFaultProxy.start(redis.port);
  cleanups.push(() => proxy.close());
  // Failure callbacks retry on QStash's default backoff (12 s, 2.5 min, 30 min …): shortened
  // 100×, so a drain need not wait half an hour. Retry-After and the transport's retry delay
  // are not scaled.
  const double = await startQStashDouble({ random: rngDouble.next, defaultBackoffScale: 0.01 });
  cleanups.push(() => double.close());
  const layer = await QStashFaultLayer.start(
    double.url,
    () => undefined,
    (TRANSPORT_OPTIONS.publishTimeoutMs ?? 10_000) + 500,
  );
  cleanups.push(() => layer.close());
  let chaos = false;
  const appPorts: SlotPorts = [undefined, undefined, undefined];
  const lb = await Balancer.start(
    appPorts,
    {
      slot: (n) => rngBalancer.int(n),
      holdDelivery: () => chaos && rngBalancer.chance(INTENSITY.deliveryTimeout),
    },
    DELIVERY_TIMEOUT_MS + 500,
  );
  cleanups.push(() => lb.close());
  const fleet = new Fleet(
    {
      redisUrl: `redis://127.0.0.1:${proxy.port}`,
      ledgerUrl: redis.url,
      prefix: PREFIX,
      qstash: {
        url: layer.url,
        token: double.token,
        currentSigningKey: double.currentSigningKey,
        nextSigningKey: double.nextSigningKey,
      },
      publicUrl: lb.url,
      afterCompletionCrashRate: args.faults ? INTENSITY.afterCompletionCrashRate : 0,
      seed,
      tickEveryMs: 500,
    },
    { appPorts, ticks: 3 },
    () => (chaos ? between(rngRestart, INTENSITY.restartMs) : 100),
    await childCommand(),
  );
  cleanups.push(() => fleet.stop());
  fleet.start();
  await fleet.ready(90_000);
  log("3 app and 3 tick processes up; creating schedules");

  async function api(method: string, path: string, body?: unknown): Promise<Answer> {
    client.requests++;
    const res = await fetch(`${lb.url}${path}`, {
      method,
      ...(body !== undefined
        ? { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }
        : {}),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    let parsed: Record<string, unknown> = {};
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = { text };
    }
    const ra = Number(res.headers.get("retry-after"));
    return {
      status: res.status,
      body: parsed,
      retryAfterMs: Number.isFinite(ra) && ra > 0 ? ra * 1000 : undefined,
    };
  }

  /** Call until an answer that is not a transient failure (network, 429, 5xx), or `deadline`. */
  async function persist(
    what: string,
    call: () => Promise<Answer>,
    deadline = Number.POSITIVE_INFINITY,
  ): Promise<Answer | undefined> {
    for (let attempt = 0; attempt < 300 && Date.now() < deadline; attempt++) {
      if (attempt > 0) client.retries++;
      let answer: Answer | undefined;
      try {
        answer = await call();
      } catch {
        answer = undefined;
      }
      const status = String(answer?.status ?? 0);
      client.statuses[status] = (client.statuses[status] ?? 0) + 1;
      if (answer && answer.status !== 429 && answer.status < 500) return answer;
      const backoff = Math.min(2_000, 50 * 2 ** Math.min(attempt, 6));
      await sleep(Math.min(answer?.retryAfterMs ?? backoff, 2_000));
    }
    client.refused.push(`${what}: gave up`);
    return undefined;
  }

  // ── schedules (before the faults) ───────────────────────────────────────────
  const t0 = Math.ceil((Date.now() + 6_000) / 2_000) * 2_000;
  const schedules = plannedSchedules(size, t0);
  const expected = new Set<string>();
  const occurrenceIds = new Set<string>();
  for (const s of schedules) {
    for (const fireAt of s.fireAts) occurrenceIds.add(`${String(s.body.id)}@${fireAt}`);
  }
  await pool(schedules, 20, async (s) => {
    const answer = await persist(`schedule ${String(s.body.id)}`, () =>
      api("POST", "/v1/schedules", s.body),
    );
    if (answer?.status !== 201 && answer?.status !== 200) {
      throw new Error(
        `creating ${String(s.body.id)}: ${answer?.status} ${JSON.stringify(answer?.body)}`,
      );
    }
  });
  if (Date.now() > t0 - 1_000) throw new Error("schedules were created too late for their startAt");
  for (const id of occurrenceIds) expected.add(id);
  const lastFire = lastFireAt(schedules);
  log(
    `${schedules.length} schedules, ${occurrenceIds.size} occurrences from ${new Date(t0).toISOString()} to +${(lastFire - t0) / 1000} s; faults ${args.faults ? "on" : "off"}`,
  );

  // ── chaos ─────────────────────────────────────────────────────────────────
  // This process runs the proxy, the double and the balancer: its event loop's lag bounds how
  // faithfully they keep time (a busy machine shows up here first).
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  chaos = args.faults;
  const faults = {
    worker_kill_mid_handler: 0,
    ticker_kill: 0,
    qstash_duplicate_window: 0,
    qstash_reorder_window: 0,
  };
  const loops: Promise<void>[] = [];
  const every = (mean: () => number, rng: Prng, act: () => void | Promise<void>) => {
    loops.push(
      (async () => {
        while (chaos) {
          await sleep(exponential(rng, mean()));
          if (chaos) await act();
        }
      })(),
    );
  };
  const totalWeight = Object.values(INTENSITY.redisWeights).reduce((a, b) => a + b, 0);
  every(
    () => INTENSITY.redisFaultEveryMs,
    rngRedis,
    () => {
      const kind = pickCumulative(INTENSITY.redisWeights, rngRedis.next() * totalWeight) ?? "drop";
      const ms =
        kind === "stall"
          ? between(rngRedis, INTENSITY.stallMs)
          : kind === "outage"
            ? between(rngRedis, INTENSITY.outageMs)
            : 0;
      proxy.fault(kind, (n) => rngRedis.int(n), ms);
    },
  );
  if (chaos) layer.pick = () => pickCumulative(INTENSITY.publishFaults, rngPublish.next());

  const apps = fleet.slots.filter((s) => s.role === "app");
  const ticks = fleet.slots.filter((s) => s.role === "tick");
  every(
    () => INTENSITY.workerKillEveryMs,
    rngKill,
    async () => {
      // A random moment while handlers run: wait for one if none does right now.
      for (let i = 0; i < 40 && chaos; i++) {
        const busy = apps.filter((s) => s.ready && s.inflight > 0);
        const victim = busy[rngKill.int(busy.length)];
        if (victim && fleet.kill(victim)) {
          faults.worker_kill_mid_handler++;
          return;
        }
        await sleep(25);
      }
    },
  );
  every(
    () => INTENSITY.tickerKillEveryMs,
    rngKill,
    () => {
      const alive: Slot[] = ticks.filter((s) => s.ready);
      const victim = alive[rngKill.int(alive.length)];
      if (victim && fleet.kill(victim)) faults.ticker_kill++;
    },
  );
  every(
    () => INTENSITY.doubleSwitchEveryMs,
    rngDouble,
    () => {
      const duplicate = rngDouble.chance(INTENSITY.duplicateShare);
      const reorder = rngDouble.chance(INTENSITY.reorderShare);
      if (duplicate && !double.faults.duplicateDeliveries) faults.qstash_duplicate_window++;
      if (reorder && double.faults.reorderMs === 0) faults.qstash_reorder_window++;
      double.faults.duplicateDeliveries = duplicate;
      double.faults.reorderMs = reorder ? INTENSITY.reorderMs : 0;
    },
  );

  // Jobs, spread over the schedules' span, each retried by its client until accepted.
  const jobIds = new Set<string>();
  const submitted = pool(
    Array.from({ length: size.jobs }, (_, i) => i),
    size.jobs,
    async (i) => {
      await sleep(Math.max(0, t0 + ((lastFire - t0) * i) / size.jobs - Date.now()));
      // A client gives up a minute after the load: its job may exist all the same (counted as
      // `submits_abandoned`; its runs show up as unexpected).
      const answer = await persist(
        `job ${i}`,
        () => api("POST", "/v1/jobs", jobBody(seed, i)),
        lastFire + 60_000,
      );
      if (!answer) client.abandoned++;
      else if (answer.status === 202 || answer.status === 200) {
        if (answer.status === 200) client.replayed++;
        jobIds.add(String(answer.body.id));
      } else {
        client.refused.push(`job ${i}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    },
  );

  // The dead-letter list, swept for the whole run: dead jobs are retried.
  const dlq = { retries: 0, ids: new Set<string>(), lastSeen: 0 };
  let sweeping = true;
  const sweeper = (async () => {
    while (sweeping) {
      await sleep(2_000);
      const page = await persist("dlq list", () => api("GET", "/v1/dlq?limit=100"));
      const items = (page?.body.items as { id: string }[] | undefined) ?? [];
      dlq.lastSeen = items.length;
      for (const { id } of items) {
        const r = await persist(`dlq retry ${id}`, () =>
          api("POST", `/v1/dlq/${encodeURIComponent(id)}/retry`),
        );
        if (r?.status === 200 || r?.status === 202) {
          dlq.retries++;
          dlq.ids.add(id);
        }
      }
    }
  })();

  let lastProgress = 0;
  const silent = new Set<number>();
  while (Date.now() < lastFire + 3_000) {
    await sleep(1_000);
    for (const [pid, life] of fleet.lives) {
      if (life.exit || !life.lastBeat || silent.has(pid)) continue;
      if (Date.now() - life.lastBeat.at > 5_000) {
        silent.add(pid);
        log(`${fleet.fate(pid)}: no heartbeat for 5 s`);
      }
    }
    if (Date.now() - lastProgress >= 10_000) {
      lastProgress = Date.now();
      log(
        `load: ${await ledger.doneCount()} completed, ${jobIds.size}/${size.jobs} jobs accepted, ${fleet.counts.killed} kills, apps up ${appPorts.filter((p) => p !== undefined).length}/3`,
      );
    }
  }
  await submitted;
  for (const id of jobIds) expected.add(id);
  const loadEnded = Date.now();
  const appDownShare = fleet.downShare("app", t0 - 1_000);

  // ── drain: faults off, let everything finish ────────────────────────────────
  chaos = false;
  layer.pick = () => undefined;
  double.faults.duplicateDeliveries = false;
  double.faults.reorderMs = 0;
  await Promise.all(loops);
  log(`faults off; draining (${expected.size} expected)`);
  const drainLimitMs = args.quick ? 70_000 : 240_000;
  // Longer than a run lease plus the reaper's wait: an abandoned job comes back only after that.
  const quietLimitMs = HANDLER_TIMEOUT_MS + 5_000 + (ENGINE_OPTIONS.reapAfterMs ?? 0) + 10_000;
  let quiesced = false;
  let settled = 0;
  let quietSince: number | undefined;
  let incomplete = expected.size;
  for (;;) {
    await sleep(1_000);
    const done = await ledger.done();
    incomplete = 0;
    for (const id of expected) if (!done.has(id)) incomplete++;
    const idle = await double.idle(1).then(
      () => true,
      () => false,
    );
    if (incomplete === 0 && idle) {
      if (++settled >= 2) {
        quiesced = true;
        break;
      }
    } else settled = 0;
    // Nothing left that could move: the queue is idle and nothing is dead.
    if (idle && dlq.lastSeen === 0) quietSince ??= Date.now();
    else quietSince = undefined;
    if (quietSince !== undefined && Date.now() - quietSince > quietLimitMs) {
      quiesced = true;
      log(
        `nothing moved for ${quietLimitMs / 1000} s with ${incomplete} expected runs not completed`,
      );
      break;
    }
    if (Date.now() - loadEnded > drainLimitMs) {
      log(`drain limit reached with ${incomplete} expected runs not completed`);
      break;
    }
  }
  sweeping = false;
  await sweeper;
  const drainEnded = Date.now();

  // ── verdict ───────────────────────────────────────────────────────────────
  const store = new RedisStore({ client: fromIoredis(direct), prefix: PREFIX });
  const view: StoreView = new Map();
  await pool([...expected], 50, async (id) => {
    view.set(id, await store.getJob(id));
  });
  const verdict = judge(
    expected,
    await ledger.done(),
    await ledger.marks(),
    new Map([...fleet.lives].map(([pid, life]) => [pid, life.exit ?? "alive"])),
    view,
  );
  const statuses: Record<string, number> = {};
  for (const job of view.values()) {
    const s = job?.status ?? "missing";
    statuses[s] = (statuses[s] ?? 0) + 1;
  }
  const disagree = [...view].filter(
    ([id, job]) => job?.status !== "succeeded" && !verdict.lost.has(id),
  );
  const duplicates = double.deliveries.filter((d) => d.duplicate).length;
  /** The fate of every process a ledger story mentions (runs are `<slot>.<pid>.<n>`). */
  const fates = (story: string) =>
    [...new Set([...story.matchAll(/@\d+\.(\d+)\./g)].map((m) => Number(m[1])))]
      .map((pid) => fleet.fate(pid))
      .join(" | ");
  const history = queueHistory(double.deliveries);
  const lostCauses: Record<string, number> = {};
  for (const id of verdict.lost.keys()) {
    const cause = lostCause(view.get(id) ?? null, history(id));
    lostCauses[cause] = (lostCauses[cause] ?? 0) + 1;
  }

  await fleet.stop();
  const faultCounts: Record<string, number> = {
    redis_drop: proxy.counts.drop,
    redis_reset: proxy.counts.reset,
    redis_stall: proxy.counts.stall,
    redis_reply_lost: proxy.counts.reply_lost,
    redis_outage: proxy.counts.outage,
    qstash_publish_5xx: layer.counts.publish_5xx,
    qstash_accepted_reported_failed: layer.counts.accepted_reported_failed,
    qstash_publish_timeout_accepted: layer.counts.publish_timeout_accepted,
    qstash_publish_timeout_lost: layer.counts.publish_timeout_lost,
    qstash_duplicate_delivery: duplicates,
    qstash_reorder_window: faults.qstash_reorder_window,
    delivery_timeout: lb.counts.deliveryTimeouts,
    worker_kill_mid_handler: faults.worker_kill_mid_handler,
    worker_crash_after_completion: verdict.crashesAfterCompletion,
    ticker_kill: faults.ticker_kill,
  };
  const faultsInjected = Object.values(faultCounts).reduce((a, b) => a + b, 0);
  // The proxy, the double and the balancer live in this process: when its event loop stalls for
  // seconds (a machine busy with other work), every connection stalls with it, and the run
  // measures that, not the injected faults.
  const maxLagMs = loopDelay.max / 1e6;
  const invalid =
    maxLagMs > MAX_VALID_LAG_MS
      ? `this process's event loop stalled for ${Math.round(maxLagMs)} ms (over ${MAX_VALID_LAG_MS} ms): the machine was too busy for the timings to mean anything`
      : undefined;
  const occurrences = occurrenceIds.size;
  const result = {
    seed,
    mode: `${args.quick ? "quick" : "full"}${args.faults ? "" : ", no faults"}`,
    valid: invalid === undefined,
    ...(invalid ? { invalid_because: invalid } : {}),
    occurrences,
    jobs: jobIds.size,
    lost: verdict.lost.size,
    doubled: verdict.doubled.size,
    doubled_after_completion_crash: verdict.doubledAfterCompletionCrash.size,
    dead_retried_from_dlq: [...dlq.ids].filter((id) => expected.has(id)).length,
    unexpected_runs: verdict.unexpected.length,
    store_disagrees: disagree.length,
    quiesced,
    faults_injected: faultsInjected,
    faults: faultCounts,
    observed: {
      handler_runs: verdict.runs,
      runs_interrupted_by_kill: verdict.interruptedByKill,
      random_kills_after_completion: verdict.randomKillsAfterCompletion,
      finish_run_failures: verdict.finishFailures,
      delivery_attempts: double.counters.deliveries,
      delivery_retries: double.counters.retries,
      messages_given_up: double.counters.failed,
      failure_callbacks: double.counters.callbacks,
      publish_requests: layer.requests,
      deliveries_to_down_worker: lb.counts.toDeadSlot,
      requests_cut_by_kill: lb.counts.diedInFlight,
      dlq_retries: dlq.retries,
      client_requests: client.requests,
      client_retries: client.retries,
      submit_replayed: client.replayed,
      submits_abandoned: client.abandoned,
      redis_connections: proxy.connections.accepted,
      redis_connections_refused: proxy.connections.refused,
      process_starts: fleet.counts.starts,
      restart_mean_ms: Math.round(fleet.counts.restartMs / Math.max(1, fleet.counts.restarts)),
      restart_max_ms: fleet.counts.restartMaxMs,
      app_down_share_during_load: Math.round(appDownShare * 100) / 100,
      processes_killed: fleet.counts.killed,
      processes_self_killed: fleet.counts.selfKilled,
      processes_exited_unexpectedly: fleet.counts.unexpected,
      duplicate_windows: faults.qstash_duplicate_window,
      orchestrator_loop_delay_p99_ms: round(loopDelay.percentile(99) / 1e6),
      orchestrator_loop_delay_max_ms: round(loopDelay.max / 1e6),
    },
    store_status: statuses,
    client_answers: client.statuses,
    lost_causes: lostCauses,
    doubled_causes: causeCounts(verdict.doubled),
    doubled_after_completion_crash_causes: causeCounts(verdict.doubledAfterCompletionCrash),
    disagree_sample: Object.fromEntries(
      disagree
        .slice(0, 10)
        .map(([id, job]) => [
          id,
          `store: ${job?.status ?? "missing"}; queue: ${history(id)}; ledger: ${verdict.story(id)}`,
        ]),
    ),
    unexpected_sample: Object.fromEntries(
      verdict.unexpected
        .slice(0, 10)
        .map((id) => [id, `queue: ${history(id)}; ledger: ${verdict.story(id)}`]),
    ),
    lost_sample: Object.fromEntries(
      [...verdict.lost]
        .slice(0, 20)
        .map(([id, why]) => [
          id,
          `${why}; queue: ${history(id)}; ledger: ${verdict.story(id)}; ${fates(verdict.story(id))}`,
        ]),
    ),
    doubled_sample: Object.fromEntries(
      [...verdict.doubled]
        .slice(0, 20)
        .map(([id, causes]) => [
          id,
          `${causes.join(", ")}; queue: ${history(id)}; ledger: ${verdict.story(id)}; ${fates(verdict.story(id))}`,
        ]),
    ),
    duration_s: round((Date.now() - started) / 1000),
    load_s: round((loadEnded - (t0 - 1_000)) / 1000),
    drain_s: round((drainEnded - loadEnded) / 1000),
    machine: {
      cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "unknown"}`,
      memory_gb: round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      load_average_at_start: round(loadAtStart),
      load_average_at_end: round(os.loadavg()[0] ?? 0),
    },
  };

  await cleanUp();

  writeFileSync(OUTPUT, `${JSON.stringify(result, null, 2)}\n`);
  printSummary(result, fleet.logs, client.refused, fleet.crashNotes);
  process.exit(result.lost === 0 && result.doubled === 0 ? 0 : 1);
}

function printSummary(
  r: {
    [k: string]: unknown;
    faults: Record<string, number>;
    observed: Record<string, number>;
  },
  logs: Record<string, number>,
  refused: string[],
  crashes: string[],
): void {
  const line = (k: string, v: unknown) => console.log(`  ${k.padEnd(34)} ${String(v)}`);
  console.log("\nchaos result");
  for (const k of [
    "seed",
    "mode",
    "valid",
    "invalid_because",
    "occurrences",
    "jobs",
    "lost",
    "doubled",
    "doubled_after_completion_crash",
    "dead_retried_from_dlq",
    "unexpected_runs",
    "store_disagrees",
    "quiesced",
    "faults_injected",
    "duration_s",
    "load_s",
    "drain_s",
  ]) {
    if (r[k] !== undefined) line(k, r[k]);
  }
  console.log("faults");
  for (const [k, v] of Object.entries(r.faults)) line(k, v);
  console.log("observed");
  for (const [k, v] of Object.entries(r.observed)) line(k, v);
  for (const k of [
    "store_status",
    "client_answers",
    "lost_causes",
    "doubled_causes",
    "doubled_after_completion_crash_causes",
    "lost_sample",
    "doubled_sample",
    "disagree_sample",
    "unexpected_sample",
  ]) {
    const v = r[k] as Record<string, unknown>;
    if (Object.keys(v).length > 0) console.log(`${k}: ${JSON.stringify(v, null, 1)}`);
  }
  const top = Object.entries(logs)
    .sort((a, b) => b[1] - a[1])
    .slice(0, 12);
  if (top.length > 0) {
    console.log("log lines from the processes (top 12)");
    for (const [k, v] of top) line(String(v), k);
  }
  for (const note of refused.slice(0, 10)) console.log(`client: ${note}`);
  for (const note of crashes.slice(0, 5)) console.log(`unexpected exit: ${note}`);
  console.log(`\nwritten to bench/chaos.json`);
}

/**
 * A job's story at the queue, from the double's delivery records: each attempt's status (`0`: no
 * answer; `d` marks a duplicate), then `cb` and the failure callback's statuses.
 */
function queueHistory(records: DeliveryRecord[]): (jobId: string) => string {
  const byJob = new Map<string, string[]>();
  for (const r of records) {
    let id: unknown;
    try {
      const body = JSON.parse(r.body) as { id?: unknown; sourceBody?: string };
      id = r.kind === "message" ? body.id : JSON.parse(atob(body.sourceBody ?? "")).id;
    } catch {
      continue;
    }
    if (typeof id !== "string") continue;
    const entry = `${r.kind === "message" ? "" : "cb"}${r.status}${r.duplicate ? "d" : ""}`;
    byJob.set(id, [...(byJob.get(id) ?? []), entry]);
  }
  return (jobId) => byJob.get(jobId)?.join(" ") ?? "never delivered";
}

/**
 * Why an expected id never completed, from its final record and its story at the queue:
 * - `stuck_running_callback_ignored`: the queue gave up and its failure callback was answered 200,
 *   but the job is still `running` (`markDead` found an unexpired run lease and left it);
 * - `queue_gave_up_callback_failed`: every delivery and every failure-callback attempt failed;
 * - otherwise `status_<status>`.
 */
function lostCause(job: JobRecord | null, story: string): string {
  const callbacks = story.split(" ").filter((s) => s.startsWith("cb"));
  if (job?.status === "running" && callbacks.includes("cb200")) {
    return "stuck_running_callback_ignored";
  }
  if (callbacks.length > 0 && !callbacks.includes("cb200")) return "queue_gave_up_callback_failed";
  return `status_${job?.status ?? "missing"}`;
}

/** Run `work` over `items`, at most `limit` at once. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(workers);
}

/** The key whose cumulative weight first exceeds `u`, if any. */
function pickCumulative<K extends string>(weights: Record<K, number>, u: number): K | undefined {
  let sum = 0;
  for (const [key, weight] of Object.entries(weights) as [K, number][]) {
    sum += weight;
    if (u < sum) return key;
  }
  return undefined;
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    console.error(`${signal}: stopping`);
    void cleanUp().finally(() => process.exit(130));
  });
}

main().catch(async (error: unknown) => {
  console.error(error);
  await cleanUp();
  process.exit(2);
});
