/**
 * @module
 * Waiting for the event log to grow, optional on a store: what the realtime streams
 * (`GET /v1/jobs/:id/stream`, docs/api.md) block on instead of polling. The memory store wakes its
 * waiters in process; the Redis store over TCP blocks on `XREAD BLOCK` on a connection of its own
 * (never the shared command connection); a store without it — Redis over Upstash REST, which has
 * no blocking reads — is polled by the stream at a bounded cadence
 * (docs/adr/0021-realtime-streams.md).
 */

/** The optional part of the Store port that lets a reader wait for new events. */
export interface EventWait {
  /**
   * Resolves once the event log holds an event with an id above `after` (`<ms>-<seq>`, or
   * `undefined` for any event), or when `timeoutMs` has passed, or at once when `signal` aborts —
   * whichever comes first. Never rejects: a failed wait resolves (the caller reads the log and
   * decides). Reads nothing for the caller: read the events with `events({ after })` after it.
   */
  waitForEvents(after: string | undefined, timeoutMs: number, signal: AbortSignal): Promise<void>;
}

/**
 * The sequence part of a position past every event of its millisecond (`<ms>-EVENT_SEQ_MAX`):
 * positions the API and the stores make from a time, never an event's own id.
 */
export const EVENT_SEQ_MAX = "9999999999999999";

/** Whether event id `a` is above `b` (`<ms>-<seq>`, compared as numbers; `undefined` is lowest). */
export function eventIdAbove(a: string, b: string | undefined): boolean {
  if (b === undefined) return true;
  const [am = 0, as = 0] = a.split("-").map(Number);
  const [bm = 0, bs = 0] = b.split("-").map(Number);
  return am > bm || (am === bm && as > bs);
}
