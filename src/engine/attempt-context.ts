/**
 * @module
 * `AttemptContext`: the `ctx` a handler gets for one attempt (`HandlerContext`).
 *
 * `signal` and `jobs` are made when first read: an `AbortSignal` costs a few µs on Node 20, and
 * few handlers submit follow-up jobs. Reading `signal` once the attempt's timeout is due fires the
 * timeout first (see {@link SIGNAL}). They are own, enumerable getters, so a copy (`{ ...ctx }`)
 * still carries them. Every attempt's object gets the same two getter functions
 * (`Object.defineProperty` with {@link SIGNAL} and {@link JOBS}). The state they read is a
 * hidden member (a symbol, not enumerable), not a private field, so they also work through a
 * `Proxy` of `ctx` or an object whose prototype is `ctx`, as the closures of an object literal
 * did. An object
 * literal with `get` members would make two new functions per attempt, and V8 keeps such an
 * object in dictionary mode. In a worker draining jobs, that object and everything its getters
 * reached outlived the attempt in V8's young-generation collections and were promoted to the old
 * generation (docs/adr/0045-no-per-attempt-getters.md).
 */
import { scheduleUserId } from "../core/model.ts";
import type { AttemptControls } from "./attempt.ts";
import type { Broker } from "./broker.ts";
import type { HandlerContext } from "./handlers.ts";
import type { LazyAbort } from "./lazy-abort.ts";
import type { Logger } from "./logger.ts";

/** What of a job record `ctx` shows. */
export interface ContextJob {
  id: string;
  tenant: string;
  scheduleId?: string | undefined;
  fireAt?: number | undefined;
  after?: string[] | undefined;
}

/** What the lazy members read, hidden under {@link STATE}. */
interface LazyState {
  abort: LazyAbort;
  broker: Broker;
  tenant: string;
  jobs: HandlerContext["jobs"] | undefined;
  /** When the attempt's timeout is due (`performance.now()`), and what fires it. */
  due: number;
  timeout: () => void;
}

const STATE = Symbol("tickwork.attemptState");

export class AttemptContext implements HandlerContext {
  // All set in the constructor, in the order an object literal listed them before (`Object.keys`
  // and `JSON.stringify` show them so); the getters too, and the optional members only when the
  // job has them.
  declare readonly jobId: string;
  declare readonly attempt: number;
  declare readonly logger: Logger;
  declare readonly progress: HandlerContext["progress"];
  declare readonly log: HandlerContext["log"];
  declare readonly signal: AbortSignal;
  declare readonly jobs: HandlerContext["jobs"];
  declare scheduleId?: string;
  declare fireAt?: number;
  declare after?: string[];
  declare readonly [STATE]: LazyState;

  constructor(
    job: ContextJob,
    attempt: number,
    logger: Logger,
    controls: AttemptControls,
    abort: LazyAbort,
    broker: Broker,
    due: number,
    timeout: () => void,
  ) {
    const state: LazyState = { abort, broker, tenant: job.tenant, jobs: undefined, due, timeout };
    Object.defineProperty(this, STATE, { value: state });
    const self = this as { -readonly [K in keyof AttemptContext]: AttemptContext[K] };
    self.jobId = job.id;
    self.attempt = attempt;
    Object.defineProperty(this, "signal", SIGNAL);
    self.logger = logger;
    Object.defineProperty(this, "jobs", JOBS);
    self.progress = controls.progress;
    self.log = controls.log;
    if (job.scheduleId !== undefined) this.scheduleId = scheduleUserId(job.tenant, job.scheduleId);
    if (job.fireAt !== undefined) this.fireAt = job.fireAt;
    if (job.after) this.after = job.after;
  }
}

/**
 * `ctx.signal` of every {@link AttemptContext} (one function for all of them). Read once the
 * attempt's timeout is due, it fires the timeout first: the process was frozen and a timer of the
 * handler's ran before the freeze check, or the handler ran past its timeout without yielding.
 * Either way the attempt has timed out; the handler sees the abort before it goes on (firing is
 * once, and a no-op after the attempt ended).
 */
const SIGNAL: PropertyDescriptor = {
  get(this: AttemptContext) {
    const state = this[STATE];
    if (performance.now() >= state.due) state.timeout();
    return state.abort.signal;
  },
  enumerable: true,
  configurable: true,
};

/** `ctx.jobs` of every {@link AttemptContext}: made when first read. */
const JOBS: PropertyDescriptor = {
  get(this: AttemptContext) {
    const state = this[STATE];
    state.jobs ??= tenantJobs(state.broker, state.tenant);
    return state.jobs;
  },
  enumerable: true,
  configurable: true,
};

/** A handler's `ctx.jobs`: the broker, scoped to the running job's tenant. */
function tenantJobs(broker: Broker, tenant: string): HandlerContext["jobs"] {
  return {
    submit: (next) => broker.submit(next as never, { tenant }),
    submitFlow: (flow) => broker.submitFlow(flow as never, { tenant }),
    // Scoped: a job of another tenant is unknown here (404), whatever id the input names.
    get: (id) => broker.getJob(id, { tenant, scopes: ["read"] }),
  };
}
