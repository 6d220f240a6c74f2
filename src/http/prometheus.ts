/**
 * @module
 * The store's counters as Prometheus text (exposition format 0.0.4): every family with `# HELP`
 * and `# TYPE`, durations in seconds, histograms cumulative with `le` buckets up to `+Inf`; and,
 * when the transport reports them, its queue's figures (`queue_length`, `queue_pending`, …).
 */
import type { DegradationLevel, Histogram, StoreStats } from "../store/port.ts";
import type { QueueStats } from "../transport/port.ts";

/** `Content-Type` of the exposition. */
export const PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

type Labels = Record<string, string>;

interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  samples: { suffix?: string; labels?: Labels; value: number }[];
}

const LEVELS: readonly DegradationLevel[] = ["normal", "degraded", "critical"];

/** Totals as counters: `[name, help, key]`. */
const TOTALS: readonly [string, string, keyof StoreStats["totals"]][] = [
  ["jobs_submitted_total", "Jobs submitted over the API or by handlers.", "submitted"],
  ["occurrences_dispatched_total", "Schedule occurrences committed by ticks.", "dispatched"],
  ["outbox_recovered_total", "Outbox messages re-published by ticks.", "recovered"],
  ["job_attempts_started_total", "Job attempts begun.", "started"],
  ["jobs_succeeded_total", "Jobs that succeeded.", "succeeded"],
  ["job_attempts_failed_total", "Job attempts that failed (retryable or not).", "failed"],
  ["jobs_dead_total", "Jobs that went to the dead-letter list.", "dead"],
  [
    "jobs_cancelled_total",
    "Jobs cancelled (queued, waiting, or running when asked to stop).",
    "cancelled",
  ],
  [
    "jobs_skipped_total",
    "Occurrences skipped: the previous one still ran (overlap skip), or their schedule was paused or deleted before they began.",
    "skipped",
  ],
  [
    "job_deliveries_limited_total",
    "Deliveries held back by a handler's concurrency or rate limit (not attempts).",
    "limited",
  ],
  [
    "job_deliveries_unplaced_total",
    "Deliveries a node refused for the job's placement (not attempts).",
    "unplaced",
  ],
  ["jobs_retried_total", "Dead jobs re-queued from the dead-letter list.", "retried"],
  ["ticks_total", "Ticks that took the lease (idle ticks write nothing).", "ticks"],
];

/** Histograms: `[name, help, key]`. */
const HISTOGRAMS: readonly [string, string, keyof StoreStats & `${string}Ms`][] = [
  [
    "dispatch_lag_seconds",
    "From a job's run time (or its submit, if later) to its first attempt's start.",
    "dispatchLagMs",
  ],
  ["handler_duration_seconds", "Duration of finished attempts.", "handlerDurationMs"],
  ["tick_duration_seconds", "Duration of leader ticks.", "tickDurationMs"],
  [
    "leader_lease_acquisition_seconds",
    "Round trip of beginTick in leader ticks.",
    "leaseAcquisitionMs",
  ],
];

/**
 * The exposition of `stats`, and of `queue` when given (the transport's queue,
 * `engine.queueStats()`; without it no `queue_length`, `queue_pending`, … family is written);
 * every metric name starts with `prefix`.
 *
 * @example
 * renderPrometheus(await engine.stats(), await engine.queueStats());
 * // # HELP tickwork_jobs_succeeded_total Jobs that succeeded.
 * // # TYPE tickwork_jobs_succeeded_total counter
 * // tickwork_jobs_succeeded_total 42
 */
export function renderPrometheus(
  stats: StoreStats,
  queue?: QueueStats,
  prefix = "tickwork_",
): string {
  const seconds = (ms: number) => ms / 1000;
  const { leader, degradation } = stats;
  const families: Family[] = [
    {
      name: "jobs",
      help: "Jobs not finished, by status (failed: waiting for a retry; waiting: for its dependencies).",
      type: "gauge",
      samples: (["waiting", "queued", "running", "failed"] as const).map((status) => ({
        labels: { status },
        value: stats.jobs[status],
      })),
    },
    gauge("queue_depth", "Due jobs not started (queued and due, or failed).", stats.backlog),
    gauge(
      "outbox_messages",
      "Messages not yet acknowledged by the queue, and watches of started attempts.",
      stats.outbox,
    ),
    ...TOTALS.map(([name, help, key]) => counter(name, help, stats.totals[key])),
    ...HISTOGRAMS.map(([name, help, key]) => histogram(name, help, stats[key], seconds)),
    gauge(
      "dispatch_lag_average_seconds",
      "Moving average of the dispatch lag.",
      seconds(stats.averages.lagMs),
    ),
    gauge(
      "failure_rate_average",
      "Moving average of attempt failures (0-1).",
      stats.averages.failureRate,
    ),
    gauge(
      "leader_active",
      "Whether the tick lease is held now (1) or not (0).",
      leader.active ? 1 : 0,
    ),
    {
      name: "leader_info",
      help: "The holder of the last leader tick (value 1).",
      type: "gauge",
      samples: leader.holder === null ? [] : [{ labels: { holder: leader.holder }, value: 1 }],
    },
    gauge(
      "leader_lease_remaining_seconds",
      "Time left on the tick lease.",
      seconds(leader.leaseRemainingMs),
    ),
    counter(
      "leader_changes_total",
      "Leader ticks whose holder differed from the previous one.",
      leader.changes,
    ),
    counter(
      "leader_flaps_total",
      "Leader changes within 5 minutes of the previous change.",
      leader.flaps,
    ),
    gauge(
      "leader_acquired_timestamp_seconds",
      "When the current holder took the lease (0: never).",
      seconds(leader.acquiredAt),
    ),
    {
      name: "degradation_level",
      help: "The degradation level: 1 for the current one, 0 for the others.",
      type: "gauge",
      samples: LEVELS.map((level) => ({
        labels: { level },
        value: degradation.level === level ? 1 : 0,
      })),
    },
    gauge(
      "degradation_since_timestamp_seconds",
      "When the current degradation level was entered (0: never changed).",
      seconds(degradation.since),
    ),
    ...(queue ? queueFamilies(queue) : []),
  ];
  return families
    .filter((family) => family.samples.length > 0)
    .map((family) => renderFamily(prefix, family))
    .join("");
}

/**
 * The node registry's gauges, `nodes{status="live"|"stale"}`: long-lived processes that
 * heartbeat (`GET /v1/nodes` lists them). Appended to {@link renderPrometheus}'s text where nodes
 * register (not on serverless platforms).
 *
 * @example
 * renderNodeMetrics({ live: 3, stale: 1 });
 * // # HELP tickwork_nodes Registered nodes by status (stale: no heartbeat within its TTL).
 * // # TYPE tickwork_nodes gauge
 * // tickwork_nodes{status="live"} 3
 * // tickwork_nodes{status="stale"} 1
 */
export function renderNodeMetrics(
  counts: { live: number; stale: number },
  prefix = "tickwork_",
): string {
  return renderFamily(prefix, {
    name: "nodes",
    help: "Registered nodes by status (stale: no heartbeat within its TTL).",
    type: "gauge",
    samples: (["live", "stale"] as const).map((status) => ({
      labels: { status },
      value: counts[status],
    })),
  });
}

/**
 * `webhook_requests_total{endpoint,outcome}` from the store's webhook counters (every replica's),
 * with a 0 `accepted` sample for each configured endpoint not counted yet (docs/webhooks.md).
 */
export function renderWebhookMetrics(
  counts: ReadonlyMap<string, ReadonlyMap<string, number>>,
  endpoints: readonly string[],
  prefix = "tickwork_",
): string {
  const samples: Family["samples"] = [];
  for (const [endpoint, byOutcome] of counts) {
    for (const [outcome, value] of byOutcome)
      samples.push({ labels: { endpoint, outcome }, value });
  }
  for (const endpoint of endpoints) {
    if (!counts.has(endpoint))
      samples.push({ labels: { endpoint, outcome: "accepted" }, value: 0 });
  }
  return renderFamily(prefix, {
    name: "webhook_requests_total",
    help: 'Inbound webhook requests by endpoint and outcome (unknown endpoints: endpoint="_unknown").',
    type: "counter",
    samples,
  });
}

/** The transport's queue (Redis Streams): what it holds now, and this process's claims. */
function queueFamilies(queue: QueueStats): Family[] {
  return [
    gauge(
      "queue_length",
      "Entries on the transport's queue: not read by a worker yet, or read and not acknowledged.",
      queue.length,
    ),
    gauge("queue_pending", "Deliveries read by a worker and not acknowledged yet.", queue.pending),
    gauge(
      "queue_oldest_pending_seconds",
      "Age of the oldest pending delivery, since it was put on the queue (0: none pending).",
      queue.oldestPendingMs / 1000,
    ),
    gauge(
      "queue_delayed",
      "Deliveries waiting for their not-before time (delays, retries after backoff).",
      queue.delayed,
    ),
    gauge(
      "queue_consumers",
      "Consumers the queue knows, including killed ones not deleted yet (see docs/streams.md).",
      queue.consumers,
    ),
    counter(
      "queue_claimed_total",
      "Deliveries every worker of the deployment took over from stopped consumers (kept in the store: every process reports the same count).",
      queue.claimed,
    ),
  ];
}

function gauge(name: string, help: string, value: number): Family {
  return { name, help, type: "gauge", samples: [{ value }] };
}

function counter(name: string, help: string, value: number): Family {
  return { name, help, type: "counter", samples: [{ value }] };
}

/** The port's per-bucket counts (ms) as cumulative `le` buckets in the unit `scale` gives. */
function histogram(
  name: string,
  help: string,
  h: Histogram,
  scale: (ms: number) => number,
): Family {
  let cumulative = 0;
  const buckets = h.bounds.map((bound, i) => {
    cumulative += h.counts[i] ?? 0;
    return { suffix: "_bucket", labels: { le: formatValue(scale(bound)) }, value: cumulative };
  });
  cumulative += h.counts[h.bounds.length] ?? 0;
  return {
    name,
    help,
    type: "histogram",
    samples: [
      ...buckets,
      { suffix: "_bucket", labels: { le: "+Inf" }, value: cumulative },
      { suffix: "_sum", value: scale(h.sum) },
      { suffix: "_count", value: h.count },
    ],
  };
}

function renderFamily(prefix: string, family: Family): string {
  const name = prefix + family.name;
  let out = `# HELP ${name} ${escapeHelp(family.help)}\n# TYPE ${name} ${family.type}\n`;
  for (const sample of family.samples) {
    const labels = Object.entries(sample.labels ?? {})
      .map(([key, value]) => `${key}="${escapeLabel(value)}"`)
      .join(",");
    out += `${name}${sample.suffix ?? ""}${labels ? `{${labels}}` : ""} ${formatValue(sample.value)}\n`;
  }
  return out;
}

/** A sample value as the format spells it (Go's `ParseFloat` syntax, `+Inf`, `-Inf`, `NaN`). */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Number.POSITIVE_INFINITY) return "+Inf";
  if (value === Number.NEGATIVE_INFINITY) return "-Inf";
  return String(value);
}

/** Label values escape `\`, `"` and line feeds. */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

/** Help text escapes `\` and line feeds. */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n");
}
