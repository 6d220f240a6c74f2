/**
 * @module
 * From the ledger to the verdict. `lost`: an expected job or occurrence whose handler never
 * completed. `doubled`: one whose handler completed more than once — except when every extra
 * completion belongs to a run whose process died after the side effect and before `finishRun`
 * (the documented window; injected on purpose, or a random kill that happened to land there):
 * those are `doubled_after_completion_crash`. Each extra completion gets its cause, from the
 * ledger's marks and the orchestrator's record of how each process ended.
 */
import type { JobRecord } from "../../src/index.ts";
import type { Mark } from "./ledger.ts";

/** Why a completion of a doubled job was not the recorded one. */
export type ExtraCause =
  /**
   * The process killed itself after completion, before finishRun (injected): this run's own X,
   * or another run's X in the same process (a crash takes every run in the process with it).
   */
  | "crash_after_completion_injected"
  /** The orchestrator's random SIGKILL landed after completion, before finishRun returned. */
  | "crash_after_completion_random"
  /** finishRun threw (the store was unreachable): the result was not recorded, the run repeats. */
  | "finish_failed"
  /** finishRun answered stale: the run lease had expired and another attempt had taken over
   * (or the job was finished otherwise); not a lost reply re-sent, see {@link judge}. */
  | "finish_stale"
  /** finishRun recorded a failure for a run that completed (its handler finished after the timeout). */
  | "finish_recorded_failure"
  /**
   * The run completed its side effect past its handler's timeout, its signal not aborted yet: its
   * process stalled (SIGSTOP, in the Streams runs) past the run lease, and on waking the
   * handler's own timers fired before the timeout's. Not the documented window: doubled. Either
   * nobody had taken the job over, and the runner recorded the attempt as timed out (the timeout
   * timer fired while the side effect was being written), so the job ran again…
   */
  | "completed_late_recorded_as_timeout"
  /** … or another attempt had started meanwhile (finishRun answered stale). */
  | "completed_late_taken_over"
  /** finishRun recorded success for this run too: a plain violation. */
  | "recorded_twice"
  | "unexplained";

/** The F mark of a run whose success `finishRun` recorded. */
const RECORDED = "ok:success";

const CRASH_CAUSES: ReadonlySet<ExtraCause> = new Set([
  "crash_after_completion_injected",
  "crash_after_completion_random",
]);

interface RunInfo {
  jobId: string;
  attempt: number;
  pid: number;
  started: boolean;
  completed: boolean;
  crashInjected: boolean;
  /** The C mark said `late:<ms>` (see {@link ExtraCause} `completed_late_…`). */
  late: boolean;
  finish?: string;
  finishError?: string;
}

/** The verdict. */
export interface Verdict {
  expected: number;
  lost: Map<string, string>;
  doubled: Map<string, ExtraCause[]>;
  doubledAfterCompletionCrash: Map<string, ExtraCause[]>;
  unexpected: string[];
  runs: number;
  /** Runs that started the handler and never completed because their process was killed
   * (by the orchestrator, or by an injected crash of another run in the same process). */
  interruptedByKill: number;
  /** Injected crashes after completion (X marks). */
  crashesAfterCompletion: number;
  /** Random kills that landed between completion and finishRun. */
  randomKillsAfterCompletion: number;
  /** finishRun calls that threw. */
  finishFailures: number;
  /** A job's ledger marks in order: `<kind><attempt>@<run>[:detail]`. */
  story(jobId: string): string;
}

/** What the store says about each expected id, for the lost ones' explanation. */
export type StoreView = Map<string, JobRecord | null>;

/**
 * Judge a run.
 * @param ends how each process ended, by pid: `killed` (the orchestrator's random SIGKILL),
 *   `self-killed` (the injected crash after completion), or anything else
 */
export function judge(
  expected: Set<string>,
  done: Map<string, number>,
  marks: Mark[],
  ends: Map<number, string>,
  store: StoreView,
): Verdict {
  const runs = new Map<string, RunInfo>();
  const runOf = (m: Mark): RunInfo => {
    let info = runs.get(m.run);
    if (!info) {
      info = {
        jobId: m.jobId,
        attempt: m.attempt,
        pid: Number(m.run.split(".")[1]),
        started: false,
        completed: false,
        crashInjected: false,
        late: false,
      };
      runs.set(m.run, info);
    }
    return info;
  };
  const completions = new Map<string, RunInfo[]>();
  /** Attempt numbers started, per job. */
  const starts = new Map<string, number[]>();
  const stories = new Map<string, string[]>();
  for (const m of marks) {
    const line = `${m.kind}${m.attempt}@${m.run}${m.detail ? `:${m.detail.slice(0, 60)}` : ""}`;
    stories.set(m.jobId, [...(stories.get(m.jobId) ?? []), line]);
    const info = runOf(m);
    if (m.kind === "S") {
      info.started = true;
      starts.set(m.jobId, [...(starts.get(m.jobId) ?? []), m.attempt]);
    } else if (m.kind === "C") {
      info.completed = true;
      info.late = m.detail.startsWith("late:");
      completions.set(m.jobId, [...(completions.get(m.jobId) ?? []), info]);
    } else if (m.kind === "X") info.crashInjected = true;
    else if (m.kind === "F") info.finish = m.detail;
    else info.finishError = m.detail;
  }

  const lost = new Map<string, string>();
  for (const id of expected) {
    if ((done.get(id) ?? 0) > 0) continue;
    const job = store.get(id);
    lost.set(id, job ? describeJob(job) : "no record");
  }

  const doubled = new Map<string, ExtraCause[]>();
  const doubledAfterCompletionCrash = new Map<string, ExtraCause[]>();
  for (const [id, n] of done) {
    if (n < 2) continue;
    const runsOfJob = completions.get(id) ?? [];
    const recorded = runsOfJob.filter((r) => r.finish === RECORDED);
    // A `finishRun` whose reply was lost is re-sent by ioredis and answers `stale` the second time:
    // its run is the recorded one when the job succeeded and no later attempt started.
    if (recorded.length === 0 && store.get(id)?.status === "succeeded") {
      const last = runsOfJob.at(-1);
      const later = starts.get(id)?.some((attempt) => last && attempt > last.attempt);
      if (last?.finish === "stale:success" && !later) recorded.push(last);
    }
    const causes: ExtraCause[] = [];
    for (const r of runsOfJob) {
      if (recorded.includes(r)) {
        if (r !== recorded[0]) causes.push("recorded_twice");
        continue;
      }
      causes.push(causeOf(r, ends));
    }
    if (causes.length > 0 && causes.every((c) => CRASH_CAUSES.has(c))) {
      doubledAfterCompletionCrash.set(id, causes);
    } else doubled.set(id, causes);
  }

  let interruptedByKill = 0;
  let crashesAfterCompletion = 0;
  let randomKillsAfterCompletion = 0;
  let finishFailures = 0;
  for (const r of runs.values()) {
    if (r.started && !r.completed && died(r, ends) && r.finish === undefined) {
      interruptedByKill++;
    }
    if (r.crashInjected) crashesAfterCompletion++;
    if (causeOf(r, ends) === "crash_after_completion_random" && r.completed) {
      randomKillsAfterCompletion++;
    }
    if (r.finishError !== undefined) finishFailures++;
  }

  return {
    expected: expected.size,
    lost,
    doubled,
    doubledAfterCompletionCrash,
    unexpected: [...done.keys()].filter((id) => !expected.has(id)),
    runs: [...runs.values()].filter((r) => r.started).length,
    interruptedByKill,
    crashesAfterCompletion,
    randomKillsAfterCompletion,
    finishFailures,
    story: (jobId) => stories.get(jobId)?.join(" ") ?? "no marks",
  };
}

/** Whether the run's process was killed (by the orchestrator or by itself). */
function died(r: RunInfo, ends: Map<number, string>): boolean {
  const end = ends.get(r.pid);
  return end === "killed" || end === "self-killed";
}

function causeOf(r: RunInfo, ends: Map<number, string>): ExtraCause {
  if (r.crashInjected) return "crash_after_completion_injected";
  if (r.late) {
    return r.finish?.startsWith("stale")
      ? "completed_late_taken_over"
      : "completed_late_recorded_as_timeout";
  }
  if (r.finishError !== undefined) return "finish_failed";
  if (r.finish?.startsWith("stale")) return "finish_stale";
  if (r.finish !== undefined) return "finish_recorded_failure";
  if (r.finish === undefined && ends.get(r.pid) === "killed")
    return "crash_after_completion_random";
  if (r.finish === undefined && ends.get(r.pid) === "self-killed") {
    return "crash_after_completion_injected";
  }
  return "unexplained";
}

function describeJob(job: JobRecord): string {
  const parts = [`status=${job.status}`, `attempts=${job.attempts}`];
  if (job.startedAt !== undefined) parts.push(`startedAt=${new Date(job.startedAt).toISOString()}`);
  if (job.error) parts.push(`error=${job.error.name}: ${job.error.message.slice(0, 120)}`);
  return parts.join(" ");
}

/** Counts of each cause over a map of doubled ids. */
export function causeCounts(doubled: Map<string, ExtraCause[]>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const causes of doubled.values()) {
    for (const c of causes) out[c] = (out[c] ?? 0) + 1;
  }
  return out;
}
