/**
 * @module
 * The fault suite's verdict: the store's final record of every expected id (read on a direct
 * connection), judged against the ledger (see `judge` in `report.ts`), with each lost id's cause
 * and each id's story at the queue from the double's delivery records.
 */
import type { Redis } from "ioredis";
import type { JobRecord } from "../../src/index.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import type { DeliveryRecord } from "../../test/support/qstash-double/index.ts";
import type { Fleet } from "./fleet.ts";
import { PREFIX } from "./intensity.ts";
import type { Ledger } from "./ledger.ts";
import { judge, type StoreView, type Verdict } from "./report.ts";
import { pool } from "./util.ts";

export interface Findings {
  verdict: Verdict;
  /** The store's final record of each expected id (`null`: none). */
  view: StoreView;
  /** Expected ids by final status (`missing`: no record). */
  statuses: Record<string, number>;
  /** Not succeeded in the store, yet not lost by the ledger. */
  disagree: [string, JobRecord | null][];
  /** Lost ids by cause (see {@link lostCause}). */
  lostCauses: Record<string, number>;
  /** A job's story at the queue. */
  history: (jobId: string) => string;
  /** The fate of every process a ledger story mentions. */
  fates: (story: string) => string;
}

export async function findings(
  expected: Set<string>,
  /** `deliveries`: the double's delivery records; undefined on Streams (no delivery log). */
  parts: { direct: Redis; ledger: Ledger; fleet: Fleet; deliveries?: DeliveryRecord[] },
): Promise<Findings> {
  const { direct, ledger, fleet } = parts;
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
  /** The fate of every process a ledger story mentions (runs are `<slot>.<pid>.<n>`). */
  const fates = (story: string) =>
    [...new Set([...story.matchAll(/@\d+\.(\d+)\./g)].map((m) => Number(m[1])))]
      .map((pid) => fleet.fate(pid))
      .join(" | ");
  const history = parts.deliveries
    ? queueHistory(parts.deliveries)
    : () => "no delivery log (Redis Streams)";
  const lostCauses: Record<string, number> = {};
  for (const id of verdict.lost.keys()) {
    const cause = lostCause(view.get(id) ?? null, history(id));
    lostCauses[cause] = (lostCauses[cause] ?? 0) + 1;
  }
  return { verdict, view, statuses, disagree, lostCauses, history, fates };
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
