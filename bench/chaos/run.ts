/**
 * @module
 * `npm run chaos [-- --quick] [-- --seed N] [-- --transport streams]`: the fault suite. It tries
 * hard to lose or double a job, then counts.
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
 * With `--transport streams` the jobs travel on Redis Streams instead (`RedisStreams` through the
 * same fault proxy; each app process pulls with a `PullWorker`, as `tickwork start` does): no
 * QStash faults, and app processes running handlers are also stalled (SIGSTOP … SIGCONT) past
 * their run lease; the result goes to `bench/chaos-streams.json`.
 *
 * The ledger (a separate key prefix on a direct connection) records each handler completion.
 * After the faults stop, the system drains until every expected run completed (or nothing moves);
 * then `lost` and `doubled` are counted, a summary printed and `bench/chaos.json` written.
 *
 * The seed fixes every random choice of the fault schedule, the balancer and the processes; the
 * interleaving of real processes and sockets is not reproducible, so a seed reproduces the
 * conditions of a run, not its exact history.
 *
 * This file runs the phases in order; each lives in its own module: `setup.ts` (the fleet and its
 * proxies), `load.ts` (schedules, submits, the dead-letter sweeper), `faults.ts`, `drain.ts`,
 * `verdict.ts` (with `report.ts`, the judge), `summary.ts` (the result record and its summary);
 * `intensity.ts` says how hard the faults hit, `client.ts` is the API client.
 */
import os from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { RedisStreams, type StreamsClient } from "../../src/store/redis/index.ts";
import { chaosClient } from "./client.ts";
import type { ChaosTransport } from "./config.ts";
import { drain } from "./drain.ts";
import { startFaults } from "./faults.ts";
import { PREFIX } from "./intensity.ts";
import { createSchedules, runLoad } from "./load.ts";
import { type ChaosSwitch, startRig, streams } from "./setup.ts";
import { chaosResult, printSummary, writeResult } from "./summary.ts";
import { findings } from "./verdict.ts";
import { FULL, QUICK } from "./workload.ts";

interface Args {
  quick: boolean;
  seed: number;
  /** The same workload without any fault: the baseline. */
  faults: boolean;
  /** How jobs travel: the QStash double (the default) or Redis Streams. */
  transport: ChaosTransport;
}

function parseTransport(value: string | undefined): ChaosTransport {
  if (value === "qstash" || value === "streams") return value;
  throw new RangeError(`--transport needs qstash or streams, got ${String(value)}`);
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    quick: false,
    seed: Math.floor(Math.random() * 2 ** 31),
    faults: true,
    transport: "qstash",
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--quick") args.quick = true;
    else if (a === "--transport") args.transport = parseTransport(argv[++i]);
    else if (a?.startsWith("--transport=")) args.transport = parseTransport(a.slice(12));
    else if (a === "--no-faults") args.faults = false;
    else if (a === "--seed") {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 0)
        throw new RangeError("--seed needs a non-negative integer");
      args.seed = n;
    } else if (a?.startsWith("--seed=")) args.seed = Number(a.slice(7));
    else {
      throw new RangeError(
        `unknown option ${a}; use --quick, --seed N, --no-faults, --transport qstash|streams`,
      );
    }
  }
  return args;
}

/** Undone in reverse on exit, on an error or on Ctrl-C: no process or redis-server is left behind. */
const cleanups: (() => Promise<unknown>)[] = [];

async function cleanUp(): Promise<void> {
  for (const undo of cleanups.splice(0).reverse()) await undo().catch(() => undefined);
}

/** The run, phase by phase: setup, schedules, faults and load, drain, verdict, report. */
async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const size = args.quick ? QUICK : FULL;
  const { seed } = args;
  const rng = streams(seed);
  const started = Date.now();
  const loadAtStart = os.loadavg()[0] ?? 0;
  const log = (line: string) =>
    console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}`);
  const onStreams = args.transport === "streams";
  log(
    `chaos ${args.quick ? "--quick" : "(full)"} --seed ${seed}${onStreams ? " --transport streams" : ""}`,
  );

  // ── the fleet and its proxies ─────────────────────────────────────────────────
  const chaos: ChaosSwitch = { on: false };
  const rig = await startRig(args, rng, chaos, cleanups);
  const { ledger, double, fleet } = rig;
  log("3 app and 3 tick processes up; creating schedules");
  const client = chaosClient(rig.lb.url);

  // ── schedules (before the faults) ───────────────────────────────────────────
  const plan = await createSchedules(size, client, log, args.faults);
  const expected = new Set<string>(plan.occurrenceIds);

  // ── faults and load ───────────────────────────────────────────────────────────
  // This process runs the proxy, the double and the balancer: its event loop's lag bounds how
  // faithfully they keep time (a busy machine shows up here first).
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  const faults = startFaults(rig, rng, chaos, args.faults, args.transport);
  const { jobIds, sweeper } = await runLoad(plan, { size, seed }, client, fleet, ledger, log);
  for (const id of jobIds) expected.add(id);
  const loadEnded = Date.now();
  const appDownShare = fleet.downShare("app", plan.t0 - 1_000);

  // ── drain: faults off, let everything finish ────────────────────────────────
  await faults.stop();
  log(`faults off; draining (${expected.size} expected)`);
  // The queue is idle: the double has nothing to deliver, or nothing is on the stream.
  const queue = onStreams
    ? new RedisStreams({ redis: rig.direct as unknown as StreamsClient, prefix: PREFIX })
    : undefined;
  const idle = queue
    ? async () => {
        const s = await queue.stats();
        return s.length === 0 && s.pending === 0 && s.delayed === 0;
      }
    : () =>
        double.idle(1).then(
          () => true,
          () => false,
        );
  const { quiesced } = await drain(
    expected,
    { ledger, idle, dlq: sweeper.dlq },
    { quick: args.quick, loadEnded },
    log,
  );
  await sweeper.stop();
  const drainEnded = Date.now();

  // ── verdict ───────────────────────────────────────────────────────────────
  const found = await findings(expected, {
    direct: rig.direct,
    ledger,
    fleet,
    ...(onStreams ? {} : { deliveries: double.deliveries }),
  });
  const queueAtEnd = await queue?.stats();
  const duplicates = double.deliveries.filter((d) => d.duplicate).length;
  await fleet.stop();

  // ── report ────────────────────────────────────────────────────────────────
  const result = chaosResult(rig, {
    options: args,
    started,
    loadAtStart,
    t0: plan.t0,
    loadEnded,
    drainEnded,
    appDownShare,
    occurrences: plan.occurrenceIds.size,
    jobIds,
    expected,
    quiesced,
    findings: found,
    duplicates,
    faults: faults.counts,
    client: client.counters,
    dlq: sweeper.dlq,
    loopDelay,
    ...(queueAtEnd ? { streams: queueAtEnd } : {}),
  });

  await cleanUp();

  writeResult(result, args.transport);
  printSummary(
    result,
    fleet.logs,
    client.counters.refused,
    fleet.crashNotes,
    onStreams ? "bench/chaos-streams.json" : "bench/chaos.json",
  );
  process.exit(result.lost === 0 && result.doubled === 0 ? 0 : 1);
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
