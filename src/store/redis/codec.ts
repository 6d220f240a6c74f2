/**
 * @module
 * Argument encoding and result decoding for the Redis store's scripts.
 *
 * Stored documents are JSON written here (`JSON.stringify`) and spliced, never re-encoded, by the
 * scripts, which answer with one JSON text per call. A client may hand that text back raw
 * (ioredis) or already parsed (`@upstash/redis` JSON-parses string results by default); since
 * every such answer is an object or array, "string → parse, else use as is" is unambiguous.
 */
import { ValidationError } from "../../core/errors.ts";
import type { DeliveryToken, JobError, JobSpec, NewJob, ScheduleRecord } from "../../core/model.ts";
import type {
  Admission,
  DegradationLevel,
  DegradationPolicy,
  DegradationState,
  EventType,
  Histogram,
  OutboxAck,
  Page,
  QuotaCheck,
  QuotaWindow,
  RateLimit,
  RunLimit,
  StoreRetention,
  Thresholds,
  TickEvent,
} from "../port.ts";
import { checkRateLimit, checkRunLimit, HISTOGRAM_BOUNDS_MS } from "../port.ts";

/** A script's JSON answer, raw or already parsed by the client. */
export function fromJson<T>(raw: unknown): T {
  return (typeof raw === "string" ? JSON.parse(raw) : raw) as T;
}

/** A negative integer answer (an `ErrorCode`), if that is what the script returned. */
export function errorCodeOf(raw: unknown): number | undefined {
  return typeof raw === "number" && raw < 0 ? raw : undefined;
}

/** An integer answer (ioredis gives numbers; a parsing client may give numeric strings). */
export function toInt(raw: unknown): number {
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new TypeError(`expected an integer reply, got ${String(raw)}`);
  return n;
}

/** Milliseconds for PX / PEXPIRE: a positive integer. */
export function ttlArg(ms: number): string {
  return String(Math.max(1, Math.ceil(ms)));
}

/** An optional number as a script argument (`''` = absent). */
export function optionalArg(value: number | string | null | undefined): string {
  return value === undefined || value === null ? "" : String(value);
}

/** JSON of a value for a hash field (`''` when JSON has no text for it, e.g. `undefined`). */
export function jsonArg(value: unknown): string {
  return JSON.stringify(value) ?? "";
}

/**
 * The `data` field of a job: its spec without the fields the store stamps or tracks apart
 * (createdAt, runAt and the mutable state of a record, should a record be passed).
 */
export function jobData(spec: NewJob | JobSpec): string {
  // A new job (every submit) has none of them: its JSON as it is, without a copy.
  if (!hasStampedField(spec)) return JSON.stringify(spec);
  const {
    createdAt: _createdAt,
    runAt: _runAt,
    status: _status,
    attempts: _attempts,
    startedAt: _startedAt,
    finishedAt: _finishedAt,
    result: _result,
    error: _error,
    node: _node,
    refused: _refused,
    ...data
  } = spec as Partial<JobSpec> & Record<string, unknown>;
  return JSON.stringify(data);
}

/** Whether `spec` has an own field `jobData` leaves out. */
function hasStampedField(spec: object): boolean {
  for (const field of STAMPED_FIELDS) if (Object.hasOwn(spec, field)) return true;
  return false;
}

/** The fields of a record that are not part of a job's `data` (see {@link jobData}). */
const STAMPED_FIELDS = [
  "createdAt",
  "runAt",
  "status",
  "attempts",
  "startedAt",
  "finishedAt",
  "result",
  "error",
  "node",
  "refused",
] as const;

/**
 * A full JobSpec as the 9 arguments the `spec` include reads (beginRun, markDead). The `data`
 * argument only creates a missing occurrence (a job with a `scheduleId`); any other job exists
 * before it is delivered, so its spec is not encoded and sent again ('').
 */
export function specArgs(spec: JobSpec): string[] {
  return [
    spec.id,
    spec.scheduleId ? jobData(spec) : "",
    String(spec.createdAt),
    String(spec.runAt),
    spec.handler,
    spec.scheduleId ?? "",
    spec.overlap ?? "",
    String(spec.fireAt ?? spec.runAt),
    spec.tenant,
  ];
}

/** A number as the `degrade` and `quota` includes read it: `inf` for Infinity (or a JSON `null`). */
function numberArg(n: number | null | undefined): string {
  if (n === null || n === Number.POSITIVE_INFINITY) return "inf";
  if (n === Number.NEGATIVE_INFINITY) return "-inf";
  if (n === undefined || Number.isNaN(n)) return "-";
  return String(n);
}

function thresholdsArg(t: Thresholds | undefined): string[] {
  return t ? [numberArg(t.normal), numberArg(t.degraded), numberArg(t.critical)] : ["-", "-", "-"];
}

/** Texts of policies and retentions already turned into arguments (the same object every call). */
const argTexts = new WeakMap<object, string>();

/** A DegradationPolicy as the one argument the `degrade` include parses (`''` = none). */
export function policyArg(policy: DegradationPolicy | undefined): string {
  return policy ? rememberedText(argTexts, policy, policyText) : "";
}

/** A submit's degradation settings as the `settings` include parses them (`''` = no policy). */
export function admissionArg(degradation: Admission["degradation"]): string {
  return degradation ? rememberedText(admissionTexts, degradation, admissionText) : "";
}

/** Texts of degradation settings already made (the same object every submit of an engine). */
const admissionTexts = new WeakMap<object, string>();

/**
 * `make(policy)`, remembered in `texts`: an engine passes its one policy object on every submit.
 * With local signals (sampled per submit) it is a new object each time and is not remembered.
 */
function rememberedText<P extends DegradationPolicy>(
  texts: WeakMap<object, string>,
  policy: P,
  make: (policy: P) => string,
): string {
  if (policy.local !== undefined) return make(policy);
  let text = texts.get(policy);
  if (text === undefined) {
    text = make(policy);
    texts.set(policy, text);
  }
  return text;
}

function admissionText(d: NonNullable<Admission["degradation"]>): string {
  return `${d.degradedDelayMs} ${d.critical} ${d.criticalDelayMs} ${d.retryAfterMs} ${d.evaluateEveryMs ?? 0};${policyArg(d)}`;
}

function policyText(policy: DegradationPolicy): string {
  return [
    ...thresholdsArg(policy.queueDepth),
    ...thresholdsArg(policy.lagMs),
    ...thresholdsArg(policy.failureRate),
    ...thresholdsArg(policy.cpu),
    ...thresholdsArg(policy.memory),
    numberArg(policy.debounceMs),
    numberArg(policy.local?.cpu),
    numberArg(policy.local?.memory),
  ].join(" ");
}

/** Quota windows as the `quota` include parses them: `windowMs limit ...`. */
export function windowsArg(windows: readonly QuotaWindow[]): string {
  return windows.flatMap((w) => [numberArg(w.windowMs), numberArg(w.limit)]).join(" ");
}

/** The `error` of a job event: name and message only. */
export function eventErrorArg(error: JobError): string {
  return JSON.stringify({ name: error.name, message: error.message });
}

/** `after` of an events query as the script argument (`''` = from the oldest): `<ms>-<seq>`. */
export function eventIdArg(after: string | undefined): string {
  if (after === undefined) return "";
  if (/^\d{1,16}-\d{1,16}$/.test(after)) return after;
  throw new ValidationError("invalid event id", [
    { path: "after", message: "not an event id (<ms>-<seq>)" },
  ]);
}

/** Events as the `events` script answers them: `[id, event without id]` pairs. */
export function toEvents(raw: [string, Omit<TickEvent, "id">][]): TickEvent[] {
  return raw.map(([id, event]) => ({ id, ...event }));
}

/** Types of an events query as one argument (`''` = every type). */
export function typesArg(types: readonly EventType[] | undefined): string {
  return (types ?? []).join(" ");
}

/** A histogram from the metrics hash: fields `<name>:<i>` and `<name>:sum`. */
export function histogramOf(metrics: Record<string, string>, name: string): Histogram {
  const counts = Array.from({ length: HISTOGRAM_BOUNDS_MS.length + 1 }, (_, i) =>
    Number(metrics[`${name}:${i}`] ?? 0),
  );
  return {
    bounds: HISTOGRAM_BOUNDS_MS,
    counts,
    sum: Number(metrics[`${name}:sum`] ?? 0),
    count: counts.reduce((a, b) => a + b, 0),
  };
}

/** The `def` field of a schedule: the record without its state. */
export function scheduleDef(schedule: ScheduleRecord): string {
  const {
    status: _status,
    nextRunAt: _nextRunAt,
    lastRunAt: _lastRunAt,
    runs: _runs,
    rev: _rev,
    createdAt: _createdAt,
    updatedAt: _updatedAt,
    ...def
  } = schedule;
  return JSON.stringify(def);
}

/** A page as the scripts answer it: the cursor names the last item returned. */
export interface RawPage<T> {
  items: T[];
  cursor?: [score: number, id: string];
}

/** Opaque cursor text for `[score, id]` (base64url of its JSON). */
export function encodeCursor([score, id]: [number, string]): string {
  const bytes = new TextEncoder().encode(JSON.stringify([score, id]));
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The `[score, id]` script arguments of a cursor (`['', '']` for the first page). */
export function cursorArgs(cursor: string | undefined): [string, string] {
  if (cursor === undefined) return ["", ""];
  try {
    const binary = atob(cursor.replaceAll("-", "+").replaceAll("_", "/"));
    const value: unknown = JSON.parse(
      new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))),
    );
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === "number" &&
      Number.isFinite(value[0]) &&
      typeof value[1] === "string" &&
      value[1] !== ""
    ) {
      return [String(value[0]), value[1]];
    }
  } catch {
    // any malformed cursor is the caller's error
  }
  throw new ValidationError("invalid cursor", [
    { path: "cursor", message: "not a cursor of this listing" },
  ]);
}

/** The `{p}:degrade` hash as a DegradationState (never evaluated: normal since 0, zero signals). */
export function degradationOf(h: Record<string, string>): DegradationState {
  const state: DegradationState = {
    level: (h.level || "normal") as DegradationLevel,
    since: Number(h.since ?? 0),
    signals: h.signals
      ? (JSON.parse(h.signals) as DegradationState["signals"])
      : { queueDepth: 0, lagMs: 0, failureRate: 0 },
  };
  if (h.pendingLevel) {
    state.pending = {
      level: h.pendingLevel as DegradationLevel,
      since: Number(h.pendingSince ?? 0),
    };
  }
  return state;
}

// ── arguments of several operations ──────────────────────────────────────────

/** A quota check as the two script arguments: key (`''` = none) and windows. */
export function quotaArgs(quota: QuotaCheck | undefined): [string, string] {
  return quota ? [quota.key, windowsArg(quota.windows)] : ["", ""];
}

/** Outbox acks as script arguments: id, dedupId and not-before ms (`""` when unknown) each. */
export function ackArgs(acks: OutboxAck[]): string[] {
  const args = new Array<string>(3 * acks.length);
  for (let i = 0; i < acks.length; i++) {
    const ack = acks[i]!;
    args[3 * i] = ack.id;
    args[3 * i + 1] = ack.dedupId;
    args[3 * i + 2] = ack.notBefore === undefined ? "" : String(Math.floor(ack.notBefore));
  }
  return args;
}

/** A listing limit as the scripts take it: a non-negative integer. */
export function limitArg(limit: number): string {
  return String(Math.max(0, Math.floor(limit)));
}

/** A page as the store answers it: the scripts' cursor made opaque. */
export function toPage<T>(raw: RawPage<T>): Page<T> {
  const page: Page<T> = { items: raw.items };
  if (raw.cursor) page.cursor = encodeCursor(raw.cursor);
  return page;
}

/** A delivery token as the `beginRun` and `markDead` scripts take it: id and expiry, or none. */
export function tokenArgs(token: DeliveryToken | undefined): [string, string] {
  return token ? [token.id, String(Math.floor(token.expiresAt))] : ["", "0"];
}

/**
 * A concurrency limit: the limit and its key, or nothing at all.
 *
 * @throws RangeError for a limit that is not a whole number from 1 to 10,000, or an empty key.
 */
export function limitArgs(limit: RunLimit | undefined): string[] {
  if (limit === undefined) return [];
  checkRunLimit(limit);
  return [String(limit.limit), limit.key];
}

/**
 * A delivery's token and limits as `beginRun` takes them (beginRun-7.lua's D[13..19]): the
 * token's id and expiry, the concurrency limit and its key, the rate limit, its period (ms) and
 * its key; `''` for each one absent, the caller leaves trailing ones out.
 *
 * @throws RangeError for a limit out of range (see {@link limitArgs}, `checkRateLimit`).
 */
export function beginLimitArgs(
  token: DeliveryToken | undefined,
  limit: RunLimit | undefined,
  rate: RateLimit | undefined,
): string[] {
  if (rate !== undefined) checkRateLimit(rate);
  return [
    ...(token ? [token.id, String(Math.floor(token.expiresAt))] : ["", ""]),
    ...(limit === undefined ? ["", ""] : limitArgs(limit)),
    ...(rate === undefined ? ["", "", ""] : [String(rate.limit), String(rate.periodMs), rate.key]),
  ];
}

/** Retention as the scripts take it: `jobMs maxJobs maxRuns`, 0 for no cap. */
export function retentionArg(retention: StoreRetention): string {
  let text = argTexts.get(retention);
  if (text === undefined) {
    const cap = (n: number | undefined) =>
      n !== undefined && Number.isFinite(n) ? Math.max(0, Math.floor(n)) : 0;
    text = `${ttlArg(retention.jobMs)} ${cap(retention.maxFinishedJobs)} ${cap(retention.maxRunsPerSchedule)}`;
    argTexts.set(retention, text);
  }
  return text;
}

/**
 * A string as JSON, spelled as the scripts' `cjson.encode` spells it (`/` and DEL escaped too):
 * the events script finds a job's events by its id's JSON text.
 */
export function luaJson(text: string): string {
  const json = JSON.stringify(text);
  return /[/\x7f]/.test(json) ? json.replace(/\//g, "\\/").replace(/\x7f/g, "\\u007f") : json;
}
