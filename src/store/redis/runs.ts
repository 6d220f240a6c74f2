/**
 * @module
 * The Redis store's attempt operations (the port's `JobStore`): `beginRun`, `finishRun` and
 * `markDead`. Each one script, one round trip.
 */
import type { DeliveryToken, JobError, JobRecord, JobSpec } from "../../core/model.ts";
import type { BeginRunResult, FinishRunResult, RateLimit, RunLimit, RunOutcome } from "../port.ts";
import { DEFAULT_REAP_AFTER_MS } from "../port.ts";
import { CallBatch } from "./call-batch.ts";
import {
  beginLimitArgs,
  errorCodeOf,
  eventErrorArg,
  fromJson,
  jsonArg,
  retentionArg,
  specArgs,
  tokenArgs,
  ttlArg,
} from "./codec.ts";
import { expectNoCode, type RedisContext, type Tagged } from "./context.ts";
import { ErrorCode } from "./errors.ts";
import type { Keys } from "./keys.ts";
import { scripts } from "./scripts.generated.ts";

export async function beginRun(
  c: RedisContext,
  spec: JobSpec,
  leaseMs: number,
  reapAfterMs = DEFAULT_REAP_AFTER_MS,
  token?: DeliveryToken,
  limit?: RunLimit,
  rate?: RateLimit,
  node?: string,
): Promise<BeginRunResult> {
  const args = [
    ...specArgs(spec),
    ttlArg(leaseMs),
    retentionArg(c.retention),
    c.eventsMaxLen,
    watchArg(c, reapAfterMs),
    ...tokenArgs(token),
    ...beginLimitArgs(limit, rate, node),
  ];
  let raw: unknown;
  if (c.runBatches) {
    // A batch takes every call's arguments at the same length: '' is an absent one.
    while (args.length < BEGIN_ARGS) args.push("");
    raw = await c.runBatches.begin.call(args);
  } else {
    raw = await c.run(scripts.beginRun, beginKeys(c.keys), args);
  }
  return fromJson<BeginRunResult>(raw);
}

export async function finishRun(
  c: RedisContext,
  id: string,
  attempt: number,
  outcome: RunOutcome,
  reapAfterMs = DEFAULT_REAP_AFTER_MS,
): Promise<FinishRunResult> {
  const args = [
    id,
    String(attempt),
    outcome.ok ? "1" : "0",
    outcome.ok ? jsonArg(outcome.result) : "",
    outcome.ok ? "" : JSON.stringify(outcome.error),
    !outcome.ok && outcome.final ? "1" : "0",
    retentionArg(c.retention),
    c.eventsMaxLen,
    outcome.ok ? "" : eventErrorArg(outcome.error),
    watchArg(c, reapAfterMs),
  ];
  const raw = c.runBatches
    ? await c.runBatches.finish.call(args)
    : await c.run(scripts.finishRun, finishKeys(c.keys), args);
  if (errorCodeOf(raw) === ErrorCode.JobNotFound) return { kind: "stale", job: null };
  expectNoCode("finishRun", raw);
  if (typeof raw === "string" && raw.startsWith('{"ok":')) {
    // The record is parsed when first read: a runner reads it only after a failed attempt.
    let job: JobRecord | undefined;
    return {
      kind: "ok",
      get job(): JobRecord {
        job ??= fromJson<Tagged<"ok", JobRecord>>(raw).ok;
        return job;
      },
    };
  }
  const r = fromJson<Tagged<"ok", JobRecord> | Tagged<"stale", JobRecord>>(raw);
  return "ok" in r ? { kind: "ok", job: r.ok } : { kind: "stale", job: r.stale };
}

/**
 * The reaper's wait for an attempt's outbox watch; '' on Redis Streams, where an attempt has no
 * watch: the consumer group's pending list redelivers it (docs/adr/0033-no-watch-on-streams.md).
 */
function watchArg(c: RedisContext, reapAfterMs: number): string {
  return c.dispatch === "streams" ? "" : String(reapAfterMs);
}

/** Arguments of one `beginRun` (and of each delivery in a `beginRuns` batch). */
const BEGIN_ARGS = 21;

function beginKeys(k: Keys): string[] {
  return [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events];
}

function finishKeys(k: Keys): string[] {
  return [k.root, k.expiring, k.pending, k.metrics, k.events, k.outbox, k.outboxMsg];
}

/** `beginRun` and `finishRun` in groups (see `CallBatch`), run with `run` on `keys`. */
export function runBatches(
  run: RedisContext["run"],
  keys: Keys,
): { begin: CallBatch; finish: CallBatch } {
  const begin = beginKeys(keys);
  const finish = finishKeys(keys);
  return {
    begin: new CallBatch(
      "beginRun",
      (args) => run(scripts.beginRun, begin, args),
      (args) => run(scripts.beginRuns, begin, args),
    ),
    finish: new CallBatch(
      "finishRun",
      (args) => run(scripts.finishRun, finish, args),
      (args) => run(scripts.finishRuns, finish, args),
    ),
  };
}

export async function markDead(
  c: RedisContext,
  spec: JobSpec,
  error: JobError,
  expect?: { attempts: number },
  token?: DeliveryToken,
): Promise<JobRecord | null> {
  const k = c.keys;
  const raw = await c.run(
    scripts.markDead,
    [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events],
    [
      ...specArgs(spec),
      JSON.stringify(error),
      retentionArg(c.retention),
      c.eventsMaxLen,
      eventErrorArg(error),
      expect === undefined ? "" : String(expect.attempts),
      ...tokenArgs(token),
    ],
  );
  return fromJson<JobRecord | null>(raw) ?? null;
}
