/**
 * @module
 * Whether the broker admits a write, before and inside the store: the actor's manifest (handler
 * patterns, timeout, input size and schedule interval limits), the handler and its input schema,
 * and what the store checks inside the write itself — the tenant's quota and the degradation
 * controller — with the error a refusal is answered with.
 */
import type { Admission, Denied, QuotaCheck, QuotaState, QuotaWindow } from "../core/admission.ts";
import { parseDuration } from "../core/duration.ts";
import {
  ForbiddenError,
  InputTooLargeError,
  InvalidRequestError,
  OverloadedError,
  QuotaExceededError,
  UnprocessableError,
} from "../core/errors.ts";
import { bodyIssues } from "../core/json-values.ts";
import { type ManifestRules, manifestRules } from "../core/manifest.ts";
import { type Actor, tenantOf } from "./actor.ts";
import { type HandlerDefinition, type Handlers, handlerOf, parseInput } from "./handlers.ts";
import type { ResolvedOptions } from "./options.ts";

/** Where a tenant's quota stands after an admitted write, with every window of the quota. */
export interface QuotaReport extends QuotaState {
  /** The quota's windows, for the `RateLimit-Policy` header. */
  policy: readonly QuotaWindow[];
}

/** The actor's compiled manifest, or `undefined` when it has none (nothing is limited). */
export function rulesOf(actor: Actor): ManifestRules | undefined {
  return actor.manifest ? manifestRules(actor.manifest) : undefined;
}

/** The actor's rules, after checking it may submit jobs for `handler` (403 otherwise). */
export function permitSubmit(handler: string, actor: Actor): ManifestRules | undefined {
  const rules = rulesOf(actor);
  if (rules && !rules.submits(handler)) {
    throw new ForbiddenError(
      "handler_not_permitted",
      `tenant "${tenantOf(actor)}" may not submit jobs for handler "${handler}"`,
    );
  }
  return rules;
}

/** The actor's rules, after checking it may schedule `handler` (403 otherwise). */
export function permitSchedule(handler: string, actor: Actor): ManifestRules | undefined {
  const rules = rulesOf(actor);
  if (rules && !rules.schedules(handler)) {
    throw new ForbiddenError(
      "handler_not_permitted",
      `tenant "${tenantOf(actor)}" may not schedule handler "${handler}"`,
    );
  }
  return rules;
}

/** The handler registered as `name`; 422 `unknown_handler` when there is none. */
export function requireHandler(handlers: Handlers, name: string): HandlerDefinition {
  const handler = handlerOf(handlers, name);
  if (!handler) {
    const message = `no handler named "${name}" is registered`;
    // With its path: a flow or batch names the job it is in.
    throw new UnprocessableError("unknown_handler", message, {
      errors: [{ path: "handler", message }],
    });
  }
  return handler;
}

/**
 * 413 when `input` is larger (as UTF-8 JSON) than the manifest allows, or than the engine's
 * `maxInputBytes` (whichever is lower); 400 when JSON cannot hold it at all (a value that refers
 * to itself, a BigInt), with or without a limit.
 */
export function checkInputSize(
  input: unknown,
  rules: ManifestRules | undefined,
  what: "job" | "schedule",
  engineMax: number,
): void {
  const tenantMax = rules?.maxInputBytes ?? Number.POSITIVE_INFINITY;
  const max = Math.min(tenantMax, engineMax);
  // Written even without a limit: a value JSON cannot hold is refused here, not by the store.
  let text: string;
  try {
    text = JSON.stringify(input ?? null);
  } catch (error) {
    // Passed in process: a value that refers to itself, a BigInt, a toJSON that throws.
    throw new InvalidRequestError(`${what} input cannot be written as JSON`, [
      { path: "input", message: error instanceof Error ? error.message : String(error) },
    ]);
  }
  if (max === Number.POSITIVE_INFINITY) return;
  // A UTF-16 unit is 1–3 UTF-8 bytes: most inputs are decided without encoding them.
  if (text.length * 3 <= max) return;
  const bytes = new TextEncoder().encode(text).byteLength;
  if (bytes > max) {
    throw new InputTooLargeError(
      tenantMax <= engineMax
        ? `${what} input is ${bytes} bytes; this tenant may send at most ${max}`
        : `${what} input is ${bytes} bytes; at most ${max} are accepted`,
    );
  }
}

/**
 * What a job's message holds beyond the spec the broker hands the store: `createdAt` and `runAt`
 * (13 digits each, or a few more in the years past 2286).
 */
export const JOB_TIMES_ALLOWANCE_BYTES = 64;

/**
 * The most a stored trace context takes as JSON: a `traceparent` (55 characters) and a
 * `tracestate` of up to 512, with their names and quotes.
 */
export const TRACE_ALLOWANCE_BYTES = 640;

/**
 * What an occurrence's message holds beyond its schedule's definition: its id
 * (`<tenant>:<schedule id>@<fire time>`), tenant, schedule id, `createdAt`, `runAt` and `fireAt`,
 * and the dispatching tick's trace context (a `tracestate` of up to 512 characters); the
 * definition's own fields an occurrence does not carry (`schedule`, `tz`, `misfire`…) are
 * counted all the same.
 */
export const OCCURRENCE_ALLOWANCE_BYTES = 2_048;

/**
 * 413 when `spec` and `allowance` together are more UTF-8 bytes of JSON than `max`, the engine's
 * `maxJobBytes`: on a transport whose messages are bounded (Cloudflare Queues: 128 KB), an input
 * within `maxInputBytes` beside large tags, placement or `after` would make a message the queue
 * never takes, and the job would be dead-lettered after its 202.
 */
export function checkJobSize(
  spec: object,
  what: "job" | "schedule",
  max: number,
  allowance: number,
): void {
  if (max === Number.POSITIVE_INFINITY) return;
  const text = JSON.stringify(spec);
  const room = max - allowance;
  // A UTF-16 unit is 1–3 UTF-8 bytes: most specs are decided without encoding them.
  if (text.length * 3 <= room) return;
  const bytes = new TextEncoder().encode(text).byteLength;
  if (bytes > room) {
    const message =
      what === "job"
        ? `job is ${bytes} bytes as JSON with its input, tags, placement and dependencies; its message may hold at most ${max}, so the job at most ${room}`
        : `schedule is ${bytes} bytes as JSON with its input, tags and placement; an occurrence's message may hold at most ${max}, so the schedule at most ${room}`;
    // The whole job, at the root of its body (a flow names the job's path in the flow).
    throw new InputTooLargeError(message, { errors: [{ path: "", message }] });
  }
}

/**
 * 400 `invalid_request` when `input` holds what its stored JSON would not keep: a number JSON
 * cannot carry (`Infinity`, `NaN`: `JSON.stringify` writes `null` for them) or a reserved key
 * (`__proto__`, `constructor`, `prototype`), with one `{ path, message }` per issue (`path` from
 * the body's root, e.g. `input.amount`). An HTTP body was checked as it was read
 * (src/http/middleware/body.ts); this holds an input passed in process
 * (`engine.broker.submit`, `engine.schedules.create`) to the same rule.
 */
export function checkInputValues(input: unknown): void {
  let issues: ReturnType<typeof bodyIssues>;
  try {
    issues = bodyIssues(input);
  } catch (error) {
    // A toJSON method of the input threw: JSON.stringify would throw the same.
    throw new InvalidRequestError("input cannot be written as JSON", [
      { path: "input", message: error instanceof Error ? error.message : String(error) },
    ]);
  }
  if (issues.length === 0) return;
  throw new InvalidRequestError(
    "input holds a value JSON cannot carry",
    issues.map(({ path, message }) => ({ path: path ? `input.${path}` : "input", message })),
  );
}

/**
 * 422 `invalid_input` when the handler declares an `input` schema that `input` does not satisfy,
 * with one `{ path, message }` per issue (`path` from the body's root, e.g. `input.n`). The same
 * check for a job and for a schedule, whose occurrences run with its input.
 */
export function checkInput(name: string, handler: HandlerDefinition, input: unknown): void {
  if (!handler.input) return;
  const parsed = parseInput(handler.input, input);
  if (parsed.success) return;
  throw new UnprocessableError("invalid_input", `input does not match handler "${name}"`, {
    errors: parsed.error.issues.map((i) => ({
      path: i.path.length > 0 ? `input.${i.path.join(".")}` : "input",
      message: i.message,
    })),
  });
}

/**
 * The timeout to use: an explicit one must be within `max` (422 otherwise); a default above
 * `max` is lowered to it.
 */
export function timeoutWithin(
  explicit: number | undefined,
  fallback: number,
  max?: number,
): number {
  if (max === undefined) return explicit ?? fallback;
  if (explicit !== undefined) {
    if (explicit > max) {
      throw new UnprocessableError(
        "timeout_not_permitted",
        `timeout ${explicit} ms is over this tenant's limit of ${max} ms`,
      );
    }
    return explicit;
  }
  return Math.min(fallback, max);
}

/** A handler's own duration (`"30s"`, ms), or `fallback` when it has none. */
export function durationOr(value: string | number | undefined, fallback: number): number {
  return value === undefined ? fallback : (parseDuration(value) ?? fallback);
}

/** What a submit passes to the store: the quota, and the degradation controller when on. */
export function submitAdmission(
  options: ResolvedOptions,
  quota: QuotaCheck | undefined,
): Admission | undefined {
  const { degradation, localSignals } = options;
  if (!quota && !degradation) return undefined;
  const local = degradation ? localSignals?.() : undefined;
  // Assigned rather than spread in (cheaper, once per submit), in the same key order.
  const admission: Admission = {};
  if (quota) admission.quota = quota;
  if (degradation) {
    // Not `{ ...degradation, local }` (docs/adr/0027-objects-on-hot-paths.md).
    admission.degradation = local
      ? Object.assign({}, degradation, { local: { ...local } })
      : degradation;
  }
  return admission;
}

/**
 * The quota report of an admitted write: the store's state of the quota with the quota's windows
 * (nothing without a quota, or when the store reported none, e.g. on a replay).
 */
export function quotaReport(
  state: QuotaState | undefined,
  quota: QuotaCheck | undefined,
): { quota?: QuotaReport } {
  return state && quota
    ? { quota: Object.assign({}, state, { policy: quota.windows }) as QuotaReport }
    : {};
}

/** The error a refused admission is answered with: 503 overloaded, or 429 over the quota. */
export function deniedError(
  denied: Denied,
  what: "submit" | "schedule",
  quota: QuotaCheck | undefined,
): Error {
  if (denied.kind === "overloaded") return new OverloadedError(denied.retryAfterMs);
  return new QuotaExceededError(what, denied.quota, quota?.windows ?? []);
}
