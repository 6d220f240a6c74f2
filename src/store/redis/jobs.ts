/**
 * @module
 * The Redis store's job operations (the port's `JobStore`) other than an attempt's (those are in
 * `runs.ts`): submit, read, cancel and list jobs, and the dead-letter list. Each one script, one
 * round trip.
 */
import { rememberJobJson } from "../../core/message-json.ts";
import {
  DEFAULT_TENANT,
  type JobRecord,
  type JobSpec,
  type NewJob,
  type OutboxMessage,
} from "../../core/model.ts";
import { unknownDependencies } from "../port/deps.ts";
import type {
  Admission,
  CancelResult,
  DeadQuery,
  DegradationLevel,
  Denied,
  ListJobsQuery,
  Page,
  QuotaState,
  SubmitDenied,
  SubmitResult,
  SubmitTiming,
} from "../port.ts";
import { WEBHOOK_HISTORY } from "../port.ts";
import { CallBatch } from "./call-batch.ts";
import {
  admissionArg,
  cursorArgs,
  errorCodeOf,
  fromJson,
  jobData,
  limitArg,
  luaJson,
  optionalArg,
  quotaArgs,
  type RawPage,
  retentionArg,
  toInt,
  toPage,
  ttlArg,
} from "./codec.ts";
import { expectNoCode, type RedisContext, type Tagged } from "./context.ts";
import { ErrorCode } from "./errors.ts";
import type { Keys } from "./keys.ts";
import { scripts } from "./scripts.generated.ts";

/** How many leading arguments of submitJob are always sent; the rest may be left out. */
const OPTIONAL_FROM = 10;

/** Each store's settings as `submitJob` takes them (one text, the same on every submit). */
const storeSettingTexts = new WeakMap<RedisContext, string>();

function storeSettingsArg(c: RedisContext): string {
  let text = storeSettingTexts.get(c);
  if (text === undefined) {
    text = `${c.eventsMaxLen} ${c.dispatch === "streams" ? "streams" : "outbox"} ${retentionArg(c.retention)}`;
    storeSettingTexts.set(c, text);
  }
  return text;
}

/**
 * The `job.created` event after its `"at"` member (the script knows the time): the job's id,
 * handler, tenant, schedule and webhook, closing brace included.
 */
function createdEventTail(job: NewJob, webhook: SubmitTiming["webhook"]): string {
  let tail = `,"jobId":${luaJson(job.id)},"handler":${luaJson(job.handler)},"tenant":${luaJson(job.tenant)}`;
  if (job.scheduleId !== undefined && job.scheduleId !== "") {
    tail += `,"scheduleId":${luaJson(job.scheduleId)}`;
  }
  if (webhook?.endpoint) {
    tail += `,"webhook":{"endpoint":${luaJson(webhook.endpoint)}`;
    if (webhook.eventId) tail += `,"eventId":${luaJson(webhook.eventId)}`;
    tail += "}";
  }
  return `${tail}}`;
}

export async function submitJob(
  c: RedisContext,
  job: NewJob,
  timing: SubmitTiming,
  admission?: Admission,
): Promise<SubmitResult | SubmitDenied> {
  const k = c.keys;
  // A key of its own (a webhook's): it lives its TTL or the store's, the longer, and the record
  // at least as long (keepUntil).
  const keyMs = Math.max(c.retention.idempotencyMs, timing.idempotencyMs ?? 0);
  const data = jobData(job);
  const args = [
    job.id,
    data,
    optionalArg(timing.runAt),
    String(timing.delayMs),
    String(timing.recoverGraceMs),
    job.tenant,
    job.handler,
    storeSettingsArg(c),
    admissionArg(admission?.degradation),
    createdEventTail(job, timing.webhook),
    // From here on the script reads an absent argument as '': trailing empty ones are left out.
    job.idempotencyKey ?? "",
    ttlArg(keyMs),
    job.scheduleId ?? "",
    job.overlap ?? "",
    optionalArg(job.fireAt),
    ...quotaArgs(admission?.quota),
    (job.after ?? []).join(" "),
    job.onFailure === "run" ? "run" : "",
    // Any key of its own, even a shorter one: the record must outlive the key (the cap skips it).
    job.idempotencyKey !== undefined && timing.idempotencyMs !== undefined ? ttlArg(keyMs) : "",
    timing.webhook ? (timing.webhook.log ?? timing.webhook.endpoint) : "",
    timing.webhook?.eventId ?? "",
    timing.webhook ? String(WEBHOOK_HISTORY) : "",
  ];
  let end = args.length;
  while (end > OPTIONAL_FROM && args[end - 1] === "") end--;
  // Without its key, the key's TTL is unused.
  if (end === OPTIONAL_FROM + 2 && args[OPTIONAL_FROM] === "") end = OPTIONAL_FROM;
  args.length = end;
  const raw = c.submitBatch
    ? await c.submitBatch.call(args)
    : await c.run(scripts.submitJob, submitKeys(k), args);
  const r = fromJson<
    Tagged<"replayed", JobRecord> | Tagged<"denied", Denied> | Tagged<"unknown", string[]> | Written
  >(raw);
  if ("replayed" in r) return { job: r.replayed, replayed: true };
  if ("denied" in r) return { denied: r.denied };
  if ("unknown" in r) throw unknownDependencies(r.unknown);
  return writtenResult(c, r, data, job.id, timing.recoverGraceMs);
}

function submitKeys(k: Keys): string[] {
  return [k.root, k.outbox, k.outboxMsg, k.pending, k.metrics, k.events, k.degrade];
}

/**
 * A group of submits goes as soon as two wait and they are as many as those under way (see
 * `CallBatch`): a few loops that each await a submit then keep Redis busy with one pair while
 * they make the next (in step, as one group, they lost a third of their submits per second;
 * docs/adr/0043-submits-in-groups.md), and a busy server's groups grow to 16
 * (docs/adr/0056-submit-groups-that-grow.md).
 */
const SUBMIT_SEND_AT = 2;

/**
 * Submit groups under way at once. Each is one HTTP request's wait: at 4, as a worker's begins and
 * finishes have, a server under load held the requests arriving meanwhile a round trip, and it
 * answered about a seventh fewer of them a second with the same CPU (docs/adr/0052-more-submits-under-way.md).
 */
const SUBMIT_MAX_IN_FLIGHT = 64;

/**
 * `submitJob` in groups (see `CallBatch`), run with `run` on `keys`: a call's arguments are one
 * submit's, as `submitJob` takes them.
 */
export function submitBatch(run: RedisContext["run"], keys: Keys): CallBatch {
  const submit = submitKeys(keys);
  return new CallBatch(
    "submitJob",
    (args) => run(scripts.submitJob, submit, args),
    (args, width) => run(scripts.submitJobs, submit, [String(width)].concat(args)),
    SUBMIT_SEND_AT,
    SUBMIT_MAX_IN_FLIGHT,
  );
}

/** What the submit scripts answer for a job they wrote (see their headers). */
export interface Written {
  createdAt: number;
  runAt: number;
  status?: "waiting" | "cancelled";
  finishedAt?: number;
  quota?: QuotaState;
  degradation?: { level: DegradationLevel; delayedMs: number };
}

/**
 * A written job's result, from the script's answer `r` and the `data` text it stored: the spec is
 * the text plus the stamps, rebuilt the way a read would (once: the message carries it, the
 * record is a copy with the job's state). Also for each item of a batch (./batch.ts).
 */
export function writtenResult(
  c: RedisContext,
  r: Written,
  data: string,
  id: string,
  recoverGraceMs: number,
): SubmitResult {
  // Built by assignment, never as `{ ...spec, more }`: on Node 20 a spread followed by more
  // members costs microseconds (docs/adr/0027-objects-on-hot-paths.md).
  const stored = JSON.parse(data) as JobSpec;
  stored.createdAt = r.createdAt;
  stored.runAt = r.runAt;
  const record = Object.assign({}, stored) as JobRecord;
  record.status = r.status ?? "queued";
  record.attempts = 0;
  if (r.finishedAt !== undefined) record.finishedAt = r.finishedAt;
  const result: SubmitResult = { job: record, replayed: false };
  // Dispatched to the stream by the script itself: nothing left to publish; a waiting (or
  // cancelled) job is not dispatched at all.
  if (c.dispatch === "outbox" && r.status === undefined) {
    // The queue body is this spec's JSON: the stored text with the two stamps appended, as
    // `JSON.stringify` would write them last (the text is JSON.stringify output, so it parses and
    // re-serialises to itself).
    rememberJobJson(
      stored,
      `${data === "{}" ? "{" : `${data.slice(0, -1)},`}"createdAt":${JSON.stringify(r.createdAt)},"runAt":${JSON.stringify(r.runAt)}}`,
    );
    result.message = {
      id,
      dedupId: id,
      job: stored,
      notBefore: r.runAt,
      recoverAt: r.runAt + recoverGraceMs,
    };
  }
  if (r.quota) result.quota = r.quota;
  if (r.degradation) result.degradation = r.degradation;
  return result;
}

/** Ids per script call: a flow's 100 children may name 100 jobs each. */
const EXIST_CHUNK = 1_000;

export async function jobsExist(
  c: RedisContext,
  ids: readonly string[],
  tenant: string,
): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let i = 0; i < ids.length; i += EXIST_CHUNK) {
    const raw = await c.run(
      scripts.jobsExist,
      [c.keys.root],
      [tenant, ...ids.slice(i, i + EXIST_CHUNK)],
    );
    for (const flag of raw as unknown[]) out.push(Number(flag) === 1);
  }
  return out;
}

export async function getJob(
  c: RedisContext,
  id: string,
  tenant?: string,
): Promise<JobRecord | null> {
  const raw = await c.run(
    scripts.getJob,
    [c.keys.root],
    tenant === undefined ? [id] : [id, tenant],
  );
  return raw === null || raw === undefined ? null : fromJson<JobRecord>(raw);
}

export async function cancelJob(c: RedisContext, id: string): Promise<CancelResult> {
  const k = c.keys;
  const raw = await c.run(
    scripts.cancelJob,
    [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events],
    [id, retentionArg(c.retention), c.eventsMaxLen, c.dispatch === "streams" ? "1" : ""],
  );
  if (errorCodeOf(raw) === ErrorCode.JobNotFound) return { kind: "missing" };
  expectNoCode("cancelJob", raw);
  const r = fromJson<
    Tagged<"ok", JobRecord> | Tagged<"requested", JobRecord> | Tagged<"conflict", JobRecord>
  >(raw);
  if ("ok" in r) return { kind: "ok", job: r.ok };
  if ("requested" in r) return { kind: "requested", job: r.requested };
  return { kind: "conflict", job: r.conflict };
}

export async function listJobs(c: RedisContext, query: ListJobsQuery): Promise<Page<JobRecord>> {
  const k = c.keys;
  const raw = await c.run(
    scripts.listJobs,
    [k.root, k.jobs(query.tenant ?? DEFAULT_TENANT)],
    [
      limitArg(query.limit),
      ...cursorArgs(query.cursor),
      query.status ?? "",
      query.handler ?? "",
      query.scheduleId ?? "",
    ],
  );
  return toPage(fromJson<RawPage<JobRecord>>(raw));
}

export async function listDead(c: RedisContext, query: DeadQuery): Promise<Page<JobRecord>> {
  const raw = await c.run(
    scripts.listDead,
    [c.keys.root, c.keys.dlq(query.tenant ?? DEFAULT_TENANT)],
    [limitArg(query.limit), ...cursorArgs(query.cursor)],
  );
  return toPage(fromJson<RawPage<JobRecord>>(raw));
}

export async function retryDead(
  c: RedisContext,
  id: string,
  timing: { recoverGraceMs: number },
): Promise<{ job: JobRecord; message: OutboxMessage } | null> {
  const k = c.keys;
  const raw = await c.run(
    scripts.retryDead,
    [k.root, k.outbox, k.outboxMsg, k.expiring, k.pending, k.metrics, k.events],
    [id, JSON.stringify(id), String(timing.recoverGraceMs), c.eventsMaxLen],
  );
  if (errorCodeOf(raw) === ErrorCode.JobNotDead) return null;
  expectNoCode("retryDead", raw);
  return fromJson<{ job: JobRecord; message: OutboxMessage }>(raw);
}

export async function deleteDead(c: RedisContext, id: string): Promise<boolean> {
  const k = c.keys;
  const raw = await c.run(
    scripts.deleteDead,
    [k.root, k.expiring],
    [id, ttlArg(c.retention.jobMs)],
  );
  return toInt(raw) === 1;
}
