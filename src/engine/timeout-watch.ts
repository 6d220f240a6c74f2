/**
 * @module
 * The timeouts of the attempts this process runs, checked every {@link FREEZE_CHECK_MS} while any
 * runs. A process frozen past a timeout (SIGSTOP, a VM or GC pause) runs every timer that fell
 * due meanwhile when it wakes, in the order they were due. A handler's own timer, due before its
 * timeout, would run first: the handler would carry on with its work, its signal not aborted,
 * after its run lease lapsed and perhaps after another worker took the job over. This check is
 * due at most FREEZE_CHECK_MS after the freeze began, so it runs before any handler timer due
 * later than that, and fires the timeouts that passed: the signal is aborted first. (A handler
 * timer due sooner runs first; reading `ctx.signal` then fires the timeout, see
 * src/engine/attempt-context.ts.)
 *
 * The watched timeouts are a doubly linked list, not a `Set`. V8 replaces a `Set`'s table as it
 * grows and shrinks. In a worker draining jobs, the tables it left behind in the old generation
 * kept finished attempts alive through young-generation collections, which then promoted them
 * (docs/adr/0045-no-per-attempt-getters.md). Unlinking an entry clears every pointer it held.
 */

/** How often the running attempts' timeouts are checked. */
export const FREEZE_CHECK_MS = 100;

interface Watched {
  /** When the timeout is due, on `performance.now()`. */
  due: number;
  /** `undefined` once unwatched. */
  fire: (() => void) | undefined;
  prev: Watched | undefined;
  next: Watched | undefined;
}

let first: Watched | undefined;
let freezeCheck: ReturnType<typeof setInterval> | undefined;

/**
 * Watches one attempt's timeout: `fire` runs at the first check at or after `due` (on
 * `performance.now()`) unless the returned unwatch ran before. Unwatching twice does nothing.
 */
export function watchTimeout(due: number, fire: () => void): () => void {
  const entry: Watched = { due, fire, prev: undefined, next: first };
  if (first) first.prev = entry;
  first = entry;
  if (freezeCheck === undefined) {
    freezeCheck = setInterval(() => checkTimeouts(), FREEZE_CHECK_MS);
    // Never what keeps a process alive (Node; a Worker's timers have no unref).
    (freezeCheck as { unref?: () => void }).unref?.();
  }
  return () => {
    if (entry.fire === undefined) return;
    if (entry.prev) entry.prev.next = entry.next;
    else first = entry.next;
    if (entry.next) entry.next.prev = entry.prev;
    entry.prev = entry.next = entry.fire = undefined;
    if (first === undefined && freezeCheck !== undefined) {
      clearInterval(freezeCheck);
      freezeCheck = undefined;
    }
  };
}

/** Fires the watched timeouts due by now (the interval runs it; exported for tests). */
export function checkTimeouts(now = performance.now()): void {
  const due: Watched[] = [];
  for (let entry = first; entry; entry = entry.next) if (now >= entry.due) due.push(entry);
  // One unwatched meanwhile (its attempt ended) has no `fire` any more.
  for (const entry of due) entry.fire?.();
}

/** How many timeouts are watched, and whether the check runs (for tests). */
export function watchState(): { watching: number; checking: boolean } {
  let watching = 0;
  for (let entry = first; entry; entry = entry.next) watching++;
  return { watching, checking: freezeCheck !== undefined };
}
