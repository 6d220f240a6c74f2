/**
 * @module
 * The fault suite's report: the result record (`bench/chaos.json`; `bench/chaos-streams.json` for
 * a Streams run) built from every phase's counts and the verdict, and its summary on stdout.
 */
import { writeFileSync } from "node:fs";
import os from "node:os";
import type { IntervalHistogram } from "node:perf_hooks";
import type { StreamsStats } from "../../src/store/redis/index.ts";
import type { ClientCounters } from "./client.ts";
import type { ChaosTransport } from "./config.ts";
import type { FaultCounts } from "./faults.ts";
import { MAX_VALID_LAG_MS } from "./intensity.ts";
import { causeCounts } from "./report.ts";
import type { Rig } from "./setup.ts";
import { round } from "./util.ts";
import type { Findings } from "./verdict.ts";

const OUTPUT = new URL("../chaos.json", import.meta.url);
const STREAMS_OUTPUT = new URL("../chaos-streams.json", import.meta.url);

/** What a run measured, phase by phase. */
export interface RunRecord {
  options: { seed: number; quick: boolean; faults: boolean; transport: ChaosTransport };
  /** When the run started, and the machine's load average then. */
  started: number;
  loadAtStart: number;
  t0: number;
  loadEnded: number;
  drainEnded: number;
  appDownShare: number;
  occurrences: number;
  jobIds: ReadonlySet<string>;
  expected: ReadonlySet<string>;
  quiesced: boolean;
  findings: Findings;
  /** Duplicate deliveries the double made. */
  duplicates: number;
  faults: FaultCounts;
  client: ClientCounters;
  dlq: { retries: number; ids: ReadonlySet<string> };
  /** The orchestrator's event-loop delay over the faults and the drain. */
  loopDelay: IntervalHistogram;
  /** Streams runs: what the queue held at the end. */
  streams?: StreamsStats;
}

export type ChaosResult = ReturnType<typeof chaosResult>;

/** The result record of a run. */
export function chaosResult(rig: Rig, run: RunRecord) {
  const { proxy, layer, double, lb, fleet } = rig;
  const { options, findings, faults, client, dlq, loopDelay, expected } = run;
  const { verdict, disagree, history, fates } = findings;
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
    qstash_duplicate_delivery: run.duplicates,
    qstash_reorder_window: faults.qstash_reorder_window,
    delivery_timeout: lb.counts.deliveryTimeouts,
    worker_kill_mid_handler: faults.worker_kill_mid_handler,
    worker_crash_after_completion: verdict.crashesAfterCompletion,
    ticker_kill: faults.ticker_kill,
  };
  const onStreams = options.transport === "streams";
  if (onStreams) faultCounts.worker_stall_past_lease = faults.worker_stall_past_lease;
  // Streams runs: the app processes' worker counts (each process's last report, summed; a
  // process reports once a second, so one killed loses up to a second of counts).
  const worker: Record<string, number> = {};
  for (const counts of fleet.workerCounts.values()) {
    for (const [k, v] of Object.entries(counts)) worker[k] = (worker[k] ?? 0) + v;
  }
  const streamsObserved = onStreams
    ? {
        stream_pulled: worker.pulled ?? 0,
        stream_claimed_from_stopped_consumers: worker.claimed ?? 0,
        stream_acked: worker.acked ?? 0,
        stream_retried_after_backoff: worker.retried ?? 0,
        stream_deferred_busy: worker.deferred ?? 0,
        stream_left_pending_store_failed: worker.failed ?? 0,
        stream_at_end_length: run.streams?.length ?? -1,
        stream_at_end_pending: run.streams?.pending ?? -1,
        stream_at_end_delayed: run.streams?.delayed ?? -1,
        stream_at_end_consumers: run.streams?.consumers ?? -1,
        processes_stalled: fleet.counts.stalled,
        stall_mean_ms: Math.round(fleet.counts.stalledMs / Math.max(1, fleet.counts.stalled)),
        stall_max_ms: fleet.counts.stalledMaxMs,
      }
    : {};
  const faultsInjected = Object.values(faultCounts).reduce((a, b) => a + b, 0);
  // The proxy, the double and the balancer live in this process: when its event loop stalls for
  // seconds (a machine busy with other work), every connection stalls with it, and the run
  // measures that, not the injected faults.
  const maxLagMs = loopDelay.max / 1e6;
  const invalid =
    maxLagMs > MAX_VALID_LAG_MS
      ? `this process's event loop stalled for ${Math.round(maxLagMs)} ms (over ${MAX_VALID_LAG_MS} ms): the machine was too busy for the timings to mean anything`
      : undefined;
  return {
    seed: options.seed,
    mode: `${options.quick ? "quick" : "full"}${options.faults ? "" : ", no faults"}${onStreams ? ", redis streams" : ""}`,
    valid: invalid === undefined,
    ...(invalid ? { invalid_because: invalid } : {}),
    occurrences: run.occurrences,
    jobs: run.jobIds.size,
    lost: verdict.lost.size,
    doubled: verdict.doubled.size,
    doubled_after_completion_crash: verdict.doubledAfterCompletionCrash.size,
    dead_retried_from_dlq: [...dlq.ids].filter((id) => expected.has(id)).length,
    unexpected_runs: verdict.unexpected.length,
    store_disagrees: disagree.length,
    quiesced: run.quiesced,
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
      app_down_share_during_load: Math.round(run.appDownShare * 100) / 100,
      processes_killed: fleet.counts.killed,
      processes_self_killed: fleet.counts.selfKilled,
      processes_exited_unexpectedly: fleet.counts.unexpected,
      duplicate_windows: faults.qstash_duplicate_window,
      orchestrator_loop_delay_p99_ms: round(loopDelay.percentile(99) / 1e6),
      orchestrator_loop_delay_max_ms: round(loopDelay.max / 1e6),
      ...streamsObserved,
    },
    store_status: findings.statuses,
    client_answers: client.statuses,
    lost_causes: findings.lostCauses,
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
    duration_s: round((Date.now() - run.started) / 1000),
    load_s: round((run.loadEnded - (run.t0 - 1_000)) / 1000),
    drain_s: round((run.drainEnded - run.loadEnded) / 1000),
    machine: {
      cpus: `${os.cpus().length} × ${os.cpus()[0]?.model ?? "unknown"}`,
      memory_gb: round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      load_average_at_start: round(run.loadAtStart),
      load_average_at_end: round(os.loadavg()[0] ?? 0),
    },
  };
}

/** Where a run's record goes: `bench/chaos.json`, or `bench/chaos-streams.json` for Streams. */
export function resultFile(transport: ChaosTransport): URL {
  return transport === "streams" ? STREAMS_OUTPUT : OUTPUT;
}

/** Write the run's record (see {@link resultFile}). */
export function writeResult(result: ChaosResult, transport: ChaosTransport = "qstash"): void {
  writeFileSync(resultFile(transport), `${JSON.stringify(result, null, 2)}\n`);
}

export function printSummary(
  r: {
    [k: string]: unknown;
    faults: Record<string, number>;
    observed: Record<string, number>;
  },
  logs: Record<string, number>,
  refused: string[],
  crashes: string[],
  written = "bench/chaos.json",
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
  console.log(`\nwritten to ${written}`);
}
