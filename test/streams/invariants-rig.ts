/**
 * @module
 * The moving parts of `invariants.test.ts`: a ledger of every handler run and side effect (one
 * process, one monotonic clock), and rigs — an engine and a `PullWorker` over a connection of
 * their own on the scenario's prefix, as a worker process would be. A rig can be killed (a crash:
 * its handlers stop where they are, its connection is closed so nothing it does later reaches
 * Redis), have its connections dropped (killed server-side; ioredis reconnects), or stall (hold
 * the deliveries it pulled past the claim idle time before running them).
 *
 * Rig kinds: `live`; `crash-mid`, whose handlers never finish (they hang until the rig is killed,
 * or their timeout aborts them); `crash-after`, whose handlers run normally but whose `finishRun`
 * freezes until the rig is killed — the documented window of a crash after the side effect and
 * before the outcome is recorded.
 */
import { Redis } from "ioredis";
import { NonRetryableError } from "../../src/core/errors.ts";
import {
  createEngine,
  type Engine,
  type HandlerContext,
  type Handlers,
  PullWorker,
  silentLogger,
} from "../../src/engine/index.ts";
import type { Store } from "../../src/store/port.ts";
import {
  fromIoredis,
  RedisStore,
  RedisStreams,
  type StreamMessage,
} from "../../src/store/redis/index.ts";
import type { PullQueue } from "../../src/transport/port.ts";
import { REDIS_URL } from "../support/stores.ts";

/** Per-job timeout (the least allowed) and the engine's grace: a run lease lasts 1.25 s. */
export const TIMEOUT_MS = 1_000;
export const GRACE_MS = 250;
export const CLAIM_IDLE_MS = 150;
export const MAINTAIN_EVERY_MS = 100;
export const REAP_AFTER_MS = 1_000;

export type Mode = "ok" | "failN" | "always" | "nonretry";
/** What a job's handler does: `failN` throws `failTimes` times in all, then succeeds. */
export interface Plan {
  mode: Mode;
  failTimes: number;
  /** How long each run works before deciding (ms). */
  ms: number;
}

export interface HandlerRun {
  job: string;
  rig: number;
  attempt: number;
  start: number;
  /** When it stopped running: returned, threw, saw its abort, or its rig was killed. */
  end?: number;
  outcome?: "ok" | "threw" | "aborted" | "killed";
}

export interface Completion {
  job: string;
  rig: number;
  attempt: number;
  at: number;
}

export class Ledger {
  readonly runs: HandlerRun[] = [];
  /** Side effects completed: a handler that returned successfully. */
  readonly completions: Completion[] = [];
  readonly failuresThrown = new Map<string, number>();
  /** finishRun calls a `crash-after` rig froze (the handler had returned; never recorded). */
  readonly frozen: { job: string; attempt: number; rig: number; ok: boolean }[] = [];

  active(rig: number): number {
    return this.runs.filter((r) => r.rig === rig && r.end === undefined).length;
  }
}

export type RigKind = "live" | "crash-mid" | "crash-after";

export function engineOptions() {
  return {
    logger: silentLogger,
    leaseGraceMs: GRACE_MS,
    reapAfterMs: REAP_AFTER_MS,
    jobs: { timeoutMs: TIMEOUT_MS },
    tick: { recoverGraceMs: 500, leaseMs: 5_000 },
  };
}

export class Rig {
  readonly name: string;
  readonly redis: Redis;
  readonly streams: RedisStreams;
  readonly engine: Engine;
  readonly worker: PullWorker;
  killed = false;
  killedAt: number | undefined;
  /** Hold the deliveries of the next non-empty pull this long before running them. */
  stallNextMs = 0;
  /** Hold the answer of the next beginRun this long (it is applied at once). */
  slowNextBeginMs = 0;
  stalls = 0;
  readonly #onKill: (() => void)[] = [];
  #killed!: () => void;
  readonly #killedSignal = new Promise<void>((resolve) => {
    this.#killed = resolve;
  });
  #wakeStall: (() => void) | undefined;

  constructor(
    readonly id: number,
    readonly kind: RigKind,
    prefix: string,
    ledger: Ledger,
    concurrency: number,
  ) {
    this.name = `${prefix}-rig${id}`;
    this.redis = new Redis(REDIS_URL, { connectionName: this.name });
    // Dropped and killed connections are the faults under test: not worth a log line.
    this.redis.on("error", () => {});
    const real = new RedisStore({ client: fromIoredis(this.redis), prefix, dispatch: "streams" });
    this.streams = new RedisStreams({
      redis: this.redis,
      prefix,
      consumer: this.name,
      claimIdleMs: CLAIM_IDLE_MS,
      maintainEveryMs: MAINTAIN_EVERY_MS,
      backoff: () => 50,
    });
    this.engine = createEngine({
      ...engineOptions(),
      store: kind === "crash-after" ? this.#freezeFinish(real, ledger) : this.#slowBegin(real),
      transport: this.streams,
      handlers: this.#handlers(ledger),
    });
    this.worker = new PullWorker({
      runner: this.engine.runner,
      queue: this.#queue(),
      concurrency,
      idleWaitMs: 500,
    });
  }

  start(): Promise<void> {
    return this.worker.start();
  }

  /** A crash: handlers stop where they are; nothing this rig sends later reaches Redis. */
  async kill(): Promise<void> {
    if (this.killed) return;
    this.killed = true;
    this.killedAt = performance.now();
    for (const f of this.#onKill.splice(0)) f();
    this.#killed();
    this.#wakeStall?.();
    this.redis.disconnect();
    await this.worker.stop({ deadlineMs: 0 });
  }

  /** Drop this rig's connections server-side (CLIENT KILL); ioredis reconnects. */
  async drop(admin: Redis): Promise<number> {
    const list = String(await admin.call("CLIENT", "LIST"));
    const ids = list
      .split("\n")
      .filter((line) => line.includes(` name=${this.name} `))
      .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1])
      .filter((id): id is string => id !== undefined);
    for (const id of ids) await admin.call("CLIENT", "KILL", "ID", id).catch(() => 0);
    return ids.length;
  }

  /** Graceful stop at the end of a scenario. */
  async stop(): Promise<void> {
    if (!this.killed) {
      this.#wakeStall?.();
      await this.worker.stop({ deadlineMs: 3_000 });
      await this.streams.close();
    }
    this.redis.disconnect();
  }

  #handlers(ledger: Ledger): Handlers {
    return {
      work: { run: (input, ctx) => this.#run(ledger, input as Plan, ctx) },
    };
  }

  async #run(ledger: Ledger, plan: Plan, ctx: HandlerContext): Promise<unknown> {
    const run: HandlerRun = {
      job: ctx.jobId,
      rig: this.id,
      attempt: ctx.attempt,
      start: performance.now(),
    };
    ledger.runs.push(run);
    const end = (outcome: NonNullable<HandlerRun["outcome"]>) => {
      if (run.end !== undefined) return;
      run.end = performance.now();
      run.outcome = outcome;
    };
    if (this.killed) {
      end("killed");
      return new Promise(() => {});
    }
    // Work for plan.ms (a crash-mid rig's handlers never finish), until aborted or killed.
    const how = await new Promise<"done" | "aborted" | "killed">((resolve) => {
      const timer =
        this.kind === "crash-mid" ? undefined : setTimeout(() => resolve("done"), plan.ms);
      const stop = (why: "aborted" | "killed") => {
        clearTimeout(timer);
        resolve(why);
      };
      if (ctx.signal.aborted) stop("aborted");
      ctx.signal.addEventListener("abort", () => stop("aborted"), { once: true });
      this.#onKill.push(() => stop("killed"));
    });
    if (how === "killed" || this.killed) {
      end("killed");
      return new Promise(() => {}); // the process is gone: nothing more happens here
    }
    if (how === "aborted") {
      end("aborted");
      throw ctx.signal.reason ?? new Error("aborted");
    }
    if (plan.mode === "nonretry") {
      end("threw");
      throw new NonRetryableError("refused for good");
    }
    const failed = ledger.failuresThrown.get(ctx.jobId) ?? 0;
    if (plan.mode === "always" || (plan.mode === "failN" && failed < plan.failTimes)) {
      ledger.failuresThrown.set(ctx.jobId, failed + 1);
      end("threw");
      throw new Error(`planned failure ${failed + 1}`);
    }
    ledger.completions.push({
      job: ctx.jobId,
      rig: this.id,
      attempt: ctx.attempt,
      at: performance.now(),
    });
    end("ok");
    return { rig: this.id, attempt: ctx.attempt };
  }

  /** The store of a `crash-after` rig: finishRun freezes until the rig is killed, then fails. */
  #freezeFinish(store: Store, ledger: Ledger): Store {
    const rig = this;
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop === "finishRun") {
          return async (...args: Parameters<Store["finishRun"]>) => {
            if (!rig.killed) {
              const [job, attempt, outcome] = args;
              ledger.frozen.push({ job, attempt, rig: rig.id, ok: outcome.ok });
              await rig.#killedSignal;
            }
            throw new Error("the process was killed");
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  /** A store whose next beginRun answer can be held (a stalled process or network). */
  #slowBegin(store: Store): Store {
    const rig = this;
    return new Proxy(store, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (prop === "beginRun") {
          return async (...args: Parameters<Store["beginRun"]>) => {
            const begun = await target.beginRun(...args);
            const ms = rig.slowNextBeginMs;
            if (ms > 0 && begun.kind === "run") {
              rig.slowNextBeginMs = 0;
              await new Promise((resolve) => setTimeout(resolve, ms));
            }
            return begun;
          };
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  }

  /** The streams queue, with a stall: the deliveries of a pull held before they run. */
  #queue(): PullQueue {
    const streams = this.streams;
    return {
      open: () => streams.open(),
      pull: async (max, waitMs) => {
        const got = await streams.pull(max, waitMs);
        if (got.length > 0 && this.stallNextMs > 0 && !this.killed) {
          const ms = this.stallNextMs;
          this.stallNextMs = 0;
          this.stalls++;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(done, ms);
            function done() {
              clearTimeout(timer);
              resolve();
            }
            this.#wakeStall = done;
          });
        }
        return got;
      },
      ack: (ids) => streams.ack(ids),
      retryLater: (message, delayMs, retried) =>
        streams.retryLater(message as StreamMessage, delayMs, retried),
      backoff: (retried) => streams.backoff(retried),
      interrupt: () => streams.interrupt(),
      // A live rig keeps what it holds; a killed one's connection is gone, so its keeps never
      // arrive, and a stalled one holds its deliveries inside `pull`, unkept, as a frozen process.
      keep: (ids) => streams.keep(ids),
      keepAfterMs: streams.keepAfterMs,
    };
  }
}
