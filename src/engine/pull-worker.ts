/**
 * @module
 * `PullWorker`: runs the deliveries of a pull queue (Redis Streams) through the runner, at most
 * `concurrency` at once, and answers the queue for each (docs/streams.md):
 *
 * | runner outcome                          | queue answer                                       |
 * | --------------------------------------- | -------------------------------------------------- |
 * | done, give-up, bad-request, unauthorized | ack (batched: one round trip for many)             |
 * | retry                                   | retry later: after `retryAfterMs`, else the backoff |
 * | busy (an attempt runs, or `limited`)    | deliver again after `retryAfterMs` (not a retry)   |
 * | the store failed (threw)                | none: the delivery stays pending and is taken over |
 *
 * Backpressure: it pulls only as many as it has free slots, plus its read-ahead (below). A
 * delivery holds its slot from its pull until its handler returns (or until it is answered, when
 * no handler runs); recording the handler's outcome happens after, outside the slot, so the next
 * pull goes out while the last outcomes are being recorded (BullMQ's worker fetches its next job
 * as it completes one, too). At most `concurrency` handlers run at once; up to as many more
 * deliveries may be finishing.
 *
 * Read-ahead: while its deliveries hold their slots briefly (short handlers), the worker pulls up
 * to `readAhead` deliveries more than it has free slots, and starts them as slots free, so a
 * freed slot does not wait for a pull's round trip. One held ahead longer than `readAheadHoldMs`
 * (every slot taken by long handlers) is handed back to the queue for another worker, and reading
 * ahead pauses; at stop, every one held ahead is handed back (docs/adr/0040-read-ahead.md).
 * Keeping: every `keepAfterMs` the worker tells the queue which deliveries it has held that long
 * (`PullQueue.keep`), so a handler that runs longer than the queue's takeover time is not taken
 * over as a stopped consumer's; at stop, after the deadline, it stops keeping what still runs.
 * `concurrency` is this process's own bound (a node's "max parallel"); a handler's `concurrency`
 * option bounds its jobs across every worker (enforced by `beginRun`): a delivery over it is
 * deferred, never counted as a retry. Stopping: it stops pulling, waits for what is in flight up
 * to a deadline, and leaves the rest pending for another worker to take over (the run lease keeps
 * a handler that is still running from being run twice).
 */
import type { PulledMessage, PullQueue } from "../transport/port.ts";
import type { Logger } from "./logger.ts";
import type { Runner } from "./runner.ts";

/** Options of {@link PullWorker}. */
export interface PullWorkerOptions {
  runner: Runner;
  queue: PullQueue;
  /**
   * Deliveries run at once by this process, of every handler: the node's parallelism. (A
   * handler's own `concurrency` option limits its jobs across all workers.)
   * @default 10
   */
  concurrency?: number | undefined;
  /**
   * Longest wait for new work while idle (ms): an idle worker costs one blocking read per this.
   * @default 300_000
   */
  idleWaitMs?: number | undefined;
  /**
   * Deliveries pulled ahead of free slots, started as slots free (0: none). Read-ahead applies
   * only while deliveries hold their slots for less than a tenth of `readAheadHoldMs` on average.
   * @default concurrency
   */
  readAhead?: number | undefined;
  /**
   * A delivery held ahead this long without a free slot is handed back to the queue (for another
   * worker), and reading ahead pauses for 30 times this long (ms).
   * @default 1_000
   */
  readAheadHoldMs?: number | undefined;
  /** Defaults to the runner's logger. */
  logger?: Logger | undefined;
}

/** What a worker did since it started. */
export interface PullWorkerStats {
  pulled: number;
  /** Acknowledged: run (succeeded or dead), or nothing left to run. */
  acked: number;
  /** Failed attempts queued again after their backoff. */
  retried: number;
  /**
   * Busy deliveries queued again, not as retries: another attempt holds the job, or its handler's
   * concurrency limit was reached.
   */
  deferred: number;
  /** Deliveries whose run or answer failed (the store was unreachable): left pending. */
  failed: number;
  /** Deliveries held ahead (read-ahead) given back to the queue unstarted, for another worker. */
  handedBack: number;
  /** Deliveries pulled ahead of a free slot and waiting for one now. */
  waiting: number;
  /** Deliveries under way: pulled and not answered yet (running, or their outcome being recorded). */
  inFlight: number;
  /** Deliveries it runs at once at most (its `concurrency`). */
  concurrency: number;
}

/** While pulls keep failing, a line about it at most this often. */
const PULL_FAILURE_LOG_MS = 60_000;

/** How long a stop waits for its last acknowledgements, past its deadline if need be. */
const FINAL_ACK_MS = 2_000;

/**
 * Pulls deliveries and runs them.
 *
 * @example
 * const worker = new PullWorker({ runner: engine.runner, queue: streams, concurrency: 20 });
 * await worker.start();
 * process.on("SIGTERM", () => worker.stop({ deadlineMs: 10_000 }));
 */
export class PullWorker {
  readonly #runner: Runner;
  readonly #queue: PullQueue;
  readonly #concurrency: number;
  readonly #idleWaitMs: number;
  readonly #logger: Logger | undefined;
  readonly #readAhead: number;
  readonly #holdMs: number;
  readonly #inFlight = new Set<Promise<void>>();
  /** Deliveries pulled ahead of a free slot, oldest first, with when they were pulled. */
  #waiting: { message: PulledMessage; at: number }[] = [];
  #holdTimer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Average time a delivery held its slot (ms; a moving average). It starts at the read-ahead
   * threshold: nothing is read ahead before a delivery has shown that slots free quickly.
   */
  #slotMs: number;
  /** No reading ahead before this time (performance.now()): a hand-back paused it. */
  #aheadPausedUntil = 0;
  /** Deliveries holding a slot: pulled, and their handler not returned yet. */
  #slotsHeld = 0;
  /** Job ids with a delivery running in this process. */
  readonly #jobsRunning = new Set<string>();
  /**
   * Deliveries pulled and not answered yet (waiting, running or finishing), by entry id, with
   * when they were pulled: those pulled `keepAfterMs` ago or more are kept (PullQueue.keep).
   */
  readonly #held = new Map<string, number>();
  #keepTimer: ReturnType<typeof setInterval> | undefined;
  #keeping = false;
  #acks: string[] = [];
  #ackFlush: Promise<void> | undefined;
  /** Ack requests still under way. */
  readonly #acking = new Set<Promise<void>>();
  #loop: Promise<void> | undefined;
  /** The first {@link PullWorker.start}: later calls wait for it, and start nothing more. */
  #started: Promise<void> | undefined;
  #stopping = false;
  #wakeLoop: (() => void) | undefined;
  #stopPause: (() => void) | undefined;
  readonly #stats = { pulled: 0, acked: 0, retried: 0, deferred: 0, failed: 0, handedBack: 0 };

  constructor(options: PullWorkerOptions) {
    const concurrency = options.concurrency ?? 10;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 10_000) {
      throw new RangeError(
        `concurrency must be a whole number from 1 to 10000, got ${concurrency}`,
      );
    }
    const idleWaitMs = options.idleWaitMs ?? 300_000;
    if (!(idleWaitMs >= 1 && idleWaitMs <= 300_000)) {
      throw new RangeError(`idleWaitMs must be from 1 to 300000, got ${idleWaitMs}`);
    }
    this.#runner = options.runner;
    this.#queue = options.queue;
    this.#concurrency = concurrency;
    this.#idleWaitMs = idleWaitMs;
    const readAhead = options.readAhead ?? concurrency;
    if (!Number.isInteger(readAhead) || readAhead < 0 || readAhead > 10_000) {
      throw new RangeError(`readAhead must be a whole number from 0 to 10000, got ${readAhead}`);
    }
    const holdMs = options.readAheadHoldMs ?? 1_000;
    if (!(holdMs >= 1 && holdMs <= 300_000)) {
      throw new RangeError(`readAheadHoldMs must be from 1 to 300000, got ${holdMs}`);
    }
    this.#readAhead = readAhead;
    this.#holdMs = holdMs;
    this.#slotMs = holdMs / 10;
    this.#logger = options.logger;
  }

  /** Prepare the queue (e.g. its consumer group) and start pulling. */
  async start(): Promise<void> {
    // A failed open (Redis unreachable) may be tried again by the next call.
    this.#started ??= this.#open().catch((error: unknown) => {
      this.#started = undefined;
      throw error;
    });
    await this.#started;
  }

  async #open(): Promise<void> {
    await this.#queue.open();
    // Stopped while the queue opened: nothing to start.
    if (this.#stopping) return;
    this.#loop = this.#run();
    const every = this.#queue.keepAfterMs;
    if (this.#queue.keep && every !== undefined && every > 0) {
      this.#keepTimer = setInterval(() => void this.#keepHeld(every), every);
      this.#keepTimer.unref?.();
    }
  }

  /**
   * Stop pulling, wait up to `deadlineMs` for the deliveries in flight, and send the last acks.
   * Deliveries still running after the deadline stay pending in the queue: another worker takes
   * them over once their run lease has lapsed. Resolves with how many were left so.
   */
  async stop({ deadlineMs = 10_000 }: { deadlineMs?: number } = {}): Promise<{ left: number }> {
    this.#stopping = true;
    this.#queue.interrupt();
    this.#wakeLoop?.();
    this.#stopPause?.();
    // Every wait below is bounded: while Redis is unreachable a command may stay unanswered, and
    // a stop must still end (what it could not hand back or acknowledge is taken over later).
    const timers: ReturnType<typeof setTimeout>[] = [];
    const after = (ms: number) =>
      new Promise<void>((resolve) => {
        timers.push(setTimeout(resolve, ms));
      });
    const deadline = after(deadlineMs);
    const within = (work: Promise<unknown>, bound: Promise<void> = deadline) =>
      Promise.race([work.catch(() => {}), bound]);
    // A start still opening the queue starts nothing once it has (see #open): not waited for, as
    // an open may hang while Redis is unreachable.
    await within(this.#loop ?? Promise.resolve());
    // Held ahead and never started: back to the queue now, for another worker.
    await within(this.#handBack(this.#waiting.length));
    await within(Promise.all(this.#inFlight));
    // What still runs is left to be taken over: no longer kept.
    clearInterval(this.#keepTimer);
    this.#keepTimer = undefined;
    // The last acks get a moment of their own, even past the deadline.
    await within(
      this.#flushAcks().then(() => Promise.all(this.#acking)),
      after(FINAL_ACK_MS),
    );
    for (const timer of timers) clearTimeout(timer);
    return { left: this.#inFlight.size };
  }

  stats(): PullWorkerStats {
    return {
      ...this.#stats,
      waiting: this.#waiting.length,
      inFlight: this.#inFlight.size,
      concurrency: this.#concurrency,
    };
  }

  async #run(): Promise<void> {
    let failures = 0;
    /** When a failed pull was last logged, and how many failed since (one line per outage). */
    let loggedAt = 0;
    let unlogged = 0;
    while (!this.#stopping) {
      // Free slots (and read-ahead), and no more than `concurrency` deliveries finishing besides.
      const free =
        Math.min(this.#concurrency - this.#slotsHeld, 2 * this.#concurrency - this.#inFlight.size) +
        this.#ahead() -
        this.#waiting.length;
      if (free <= 0) {
        await this.#slotFree();
        continue;
      }
      let messages: PulledMessage[];
      try {
        messages = await this.#queue.pull(free, this.#idleWaitMs);
        if (failures > 0) this.#log("info", "pulling from the queue again", { failures });
        failures = 0;
      } catch (error) {
        if (this.#stopping) break;
        failures++;
        // Logged once per outage, then at most once a minute while it lasts (as the tick does).
        const now = performance.now();
        if (failures === 1 || now - loggedAt >= PULL_FAILURE_LOG_MS) {
          this.#log("warn", "could not pull from the queue; retrying", {
            error: String(error),
            ...(unlogged > 0 ? { repeatedSinceLastLog: unlogged } : {}),
          });
          loggedAt = now;
          unlogged = 0;
        } else {
          unlogged++;
        }
        await this.#pause(Math.min(100 * 2 ** Math.min(failures, 6), 5_000));
        continue;
      }
      this.#stats.pulled += messages.length;
      const at = performance.now();
      for (const message of messages) {
        this.#waiting.push({ message, at });
        this.#held.set(message.id, at);
      }
      this.#startWaiting();
    }
  }

  /** How many deliveries it may pull ahead of free slots now. */
  #ahead(): number {
    if (this.#readAhead === 0 || this.#slotMs * 10 >= this.#holdMs) return 0;
    return performance.now() < this.#aheadPausedUntil ? 0 : this.#readAhead;
  }

  /** Start waiting deliveries while slots are free (and finishing ones within bounds). */
  #startWaiting(): void {
    while (
      !this.#stopping &&
      this.#waiting.length > 0 &&
      this.#slotsHeld < this.#concurrency &&
      this.#inFlight.size < 2 * this.#concurrency
    ) {
      this.#start(this.#waiting.shift()!.message);
    }
    if (this.#waiting.length === 0 || this.#stopping) {
      clearTimeout(this.#holdTimer);
      this.#holdTimer = undefined;
    } else if (!this.#holdTimer) {
      const due = this.#waiting[0]!.at + this.#holdMs - performance.now();
      this.#holdTimer = setTimeout(() => this.#holdExpired(), Math.max(1, due));
    }
  }

  /** The oldest delivery held ahead waited too long: hand those as old back, pause read-ahead. */
  #holdExpired(): void {
    this.#holdTimer = undefined;
    const limit = performance.now() - this.#holdMs;
    let old = 0;
    while (old < this.#waiting.length && this.#waiting[old]!.at <= limit) old++;
    if (old > 0) {
      this.#aheadPausedUntil = performance.now() + 30 * this.#holdMs;
      // Counted with the acks under way: stop() waits for it.
      const request = this.#handBack(old).finally(() => this.#acking.delete(request));
      this.#acking.add(request);
    }
    this.#startWaiting();
  }

  /** Give the first `count` waiting deliveries back to the queue, unstarted. */
  async #handBack(count: number): Promise<void> {
    const given = this.#waiting.splice(0, count);
    for (const { message } of given) this.#held.delete(message.id);
    await Promise.all(
      given.map(async ({ message }) => {
        try {
          await this.#queue.retryLater(message, 0, message.retried);
          this.#stats.handedBack++;
        } catch (error) {
          // It stays pending with this consumer and is taken over later.
          this.#stats.failed++;
          this.#log("warn", "could not hand a delivery back; it stays pending", {
            entry: message.id,
            error: String(error),
          });
        }
      }),
    );
  }

  #start(message: PulledMessage): void {
    this.#slotsHeld++;
    let held = true;
    const since = performance.now();
    const release = () => {
      if (!held) return;
      held = false;
      this.#slotsHeld--;
      this.#slotMs += (performance.now() - since - this.#slotMs) / 8;
      this.#startWaiting();
      this.#wakeLoop?.();
    };
    const run = this.#handle(message, release).finally(() => {
      this.#held.delete(message.id);
      this.#inFlight.delete(run);
      release();
      this.#startWaiting(); // a finishing delivery fewer may let a waiting one start
      this.#wakeLoop?.(); // the loop may wait for finishing deliveries, not slots
    });
    this.#inFlight.add(run);
  }

  async #handle(message: PulledMessage, handlerDone: () => void): Promise<void> {
    const jobId = jobIdOf(message.body);
    let mine = false;
    try {
      if (jobId !== undefined && this.#jobsRunning.has(jobId)) {
        // An attempt of this job still runs here (its lease may have lapsed while this process
        // was frozen, and a redelivery or a takeover of its own entry arrived): let it finish
        // and record its outcome before another attempt may begin.
        this.#stats.deferred++;
        await this.#queue.retryLater(message, 1_000, message.retried);
        return;
      }
      if (jobId !== undefined) {
        this.#jobsRunning.add(jobId);
        mine = true;
      }
      const outcome = await this.#runner.runPulled(message.body, this.#logger, handlerDone);
      switch (outcome.kind) {
        case "retry":
          this.#stats.retried++;
          await this.#queue.retryLater(
            message,
            outcome.retryAfterMs ?? this.#queue.backoff(message.retried),
            message.retried + 1,
          );
          return;
        case "busy":
          this.#stats.deferred++;
          await this.#queue.retryLater(
            message,
            Math.max(250, outcome.retryAfterMs, outcome.minWaitMs ?? 0),
            message.retried,
          );
          return;
        case "bad-request":
          // Not a job spec (someone else's XADD, a body damaged on the way): never runnable.
          this.#log("warn", "dropped a delivery that is not a job spec", {
            entry: message.id,
            body: excerpt(message.body),
          });
          this.#ack(message.id);
          return;
        default:
          // done, give-up (the job is dead) or unauthorized (never runnable).
          if (outcome.kind === "done" && outcome.status === "gone") {
            this.#log(
              "info",
              "dropped a delivery of a job that does not exist (expired or never stored)",
              {
                entry: message.id,
                jobId: outcome.id,
              },
            );
          }
          this.#ack(message.id);
      }
    } catch (error) {
      // The store or the queue failed: the delivery stays pending and is taken over later.
      this.#stats.failed++;
      this.#log("warn", "delivery not finished; it stays pending", {
        entry: message.id,
        error: String(error),
      });
    } finally {
      if (mine && jobId !== undefined) this.#jobsRunning.delete(jobId);
    }
  }

  /**
   * Keep the deliveries held half of `every` ms or longer (PullQueue.keep), so that none of a
   * live long handler is taken over as a stopped consumer's: called every `every` ms, a delivery
   * is kept by the time it has been idle 1.5 × `every` (half the queue's takeover time, when
   * `every` is a third of it), which leaves room for a late timer. One call at a time; a failure
   * is logged, and the next period tries again.
   */
  async #keepHeld(every: number): Promise<void> {
    if (this.#keeping || this.#held.size === 0) return;
    const since = performance.now() - every / 2;
    const ids: string[] = [];
    for (const [id, at] of this.#held) if (at <= since) ids.push(id);
    if (ids.length === 0) return;
    this.#keeping = true;
    try {
      await this.#queue.keep?.(ids);
    } catch (error) {
      this.#log("warn", "could not keep deliveries in flight; another worker may take them over", {
        count: ids.length,
        error: String(error),
      });
    } finally {
      this.#keeping = false;
    }
  }

  /** Acks of deliveries finished in the same turn go out in one round trip. */
  #ack(id: string): void {
    this.#acks.push(id);
    this.#stats.acked++;
    if (this.#ackFlush) return;
    this.#ackFlush = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.#flushAcks(),
    );
  }

  async #flushAcks(): Promise<void> {
    const ids = this.#acks;
    this.#acks = [];
    this.#ackFlush = undefined;
    if (ids.length === 0) return;
    const request = this.#queue.ack(ids).then(
      () => {},
      (error: unknown) => {
        // Not acknowledged: they are taken over later and find their jobs finished.
        this.#log("warn", "could not acknowledge deliveries", {
          count: ids.length,
          error: String(error),
        });
      },
    );
    this.#acking.add(request);
    await request;
    this.#acking.delete(request);
  }

  #slotFree(): Promise<void> {
    return new Promise((resolve) => {
      this.#wakeLoop = () => {
        this.#wakeLoop = undefined;
        resolve();
      };
    });
  }

  /** Wait `ms` (a pull backoff); only {@link PullWorker.stop} ends it early. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#stopPause = done;
    });
  }

  #log(level: "warn" | "info", msg: string, fields: Record<string, unknown>): void {
    try {
      const logger = this.#logger;
      if (logger) logger[level](msg, fields);
    } catch {
      // Nowhere left to report it.
    }
  }
}

/** The start of a body, for a log line (a foreign one may be megabytes). */
function excerpt(body: string): string {
  return body.length > 200 ? `${body.slice(0, 200)}… (${body.length} characters)` : body;
}

/** The job id a delivery's body names, if it can be read. */
function jobIdOf(body: string): string | undefined {
  // The store writes a body as the spec's JSON, id first: read it without parsing the whole spec
  // (the runner parses it once more). An escaped id, or another order, is parsed.
  if (body.startsWith('{"id":"')) {
    const end = body.indexOf('"', 7);
    const id = end > 7 ? body.slice(7, end) : "";
    if (id !== "" && !id.includes("\\")) return id;
  }
  try {
    const id = (JSON.parse(body) as { id?: unknown } | null)?.id;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}
