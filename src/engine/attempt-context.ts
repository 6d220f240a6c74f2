/**
 * @module
 * `AttemptContext`: the `ctx` a handler gets for one attempt (`HandlerContext`).
 *
 * `signal` and `jobs` are made when first read: an `AbortSignal` costs a few µs on Node 20, and
 * few handlers submit follow-up jobs. Reading `signal` once the attempt's timeout is due fires the
 * timeout first (see the getter). They are own, enumerable getters, so a copy (`{ ...ctx }`)
 * still carries them. Every attempt's object gets the same two getter functions
 * (`Object.defineProperties` with {@link LAZY_MEMBERS}). The state they read is a hidden member
 * (a symbol, not enumerable), not a private field, so they also work through a `Proxy` of `ctx`
 * or an object whose prototype is `ctx`, as the closures of an object literal did. An object
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
  readonly jobId: string;
  readonly attempt: number;
  readonly logger: Logger;
  readonly progress: HandlerContext["progress"];
  readonly log: HandlerContext["log"];
  // Own getters (defined in the constructor), and members set only when the job has them.
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
    this.jobId = job.id;
    this.attempt = attempt;
    this.logger = logger;
    this.progress = controls.progress;
    this.log = controls.log;
    const state: LazyState = { abort, broker, tenant: job.tenant, jobs: undefined, due, timeout };
    Object.defineProperty(this, STATE, { value: state });
    Object.defineProperties(this, LAZY_MEMBERS);
    if (job.scheduleId !== undefined) this.scheduleId = scheduleUserId(job.tenant, job.scheduleId);
    if (job.fireAt !== undefined) this.fireAt = job.fireAt;
    if (job.after) this.after = job.after;
  }
}

/** The getters of every {@link AttemptContext}: one pair of functions for all of them. */
const LAZY_MEMBERS: PropertyDescriptorMap = {
  signal: {
    get(this: AttemptContext) {
      const state = this[STATE];
      // Past its timeout and not aborted yet: this process was frozen (or the timer is late),
      // and a timer of the handler's ran first. Fire the timeout now (once; a no-op after the
      // attempt ended), so the handler sees the abort before it does its work.
      if (performance.now() >= state.due) state.timeout();
      return state.abort.signal;
    },
    enumerable: true,
    configurable: true,
  },
  jobs: {
    get(this: AttemptContext) {
      const state = this[STATE];
      state.jobs ??= tenantJobs(state.broker, state.tenant);
      return state.jobs;
    },
    enumerable: true,
    configurable: true,
  },
};

/** A handler's `ctx.jobs`: the broker, scoped to the running job's tenant. */
function tenantJobs(broker: Broker, tenant: string): HandlerContext["jobs"] {
  return {
    submit: (next) => broker.submit(next, { tenant }),
    submitFlow: (flow) => broker.submitFlow(flow as never, { tenant }),
    // Scoped: a job of another tenant is unknown here (404), whatever id the input names.
    get: (id) => broker.getJob(id, { tenant, scopes: ["read"] }),
  };
}
