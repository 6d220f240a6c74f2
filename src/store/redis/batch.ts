/**
 * @module
 * The Redis store's batch submit (the port's `BatchSubmit`): one chunk of a tenant's jobs, one
 * script (`lua/submitMany-7.lua`), one round trip — over TCP and over `@upstash/redis` REST alike.
 */
import type { JobRecord } from "../../core/model.ts";
import { MAX_SUBMIT_CHUNK, type SubmitItem, type SubmitItemResult } from "../port/batch.ts";
import type { Admission, Denied } from "../port.ts";
import {
  fromJson,
  jobData,
  optionalArg,
  policyArg,
  quotaArgs,
  retentionArg,
  ttlArg,
} from "./codec.ts";
import type { RedisContext } from "./context.ts";
import { getJob, type Written, writtenResult } from "./jobs.ts";
import { scripts } from "./scripts.generated.ts";

/** Jobs a chunk's answer names (replays too large to carry) read at once. */
const NAMED_READS_AT_ONCE = 4;

/** One item's answer as the script writes it (see the script's header). */
type RawItem =
  | { replayed: JobRecord }
  | { replayedAs: number }
  | { replayedId: string }
  | { denied: Denied }
  | { unknown: string[] }
  | Written;

export async function submitJobs(
  c: RedisContext,
  items: SubmitItem[],
  timing: { recoverGraceMs: number },
  admission?: Admission,
  rerun = false,
): Promise<SubmitItemResult[]> {
  if (items.length === 0) return [];
  if (items.length > MAX_SUBMIT_CHUNK) {
    throw new RangeError(`submitJobs takes at most ${MAX_SUBMIT_CHUNK} items, got ${items.length}`);
  }
  const tenant = items[0]!.job.tenant;
  if (items.some((item) => item.job.tenant !== tenant)) {
    throw new RangeError("submitJobs takes the jobs of one tenant");
  }
  const k = c.keys;
  const degradation = admission?.degradation;
  const data = items.map((item) => jobData(item.job));
  const args: string[] = [
    String(timing.recoverGraceMs),
    tenant,
    ttlArg(c.retention.idempotencyMs),
    c.eventsMaxLen,
    policyArg(degradation),
    String(degradation?.degradedDelayMs ?? 0),
    degradation?.critical ?? "reject",
    String(degradation?.criticalDelayMs ?? 0),
    String(degradation?.retryAfterMs ?? 0),
    ...quotaArgs(admission?.quota),
    c.dispatch === "streams" ? "streams" : "",
    String(degradation?.evaluateEveryMs ?? 0),
    retentionArg(c.retention),
    String(items.length),
  ];
  items.forEach(({ job, runAt, delayMs }, i) => {
    args.push(
      job.id,
      data[i]!,
      optionalArg(runAt),
      String(delayMs),
      job.idempotencyKey ?? "",
      job.handler,
      (job.after ?? []).join(" "),
      job.onFailure === "run" ? "run" : "",
    );
  });
  const raw = await c.run(
    scripts.submitMany,
    [k.root, k.outbox, k.outboxMsg, k.pending, k.metrics, k.events, k.degrade],
    args,
  );
  const answers = fromJson<RawItem[]>(raw);
  if (!Array.isArray(answers) || answers.length !== items.length) {
    throw new TypeError(`submitMany answered ${String(raw).slice(0, 80)}`);
  }
  // Replayed jobs too large to carry in the reply (see the script): each read on its own, once.
  const ids = new Set<string>();
  for (const r of answers) if ("replayedId" in r) ids.add(r.replayedId);
  const named = new Map<string, JobRecord | null>();
  // A few at a time: over a REST store one by one would be a round trip each, and all at once
  // would queue up to 200 large replies on the connection.
  const pending = [...ids];
  for (let i = 0; i < pending.length; i += NAMED_READS_AT_ONCE) {
    const slice = pending.slice(i, i + NAMED_READS_AT_ONCE);
    const jobs = await Promise.all(slice.map((id) => getJob(c, id, tenant)));
    slice.forEach((id, k) => {
      named.set(id, jobs[k] ?? null);
    });
  }
  const results: (SubmitItemResult | undefined)[] = [];
  /** Items whose replayed job was gone by the time it was read: submitted again below. */
  const gone: number[] = [];
  answers.forEach((r, i) => {
    if ("replayedId" in r) {
      const job = named.get(r.replayedId);
      if (job) results.push({ job, replayed: true });
      else {
        results.push(undefined);
        gone.push(i);
      }
      return;
    }
    // A later replay of the same job: the record an earlier item's answer carried.
    const earlier = "replayedAs" in r ? results[r.replayedAs] : undefined;
    if (earlier !== undefined && "job" in earlier && earlier.replayed) results.push({ ...earlier });
    else if ("replayedAs" in r && answers[r.replayedAs] && "replayedId" in answers[r.replayedAs]!) {
      results.push(undefined);
      gone.push(i);
    } else if ("replayedAs" in r)
      throw new TypeError(`submitMany answered replayedAs ${r.replayedAs}`);
    else results.push(decode(c, r, data[i]!, items[i]!, timing.recoverGraceMs));
  });
  if (gone.length > 0) {
    // Expired or dropped between the two reads: each is judged again, as a submit after its
    // job went is (its key names no job now, so it is stored anew). Once: a second time it is
    // stored or carried.
    if (rerun) throw new TypeError("submitMany named a replayed job twice that was gone");
    const again = await submitJobs(
      c,
      gone.map((i) => items[i]!),
      timing,
      admission,
      true,
    );
    gone.forEach((i, k) => {
      results[i] = again[k];
    });
  }
  return results as SubmitItemResult[];
}

/** One item's result, rebuilt as `submitJob` rebuilds its answer (./jobs.ts). */
function decode(
  c: RedisContext,
  r: Exclude<RawItem, { replayedAs: number } | { replayedId: string }>,
  data: string,
  item: SubmitItem,
  recoverGraceMs: number,
): SubmitItemResult {
  if ("replayed" in r) return { job: r.replayed, replayed: true };
  if ("denied" in r) return { denied: r.denied };
  if ("unknown" in r) return { unknown: r.unknown };
  return writtenResult(c, r, data, item.job.id, recoverGraceMs);
}
