/**
 * @module
 * The Redis store's attempt operations (the port's `JobStore`): `beginRun`, `finishRun` and
 * `markDead`. Each one script, one round trip.
 */
import type { DeliveryToken, JobError, JobRecord, JobSpec } from "../../core/model.ts";
import type {
  BeginRunResult,
  FinishRunOptions,
  FinishRunResult,
  RateLimit,
  RunLimit,
  RunOutcome,
} from "../port.ts";
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
  // The delivery's arguments (beginRun-7.lua's D[1..19]), trailing '' left out.
  const args = [
    ...specArgs(spec),
    ttlArg(leaseMs),
    watchArg(c, reapAfterMs),
    node ?? "",
    ...beginLimitArgs(token, limit, rate),
  ];
  let end = args.length;
  while (end > BEGIN_REQUIRED && args[end - 1] === "") end--;
  args.length = end;
  const raw = c.runBatches
    ? await c.runBatches.begin.call(args)
    : await c.run(scripts.beginRun, beginKeys(c.keys), withStoreSettings(c, args));
  return fromJson<BeginRunResult>(raw);
}

/** finishRun's answer to a success it was asked not to read back (finishRun-7.lua). */
const RECORDED = '{"recorded":true}';

export async function finishRun(
  c: RedisContext,
  id: string,
  attempt: number,
  outcome: RunOutcome,
  reapAfterMs = DEFAULT_REAP_AFTER_MS,
  options?: FinishRunOptions,
): Promise<FinishRunResult> {
  // The attempt's arguments (finishRun-7.lua's A[1..8]), trailing '' left out: a success
  // without a result on Redis Streams sends three. A success answered without the job is `2`.
  const args = [id, String(attempt), outcome.ok ? (options?.recordOnly ? "2" : "1") : "0"];
  const watch = watchArg(c, reapAfterMs);
  if (outcome.ok) {
    const result = jsonArg(outcome.result);
    if (result !== "" || watch !== "") args.push(result);
    if (watch !== "") args.push("", "", "", watch);
  } else {
    args.push(
      "",
      outcome.final ? "1" : "0",
      JSON.stringify(outcome.error),
      eventErrorArg(outcome.error),
    );
    if (watch !== "") args.push(watch);
  }
  const raw = c.runBatches
    ? await c.runBatches.finish.call(args)
    : await c.run(scripts.finishRun, finishKeys(c.keys), withStoreSettings(c, args));
  if (errorCodeOf(raw) === ErrorCode.JobNotFound) return { kind: "stale", job: null };
  expectNoCode("finishRun", raw);
  if (raw === RECORDED) return { kind: "recorded" };
  // The record is parsed when first read: a runner reads it only after a failed attempt.
  if (typeof raw === "string" && raw.startsWith('{"ok":')) return new FinishedRun(raw);
  // A client that parses JSON answers (Upstash's) gives objects.
  const r = fromJson<
    Tagged<"ok", JobRecord> | Tagged<"stale", JobRecord> | Tagged<"recorded", true>
  >(raw);
  if ("recorded" in r) return { kind: "recorded" };
  return "ok" in r ? { kind: "ok", job: r.ok } : { kind: "stale", job: r.stale };
}

/**
 * `finishRun`'s answer `ok` whose record is parsed when `job` is first read. `job` is an own,
 * enumerable getter, the same function for every answer (`Object.defineProperty`): an object
 * literal with a `get` member would make a new function per answer, and V8 keeps such objects in
 * dictionary mode (docs/adr/0045-no-per-attempt-getters.md). Its state is in private fields: read
 * through a `Proxy` of the answer (or an object derived from it), `job` throws a `TypeError`; the
 * runner reads it directly.
 */
export class FinishedRun {
  readonly kind = "ok" as const;
  declare readonly job: JobRecord;
  readonly #raw: string;
  #job: JobRecord | undefined;

  constructor(raw: string) {
    this.#raw = raw;
    Object.defineProperty(this, "job", LAZY_JOB);
  }

  static jobOf(answer: FinishedRun): JobRecord {
    answer.#job ??= fromJson<Tagged<"ok", JobRecord>>(answer.#raw).ok;
    return answer.#job;
  }
}

const LAZY_JOB: PropertyDescriptor = {
  get(this: FinishedRun) {
    return FinishedRun.jobOf(this);
  },
  enumerable: true,
  configurable: true,
};

/**
 * The reaper's wait for an attempt's outbox watch; '' on Redis Streams, where an attempt has no
 * watch: the consumer group's pending list redelivers it (docs/adr/0033-no-watch-on-streams.md).
 */
function watchArg(c: RedisContext, reapAfterMs: number): string {
  return c.dispatch === "streams" ? "" : String(reapAfterMs);
}

/** A delivery's arguments `beginRun` always takes (the spec and the lease); the rest may be left out. */
const BEGIN_REQUIRED = 10;

/** A single `beginRun` / `finishRun` call's arguments: the store's retention and events cap first. */
function withStoreSettings(c: RedisContext, args: string[]): string[] {
  return [retentionArg(c.retention), c.eventsMaxLen, ...args];
}

/** beginRun's KEYS (refusePlacement takes the same, to skip as a begin does). */
export function beginKeys(k: Keys): string[] {
  return [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events];
}

function finishKeys(k: Keys): string[] {
  return [k.root, k.expiring, k.pending, k.metrics, k.events, k.outbox, k.outboxMsg];
}

/**
 * `beginRun` and `finishRun` in groups (see `CallBatch`), run with `run` on `keys`. A call's
 * arguments are a delivery's (an attempt's); the store's retention and events cap go once per
 * script call, before them.
 */
export function runBatches(
  run: RedisContext["run"],
  keys: Keys,
  retention: string,
  eventsMaxLen: string,
): { begin: CallBatch; finish: CallBatch } {
  const begin = beginKeys(keys);
  const finish = finishKeys(keys);
  const shared = [retention, eventsMaxLen];
  return {
    begin: new CallBatch(
      "beginRun",
      (args) => run(scripts.beginRun, begin, shared.concat(args)),
      (args, width) => run(scripts.beginRuns, begin, [String(width)].concat(shared, args)),
    ),
    finish: new CallBatch(
      "finishRun",
      (args) => run(scripts.finishRun, finish, shared.concat(args)),
      (args, width) => run(scripts.finishRuns, finish, [String(width)].concat(shared, args)),
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
