/**
 * @module
 * `EventWaiter`: `waitForEvents` (the store port's `EventWait`) for Redis over TCP. One reader per
 * store blocks with `XREAD COUNT 1 BLOCK <blockMs>` on the event stream `{p}:events`, on a
 * connection of its own (a duplicate of the store's: a blocking read would hold up every command
 * queued behind it on the shared one), and wakes every waiter whose id the new event is above. Any
 * number of open streams share that one blocking connection; it blocks only while someone waits.
 * A read never starts past the log's end (`XREVRANGE … COUNT 1` when the lowest id waited on is
 * past every event the reader has seen): a waiter that arrives below a running read's start is
 * woken at once, which is right only when an event above its id exists.
 * Upstash over REST has no blocking reads: a store without a blocking client has no
 * `waitForEvents`, and the streams poll (docs/adr/0021-realtime-streams.md).
 */
import { eventIdAbove } from "../port.ts";
import { entriesOfRead } from "./read-reply.ts";

/** The connection the reader blocks on: an ioredis connection of its own. */
export interface BlockingConnection {
  call(command: string, ...args: (string | number)[]): Promise<unknown>;
  disconnect(): void;
  /** ioredis' events: the reader listens to `error` (see `#loop`). */
  on?(event: "error", listener: (error: Error) => void): unknown;
}

/** What `RedisStore({ blocking })` takes: an ioredis client, duplicated for the blocking reads. */
export interface BlockingClient {
  duplicate(): BlockingConnection;
}

/** Longest single `XREAD BLOCK` (ms): a bound on how long the reader holds its connection idle. */
export const EVENTS_BLOCK_MS = 5_000;

interface Waiter {
  after: string | undefined;
  wake: () => void;
}

/**
 * The blocking reader and its waiters.
 *
 * @example
 * const waiter = new EventWaiter(redis, "{tw}:events");
 * await waiter.wait(lastId, 1_000, signal); // an event above lastId, or 1 s, or abort
 */
export class EventWaiter {
  readonly #client: BlockingClient;
  readonly #stream: string;
  readonly #blockMs: number;
  readonly #waiters = new Set<Waiter>();
  #connection: BlockingConnection | undefined;
  /** The id the running read waits above; `undefined` when no read runs. */
  #cursor: string | undefined;
  /** The newest event id the reader knows the log holds (its own reads); `undefined`: none. */
  #end: string | undefined;
  #reading = false;
  #closed = false;

  constructor(client: BlockingClient, stream: string, blockMs = EVENTS_BLOCK_MS) {
    this.#client = client;
    this.#stream = stream;
    this.#blockMs = blockMs;
  }

  /** See `EventWait.waitForEvents`. */
  wait(after: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter: Waiter = {
        after,
        wake: () => {
          clearTimeout(timer);
          signal.removeEventListener("abort", waiter.wake);
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.wake, Math.max(0, timeoutMs));
      signal.addEventListener("abort", waiter.wake, { once: true });
      if (this.#closed) return;
      // The running read waits above a later id: events between `after` and it would not wake
      // this waiter, so it reads the log at once (and waits again from where the log ends).
      if (this.#reading && this.#cursor !== undefined && eventIdAbove(this.#cursor, after)) {
        waiter.wake();
        return;
      }
      this.#waiters.add(waiter);
      if (!this.#reading) void this.#loop();
    });
  }

  /** Stop reading and let go of the connection; waits still end at their timeouts. */
  close(): void {
    this.#closed = true;
    this.#connection?.disconnect();
    this.#connection = undefined;
  }

  async #loop(): Promise<void> {
    this.#reading = true;
    try {
      while (this.#waiters.size > 0 && !this.#closed) {
        if (this.#connection === undefined) {
          this.#connection = this.#client.duplicate();
          // Without a listener ioredis prints every reconnect attempt of an outage to the console;
          // a failed read ends below, and the store's own connection reports the outage.
          this.#connection.on?.("error", () => {});
        }
        let cursor = this.#lowest();
        if (this.#end === undefined || eventIdAbove(cursor, this.#end)) {
          // The lowest id waited on may lie past the log's end: a schedule's stream opened on a
          // quiet log waits from the present, and a `Last-Event-ID` may name any id. A read from
          // there would wake every later waiter below it at once, again and again until it ends
          // (their streams reading the store every 100 ms): start at the log's end instead.
          const end = lastId(
            await this.#connection.call("XREVRANGE", this.#stream, "+", "-", "COUNT", 1),
          );
          this.#end = end;
          cursor = this.#lowest();
          if (eventIdAbove(cursor, end ?? "0-0")) cursor = end ?? "0-0";
        }
        this.#cursor = cursor;
        const reply = await this.#connection.call(
          "XREAD",
          "COUNT",
          1,
          "BLOCK",
          this.#blockMs,
          "STREAMS",
          this.#stream,
          cursor,
        );
        const id = firstId(reply);
        if (id === undefined) continue;
        if (this.#end === undefined || eventIdAbove(id, this.#end)) this.#end = id;
        for (const waiter of [...this.#waiters]) {
          if (eventIdAbove(id, waiter.after)) waiter.wake();
        }
      }
    } catch {
      // The connection failed or was closed: wake everyone; they read the log themselves (and
      // fail there if Redis is down), and the next wait starts a new read.
      this.#end = undefined;
      for (const waiter of [...this.#waiters]) waiter.wake();
    } finally {
      this.#reading = false;
      this.#cursor = undefined;
    }
  }

  /** The lowest id waited on (`"0-0"`: a waiter for any event, or none). */
  #lowest(): string {
    let cursor: string | undefined;
    for (const { after } of this.#waiters) {
      if (after === undefined) return "0-0";
      if (cursor === undefined || eventIdAbove(cursor, after)) cursor = after;
    }
    return cursor ?? "0-0";
  }
}

/** The id of the entry of an `XREVRANGE … COUNT 1` reply (`[[id, fields]]`), if any. */
function lastId(reply: unknown): string | undefined {
  const id = Array.isArray(reply) ? (reply[0] as [string, unknown] | undefined)?.[0] : undefined;
  return typeof id === "string" ? id : undefined;
}

/** The id of the first entry of an `XREAD` reply (`[[stream, [[id, fields], …]]]`), if any. */
function firstId(reply: unknown): string | undefined {
  const id = entriesOfRead<[string, unknown]>(reply)[0]?.[0];
  return typeof id === "string" ? id : undefined;
}
