/**
 * @module
 * `RedisStreams`: a durable, self-hosted queue on Redis Streams (docs/streams.md). It is the
 * transport (publishing the outbox's messages onto the stream) and the pull queue the workers
 * read with XREADGROUP. With `RedisStore({ dispatch: "streams" })` a submit's own script puts its
 * delivery on the stream, so a submit is one round trip with nothing to publish.
 *
 * Deliveries stay in the consumer group's pending list until a worker is done with them (XACK and
 * XDEL); one whose consumer stopped is taken over (XPENDING IDLE, XCLAIM), and the job's run
 * lease decides at begin-run whether it runs again. A live worker keeps what it holds (`keep`).
 * Not-yet-due deliveries (delays, retries after backoff) wait in a sorted set and are moved onto
 * the stream by the workers when due.
 */
import { guardedWait } from "../../../core/delivery.ts";
import { MAX_TIMER_MS } from "../../../core/duration.ts";
import type { OutboxMessage } from "../../../core/model.ts";
import { keys as buildKeys } from "../keys.ts";
import { entriesOfRead } from "../read-reply.ts";
import {
  fromIoredis,
  type IoredisScripting,
  type LuaScript,
  type ScriptClient,
  safeEval,
} from "../script.ts";
import { scripts } from "../scripts.generated.ts";

/** The ioredis client surface `RedisStreams` uses (an ioredis `Redis`). */
export interface StreamsClient extends IoredisScripting {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  /** A new connection with the same options, for the blocking reads. */
  duplicate(): StreamsClient & {
    disconnect(): void;
    on?(event: "error", listener: (error: Error) => void): unknown;
  };
}

/** Options of {@link RedisStreams}. */
export interface RedisStreamsOptions {
  /** An ioredis client (Redis over TCP: blocking reads need a connection of their own). */
  redis: StreamsClient;
  /**
   * Key prefix: the same as the `RedisStore`'s.
   * @default "tw"
   */
  prefix?: string | undefined;
  /**
   * This process's consumer name in the group.
   * @default `<random>` per instance
   */
  consumer?: string | undefined;
  /**
   * A delivery pending this long with a consumer is taken over by another (its run lease still
   * decides whether the job runs again, so a live long handler is not run twice).
   * @default 30_000
   */
  claimIdleMs?: number | undefined;
  /**
   * How often a busy worker moves due delayed deliveries and takes over stale ones, at most.
   * @default 5_000
   */
  maintainEveryMs?: number | undefined;
  /**
   * Wait before retry `n + 1` of a failed attempt (ms), unless the handler asked for a time. One
   * that throws or answers no finite number is logged and the default's wait used instead.
   * @default (retried) => Math.min(1000 * 2 ** retried, 60_000)
   */
  backoff?: ((retried: number) => number) | undefined;
  /**
   * Where it says what it dropped or repaired that it did not write itself: an entry on the
   * stream that is neither a delivery nor a wake-up, a delayed body that is malformed, entries
   * the consumer group skipped (put back on the stream). Any logger with `warn` (the engine's).
   */
  logger?: StreamsLogger | undefined;
}

/** What {@link RedisStreams} logs with (the engine's `Logger` fits). */
export interface StreamsLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
}

/** A pulled delivery (see `PullQueue` in `src/transport/port.ts`). */
export interface StreamMessage {
  id: string;
  body: string;
  retried: number;
  claimed: boolean;
}

/** What the queue holds now, for `/metrics` and `/v1/stats`. */
export interface StreamsStats {
  /** Entries on the stream: not read yet, or read and pending. */
  length: number;
  /** Read by a consumer and not acknowledged yet. */
  pending: number;
  /** Age of the oldest pending delivery, since it was put on the queue (ms; 0 when none). */
  oldestPendingMs: number;
  /** Deliveries waiting for their not-before time (delays, retries after backoff). */
  delayed: number;
  /** Consumers the group knows (including killed ones until they are deleted: docs/streams.md). */
  consumers: number;
  /**
   * Deliveries every worker of the deployment took over from stopped consumers (a counter kept
   * in the store's metrics hash, so any process reads the same).
   */
  claimed: number;
}

const GROUP = "tickwork";
/** The longest a delivery is put back for: a year, a submit's longest delay. */
const MAX_REQUEUE_MS = 365 * 86_400_000;
const MAX_WAIT_MS = 300_000;

/** How long an interrupted read may take to end with what it read (see `RedisStreams.interrupt`). */
const UNBLOCK_WAIT_MS = 1_000;

const noop = () => {};

/**
 * What `promise` resolves to if it settles before `until` (`performance.now()` ms), else
 * `undefined` (also when it rejects). Its timer keeps no process alive.
 */
async function settledWithin<T>(promise: Promise<T>, until: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, until - performance.now()), undefined);
    if (typeof timer === "object") timer.unref?.();
  });
  try {
    return await Promise.race([promise.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The Redis Streams transport and pull queue.
 *
 * @example
 * const redis = new Redis(process.env.REDIS_URL);
 * const store = new RedisStore({ client: fromIoredis(redis), dispatch: "streams" });
 * const streams = new RedisStreams({ redis });
 * const engine = createEngine({ store, transport: streams, handlers });
 * const worker = new PullWorker({ runner: engine.runner, queue: streams, concurrency: 20 });
 * await worker.start();
 */
export class RedisStreams {
  readonly #redis: StreamsClient;
  /** `#redis` as the scripts' client (one adapter, so it remembers whether functions work). */
  readonly #scripts: ScriptClient;
  readonly #root: string;
  readonly #stream: string;
  readonly #consumer: string;
  readonly #claimIdleMs: number;
  /**
   * A third of `claimIdleMs`: a delivery kept this often is never idle long enough to be taken
   * over (see {@link RedisStreams.keep}).
   */
  readonly keepAfterMs: number;
  readonly #maintainEveryMs: number;
  readonly #backoff: (retried: number) => number;
  readonly #logger: StreamsLogger | undefined;
  #reader: ReturnType<StreamsClient["duplicate"]> | undefined;
  /** The reading connection's id (`CLIENT ID`), to end its blocked read (see {@link interrupt}). */
  #readerId: Promise<number | undefined> = Promise.resolve(undefined);
  /**
   * When the last maintenance ran. This and the due times below are read on the monotonic clock
   * (`performance.now()`): a wall clock stepped back (NTP) must not stop maintenance for as long.
   */
  #lastMaintain = Number.NEGATIVE_INFINITY;
  /** When the earliest delayed delivery is due (ms, monotonic); Infinity: none. */
  #nextDelayedAt = Number.NEGATIVE_INFINITY;
  /** Pending deliveries of other consumers were seen: keep checking for stale ones. */
  #othersPending = true;
  /** Skipped entries put back since the last line about it, and when that line was written. */
  #requeuedUnlogged = 0;
  #requeuedLoggedAt = Number.NEGATIVE_INFINITY;
  #interrupted = false;
  #closed = false;
  /**
   * Moves delayed deliveries onto the stream when the earliest falls due, whether or not this
   * process is reading then (see {@link RedisStreams.#armMover}).
   */
  #mover: ReturnType<typeof setTimeout> | undefined;
  /** When {@link RedisStreams.#mover} fires (ms, monotonic); Infinity: not armed. */
  #moverAt = Number.POSITIVE_INFINITY;

  constructor(options: RedisStreamsOptions) {
    this.#redis = options.redis;
    this.#scripts = fromIoredis(options.redis);
    this.#root = buildKeys(options.prefix).root;
    this.#stream = `${this.#root}:q`;
    this.#consumer =
      options.consumer ?? `c-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;
    this.#claimIdleMs = positive("claimIdleMs", options.claimIdleMs, 30_000);
    this.keepAfterMs = Math.max(1, Math.floor(this.#claimIdleMs / 3));
    this.#maintainEveryMs = positive("maintainEveryMs", options.maintainEveryMs, 5_000);
    // A backoff answering NaN failed the requeue script after it had taken the entry off the
    // stream (the job stayed `failed`, delivered nowhere); Infinity parked it for good.
    this.#backoff = guardedWait(options.backoff, defaultBackoff, "streams backoff", (msg, fields) =>
      this.#warn(msg, fields),
    );
    this.#logger = options.logger;
  }

  /** This process's consumer name. */
  get consumer(): string {
    return this.#consumer;
  }

  // ── Transport ────────────────────────────────────────────────────────────

  /** Put outbox messages on the queue (due ones on the stream, later ones delayed). */
  async publish(messages: OutboxMessage[]) {
    if (messages.length === 0) return [];
    const args: string[] = [];
    for (const m of messages) args.push(m.job.id, String(m.notBefore), JSON.stringify(m.job));
    try {
      await this.#run(scripts.streamPublish, args);
      return messages.map((m) => ({
        id: m.id,
        ok: true as const,
        messageId: m.dedupId,
        deduplicated: false,
      }));
    } catch (error) {
      const err = error instanceof Error ? error : new Error(String(error));
      return messages.map((m) => ({ id: m.id, ok: false as const, error: err }));
    }
  }

  /**
   * Deliveries are pulled, never pushed: a request to the worker route is not one of ours.
   * (The worker route answers 401 to everything while this is the transport.)
   */
  async verify(): Promise<boolean> {
    return false;
  }

  // ── PullQueue ────────────────────────────────────────────────────────────

  async open(): Promise<void> {
    try {
      await this.#redis.call("XGROUP", "CREATE", this.#stream, GROUP, "0", "MKSTREAM");
    } catch (error) {
      if (!String((error as Error).message).includes("BUSYGROUP")) throw error;
    }
  }

  async pull(max: number, waitMs: number): Promise<StreamMessage[]> {
    this.#interrupted = false;
    const count = Math.max(1, Math.floor(max));
    const now = performance.now();
    if (now - this.#lastMaintain >= this.#maintainEveryMs || now >= this.#nextDelayedAt) {
      const claimed = await this.#maintain(count);
      if (claimed.length > 0) return claimed;
    }
    if (this.#interrupted || this.#closed) return [];
    const after = performance.now();
    let block = Math.min(waitMs, MAX_WAIT_MS, this.#nextDelayedAt - after);
    // Wake for the next maintenance: due maintainEveryMs after the last while anything is
    // pending, else claimIdleMs after it all the same — a wake-up entry read by a consumer that
    // then stopped (or whose reply was lost) reaches nobody else, and is claimable only then.
    const maintainIn = this.#othersPending ? this.#maintainEveryMs : this.#claimIdleMs;
    block = Math.min(block, this.#lastMaintain + maintainIn - after);
    block = Math.max(1, Math.ceil(block));
    const reply = await this.#read(count, block).catch(async (error: unknown) => {
      // The stream or its group was deleted (a FLUSHDB, a key eviction, a DEL or XGROUP DESTROY
      // under this blocked read, which Redis 7 ends with UNBLOCKED or NOGROUP): make them again.
      if (!/NOGROUP|UNBLOCKED/.test(String((error as Error)?.message))) throw error;
      await this.open();
      return null;
    });
    const entries = entriesOfRead<Entry>(reply);
    return this.#deliveries(entries, false);
  }

  /** Move due delayed deliveries onto the stream (no takeovers) and note the next one. */
  async #moveDue(): Promise<void> {
    const asked = performance.now();
    const reply = (await this.#run(scripts.streamMaintain, [
      "100",
      this.#consumer,
      "0",
      "0",
    ])) as MaintainReply;
    const [, nextAt, , serverNow] = reply;
    this.#reportDropped(reply[5]);
    this.#nextDelayedAt =
      Number(nextAt) < 0
        ? Number.POSITIVE_INFINITY
        : asked + Math.max(0, Number(nextAt) - Number(serverNow));
    this.#armMover();
  }

  /** Delayed members whose body was malformed (streamMaintain dropped them): one line each. */
  #reportDropped(members: string[] | undefined): void {
    for (const member of members ?? []) {
      this.#warn("dropped a delayed delivery whose body is malformed (not `<retries> <spec>`)", {
        member,
      });
    }
  }

  #warn(msg: string, fields: Record<string, unknown>): void {
    try {
      this.#logger?.warn(msg, fields);
    } catch {
      // Nowhere left to report it.
    }
  }

  /**
   * Arms {@link RedisStreams.#mover} for the earliest delayed delivery this process knows of
   * (at once when it only knows that the earliest changed: a wake-up). A wake-up reaches one
   * consumer, which may be too busy to pull when the delivery falls due (every slot taken by long
   * handlers) while another sleeps until its next maintenance: so the one that knows moves it
   * onto the stream, over the shared connection, and the entry wakes a blocked reader at once.
   * While this process reads, the same spares its read Redis's clock tick (`hz`: a blocked read
   * times out up to 100 ms late).
   */
  #armMover(): void {
    const at = this.#nextDelayedAt;
    if (this.#closed || at === Number.POSITIVE_INFINITY) return;
    if (this.#mover !== undefined && this.#moverAt <= at) return;
    clearTimeout(this.#mover);
    this.#moverAt = at;
    this.#mover = setTimeout(
      () => {
        this.#mover = undefined;
        this.#moverAt = Number.POSITIVE_INFINITY;
        if (this.#closed) return;
        // A failure leaves it to the next pull's maintenance (it runs once one is due).
        this.#moveDue().catch(() => {});
      },
      // Never past a timer's limit (24.8 days): a longer one fires after 1 ms, and a delivery
      // delayed a month ran the maintenance script every millisecond. Early, it re-arms.
      Math.min(MAX_TIMER_MS, Math.max(0, at - performance.now())),
    );
    // It keeps no process alive: a worker's pulls do, and a process done with its queue exits.
    if (typeof this.#mover === "object") this.#mover.unref?.();
  }

  /** The read in flight: its answer (settled), and its end with no entries (see {@link interrupt}). */
  #readInFlight: { answered: Promise<unknown>; cancel: () => void } | undefined;

  #read(count: number, block: number): Promise<unknown> {
    let cancel: () => void = () => {};
    const cancelled = new Promise<null>((resolve) => {
      cancel = () => resolve(null);
    });
    const read = this.#reading().call(
      "XREADGROUP",
      "GROUP",
      GROUP,
      this.#consumer,
      "COUNT",
      count,
      "BLOCK",
      block,
      "STREAMS",
      this.#stream,
      ">",
    );
    const inFlight = { answered: read.then(noop, noop), cancel };
    this.#readInFlight = inFlight;
    return Promise.race([cancelled, read]).finally(() => {
      if (this.#readInFlight === inFlight) this.#readInFlight = undefined;
    });
  }

  async ack(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.#run(scripts.streamAck, ids);
  }

  async retryLater(message: StreamMessage, delayMs: number, retried: number): Promise<void> {
    // The delayed set's member is the job id. A body that names none (a foreign entry handed
    // back unread) goes under its entry id: back on the stream, its reader drops it and says so.
    const member = jobIdOf(message.body) ?? message.id;
    // The server's clock decides due times: pass the delay, the script adds it to its now.
    await this.#run(scripts.streamRequeue, [
      message.id,
      member,
      String(retried),
      // A finite number of ms for the script: NaN is none, Infinity (or past it) a year.
      String(Math.min(MAX_REQUEUE_MS, Math.max(0, Math.ceil(delayMs) || 0))),
      message.body,
    ]);
  }

  backoff(retried: number): number {
    return this.#backoff(retried);
  }

  /**
   * Deliveries this process still works on start their idle time over (XCLAIM to itself,
   * JUSTID), so no worker takes over a live long handler's delivery after `claimIdleMs`: without
   * it, its own consumer's maintenance took it over and queued it again every second until the
   * handler returned. One no longer this consumer's is left alone (streamKeep).
   */
  async keep(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.#run(scripts.streamKeep, [this.#consumer, ...ids]);
  }

  interrupt(): void {
    this.#interrupted = true;
    const read = this.#readInFlight;
    const reader = this.#reader;
    if (read && reader) void this.#endRead(reader, read);
  }

  /**
   * Ends a blocked read as if its time ran out (`CLIENT UNBLOCK` from the shared connection), so
   * that entries Redis already handed it still arrive: dropping its connection would lose them,
   * left pending with this consumer until another took them over (`claimIdleMs`), though nobody
   * ran them. Only when that cannot be done within {@link UNBLOCK_WAIT_MS} (Redis unreachable,
   * `CLIENT` refused) is the connection dropped (a new one is made on demand) and the read ended
   * with no entries: ioredis would leave it unanswered for good while the connection reconnects.
   */
  async #endRead(
    reader: ReturnType<StreamsClient["duplicate"]>,
    read: { answered: Promise<unknown>; cancel: () => void },
  ): Promise<void> {
    const until = performance.now() + UNBLOCK_WAIT_MS;
    const id = await settledWithin(this.#readerId, until);
    if (typeof id === "number" && Number.isFinite(id)) {
      await settledWithin(this.#redis.call("CLIENT", "UNBLOCK", String(id)), until);
    }
    // Unblocked, or answered already (its reply on its way): it ends now with what it read.
    const ended = read.answered.then(() => true);
    if (await settledWithin(ended, until)) return;
    if (this.#reader === reader) this.#reader = undefined;
    reader.disconnect();
    read.cancel();
  }

  /** Stop reading (the shared client stays the caller's to close). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#mover);
    this.#mover = undefined;
    this.interrupt();
    // The reading connection goes (an interrupted read keeps it until it has answered).
    const reader = this.#reader;
    const read = this.#readInFlight;
    this.#reader = undefined;
    if (read) void read.answered.then(() => reader?.disconnect());
    else reader?.disconnect();
    // A wake-up reaches one consumer: this one may be the only one that knows when the next
    // delayed delivery is due. Hand it over, or the others sleep through it (up to idleWaitMs).
    await this.#run(scripts.streamHandOver, []).catch(() => {});
    // Leave the group when nothing is pending here (a consumer name is per process: otherwise
    // every restart would leave one behind).
    // Consumers of killed processes that hold nothing go too (`forgetConsumers` in
    // lua/includes/streams.lua).
    await this.#run(scripts.streamLeave, [this.#consumer, String(this.#claimIdleMs)]).catch(
      () => {},
    );
  }

  /** Queue length, pending deliveries and their age, delayed ones and consumers. */
  async stats(): Promise<StreamsStats> {
    const raw = (await this.#run(scripts.streamStats, [])) as number[];
    const [length, pending, oldestPendingMs, delayed, consumers, claimed] = raw.map(Number);
    return {
      length: length ?? 0,
      pending: pending ?? 0,
      oldestPendingMs: oldestPendingMs ?? 0,
      delayed: delayed ?? 0,
      consumers: consumers ?? 0,
      claimed: claimed ?? 0,
    };
  }

  /**
   * {@link RedisStreams.stats} as the transport's `queueStats` (`QueueStats` in
   * `src/transport/port.ts`), for `/metrics`, `/v1/stats` and the dashboard.
   */
  async queueStats(): Promise<StreamsStats & { kind: "redis-streams" }> {
    return { kind: "redis-streams", ...(await this.stats()) };
  }

  // ── internals ────────────────────────────────────────────────────────────

  async #maintain(count: number): Promise<StreamMessage[]> {
    const reply = (await this.#run(scripts.streamMaintain, [
      String(Math.max(100, count)),
      this.#consumer,
      String(this.#claimIdleMs),
      String(count),
    ])) as MaintainReply;
    this.#lastMaintain = performance.now();
    const [, nextAt, claimed, serverNow] = reply;
    this.#reportDropped(reply[5]);
    const requeued = Number(reply[6] ?? 0);
    if (requeued > 0) {
      // A line at most once a minute while it goes on (a batch a call), with the count since.
      this.#requeuedUnlogged += requeued;
      if (this.#lastMaintain - this.#requeuedLoggedAt >= 60_000) {
        this.#warn(
          "put entries the consumer group skipped back on the stream (the group was created, moved or made again after they were added)",
          { count: this.#requeuedUnlogged },
        );
        this.#requeuedLoggedAt = this.#lastMaintain;
        this.#requeuedUnlogged = 0;
      }
    }
    // Due times are the server's: turn them into this process's clock.
    this.#nextDelayedAt =
      Number(nextAt) < 0
        ? Number.POSITIVE_INFINITY
        : this.#lastMaintain + Math.max(0, Number(nextAt) - Number(serverNow));
    this.#othersPending = Number(reply[4]) > 0;
    // Some were put back (at most a batch a call): the next pull looks for more at once.
    if (requeued > 0) this.#lastMaintain = Number.NEGATIVE_INFINITY;
    this.#armMover();
    const messages = await this.#deliveries(claimed ?? [], true);
    return messages;
  }

  /** Deliveries from stream entries; wake-ups (and anything unreadable) are acknowledged. */
  async #deliveries(entries: Entry[], claimed: boolean): Promise<StreamMessage[]> {
    const out: StreamMessage[] = [];
    const drop: string[] = [];
    for (const entry of entries) {
      if (!entry) continue;
      const [id, fields] = entry;
      const f = fieldsOf(fields);
      if (f.j !== undefined) {
        out.push({ id, body: f.j, retried: Number(f.r ?? 0) || 0, claimed });
      } else {
        // A wake-up: the earliest delayed delivery changed; re-read it before the next wait.
        if (f.w !== undefined) this.#nextDelayedAt = Number.NEGATIVE_INFINITY;
        else if (fields && fields.length > 0) {
          // Not written by tickwork (someone else's XADD): acknowledged and deleted, once. (No
          // fields: an entry deleted while pending, as Redis 6.2 answers a claim of it.)
          const names: string[] = [];
          for (let i = 0; fields && i < fields.length && names.length < 10; i += 2) {
            names.push(String(fields[i]).slice(0, 50));
          }
          this.#warn("dropped a stream entry that is neither a delivery nor a wake-up", {
            entry: id,
            fields: names,
          });
        }
        drop.push(id);
      }
    }
    // A wake-up was among them: learn the new earliest now, not at the next pull.
    if (this.#nextDelayedAt === Number.NEGATIVE_INFINITY) this.#armMover();
    if (drop.length > 0) await this.ack(drop);
    return out;
  }

  #reading(): ReturnType<StreamsClient["duplicate"]> {
    if (!this.#reader) {
      const reader = this.#redis.duplicate();
      // The shared client reports a lost connection (once, in the server's log); without a
      // listener ioredis prints every failed reconnect of this one as an unhandled error.
      reader.on?.("error", () => {});
      this.#reader = reader;
      // Asked first on the new connection, so it answers before any read blocks it.
      this.#readerId = reader.call("CLIENT", "ID").then(Number, () => undefined);
    }
    return this.#reader;
  }

  #run(script: LuaScript, args: string[]): Promise<unknown> {
    return safeEval(this.#scripts, script, [this.#root], args);
  }
}

type Entry = [string, string[] | null] | null;

/** streamMaintain's answer (see its header). */
type MaintainReply = [number, number, Entry[], number, number, string[]?, number?];

function fieldsOf(fields: string[] | null): Record<string, string> {
  const out: Record<string, string> = {};
  if (!fields) return out;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const k = fields[i] as string;
    if (k === "j" || k === "r" || k === "w") out[k] = fields[i + 1] as string;
  }
  return out;
}

/** The job id a body's JSON names, or `undefined` (not JSON, no string id). */
function jobIdOf(body: string): string | undefined {
  try {
    const id = (JSON.parse(body) as { id?: unknown } | null)?.id;
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined;
  }
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  // At most a timer's longest delay: the pull worker's keep timer runs every claimIdleMs / 3.
  if (!(Number.isFinite(value) && value > 0 && value <= MAX_TIMER_MS)) {
    throw new RangeError(
      `${name} must be a positive number of ms up to ${MAX_TIMER_MS}, got ${String(value)}`,
    );
  }
  return value;
}

/** The default backoff: 1 s, 2 s, 4 s … up to a minute. */
const defaultBackoff = (retried: number): number => Math.min(1_000 * 2 ** retried, 60_000);
