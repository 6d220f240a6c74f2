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
 * Backpressure: it pulls only as many as it has free slots. A delivery holds its slot from its
 * pull until its handler returns (or until it is answered, when no handler runs); recording the
 * handler's outcome happens after, outside the slot, so the next pull goes out while the last
 * outcomes are being recorded (BullMQ's worker fetches its next job as it completes one, too). At
 * most `concurrency` handlers run at once; up to as many more deliveries may be finishing.
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
  /** Deliveries under way: pulled and not answered yet (running, or their outcome being recorded). */
  inFlight: number;
  /** Deliveries it runs at once at most (its `concurrency`). */
  concurrency: number;
}

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
  readonly #inFlight = new Set<Promise<void>>();
  /** Deliveries holding a slot: pulled, and their handler not returned yet. */
  #slotsHeld = 0;
  /** Job ids with a delivery running in this process. */
  readonly #jobsRunning = new Set<string>();
  #acks: string[] = [];
  #ackFlush: Promise<void> | undefined;
  /** Ack requests still under way. */
  readonly #acking = new Set<Promise<void>>();
  #loop: Promise<void> | undefined;
  #stopping = false;
  #wakeLoop: (() => void) | undefined;
  #stopPause: (() => void) | undefined;
  readonly #stats = { pulled: 0, acked: 0, retried: 0, deferred: 0, failed: 0 };

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
    this.#logger = options.logger;
  }

  /** Prepare the queue (e.g. its consumer group) and start pulling. */
  async start(): Promise<void> {
    if (this.#loop) return;
    await this.#queue.open();
    this.#loop = this.#run();
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
    await this.#loop?.catch(() => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, deadlineMs);
    });
    await Promise.race([Promise.all(this.#inFlight), deadline]);
    clearTimeout(timer);
    await this.#flushAcks();
    await Promise.all(this.#acking);
    return { left: this.#inFlight.size };
  }

  stats(): PullWorkerStats {
    return { ...this.#stats, inFlight: this.#inFlight.size, concurrency: this.#concurrency };
  }

  async #run(): Promise<void> {
    let failures = 0;
    while (!this.#stopping) {
      // Free slots, and no more than `concurrency` deliveries finishing besides.
      const free = Math.min(
        this.#concurrency - this.#slotsHeld,
        2 * this.#concurrency - this.#inFlight.size,
      );
      if (free <= 0) {
        await this.#slotFree();
        continue;
      }
      let messages: PulledMessage[];
      try {
        messages = await this.#queue.pull(free, this.#idleWaitMs);
        failures = 0;
      } catch (error) {
        if (this.#stopping) break;
        failures++;
        this.#log("warn", "could not pull from the queue; retrying", { error: String(error) });
        await this.#pause(Math.min(100 * 2 ** Math.min(failures, 6), 5_000));
        continue;
      }
      this.#stats.pulled += messages.length;
      for (const message of messages) this.#start(message);
    }
  }

  #start(message: PulledMessage): void {
    this.#slotsHeld++;
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      this.#slotsHeld--;
      this.#wakeLoop?.();
    };
    const run = this.#handle(message, release).finally(() => {
      this.#inFlight.delete(run);
      release();
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
            Math.max(250, outcome.retryAfterMs),
            message.retried,
          );
          return;
        default:
          // done, give-up (the job is dead), bad-request or unauthorized (never runnable).
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
