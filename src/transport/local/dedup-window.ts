/**
 * @module
 * The deduplication window: a second publish with the same dedup id within the window is accepted
 * but not delivered, and answers with the first message's id (QStash: 10 minutes).
 *
 * Memory: per remembered id, a flat copy of the id string, one `Map` entry (id → ticket) and one
 * slot of a ring buffer in remember order (the id by reference and its expiry) — nothing of the
 * message, whose id the transport derives from the ticket. With 23-character job ids on Node 20
 * that is 80 to 115 bytes per id, depending on how full the power-of-two tables are
 * (retained-memory.test.ts measures it): the default 10-minute window at 300 messages/s holds
 * 180,000 ids, about 18 MB. Expired ids are dropped from the front of the ring on every `lookup`
 * and `remember` and, when publishing stops, by an unref'd timer; the ring shrinks as it empties,
 * so memory follows the rate of the last window and is given back once the window has passed.
 *
 * Past `maxEntries` ids, remembering one more forgets the oldest before its window ends (counted in
 * {@link DedupWindow.evictedEarly}): memory stays bounded, at the cost that a duplicate of that
 * oldest id, published in what remains of its window, would be delivered again. The oldest id is
 * the least likely to see a duplicate (re-publishes follow within seconds), and the default cap is
 * far above what a process publishes in one window, so the cap is a guard, not a working mode.
 */

/** The `Map` keeps tickets modulo 2^30: small integers (Smis) however long the process runs. */
const TICKET_MASK = 0x3fff_ffff;
/** Most ids a window may hold (live tickets must stay within 2^30 of each other). */
export const MAX_DEDUP_ENTRIES = 2 ** 28;
const MIN_CAPACITY = 16;

/** Options of {@link DedupWindow}. */
export interface DedupWindowOptions {
  /** How long an id is remembered after it is first published. */
  windowMs: number;
  /** Most ids remembered at once; past it the oldest is forgotten early. */
  maxEntries: number;
  /** Clock (epoch ms). */
  now: () => number;
  /**
   * How often expired ids are dropped while nothing else does it.
   * @default windowMs / 10, between 1 s and 60 s
   */
  sweepIntervalMs?: number | undefined;
  /**
   * Ticket of the first `remember`.
   * @default 0
   */
  firstTicket?: number | undefined;
}

/**
 * Dedup ids remembered for a fixed window after their first publish. Each `remember` gets a
 * ticket — 0, 1, 2, … in remember order — which `lookup` gives back while the id is remembered.
 */
export class DedupWindow {
  /** Id → its ticket modulo 2^30. A ring slot whose id was remembered again since is stale. */
  readonly #index = new Map<string, number>();
  // The ring, oldest slot first, in remember order: power-of-two capacity, parallel arrays.
  #ids: Array<string | undefined>;
  #expiresAt: Float64Array;
  /** Physical index of the oldest slot. */
  #head = 0;
  #size = 0;
  /** Ticket of the oldest slot (the ticket of slot i from the head is `#firstTicket + i`). */
  #firstTicket = 0;
  #evictedEarly = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #windowMs: number;
  readonly #maxEntries: number;
  readonly #sweepIntervalMs: number;
  readonly #now: () => number;

  /** @throws RangeError for a non-positive window, or a cap that is not an integer in range. */
  constructor(options: DedupWindowOptions) {
    const { windowMs, maxEntries } = options;
    if (!(windowMs > 0)) throw new RangeError("dedupWindowMs must be positive");
    if (!Number.isInteger(maxEntries) || maxEntries < 1 || maxEntries > MAX_DEDUP_ENTRIES) {
      throw new RangeError(`dedupMaxEntries must be an integer from 1 to ${MAX_DEDUP_ENTRIES}`);
    }
    this.#windowMs = windowMs;
    this.#maxEntries = maxEntries;
    this.#sweepIntervalMs =
      options.sweepIntervalMs ?? Math.min(60_000, Math.max(1_000, windowMs / 10));
    this.#now = options.now;
    this.#firstTicket = options.firstTicket ?? 0;
    this.#ids = new Array<string | undefined>(MIN_CAPACITY).fill(undefined);
    this.#expiresAt = new Float64Array(MIN_CAPACITY);
  }

  /** Ids remembered now. */
  get size(): number {
    return this.#size;
  }

  /** Ids forgotten before their window ended because `maxEntries` were remembered. */
  get evictedEarly(): number {
    return this.#evictedEarly;
  }

  /** The ticket `dedupId` was remembered with, if that was within the window. */
  lookup(dedupId: string): number | undefined {
    const now = this.#now();
    this.#dropExpired(now);
    const masked = this.#index.get(dedupId);
    if (masked === undefined) return undefined;
    const offset = (masked - this.#firstTicket) & TICKET_MASK;
    // Only after the clock stepped back can an expired slot wait behind a live one: check its own.
    const slot = (this.#head + offset) & (this.#ids.length - 1);
    return this.#expiresAt[slot]! > now ? this.#firstTicket + offset : undefined;
  }

  /**
   * Remember `dedupId` for the window from now (replacing what it had); returns its ticket. Drops
   * expired ids first, and the oldest one if `maxEntries` are still remembered.
   */
  remember(dedupId: string): number {
    const now = this.#now();
    this.#dropExpired(now);
    if (this.#size >= this.#maxEntries) {
      this.#dropOldest();
      this.#evictedEarly++;
    }
    if (this.#size === this.#ids.length) this.#resize(this.#ids.length * 2);
    // A copy, so the window holds exactly the id's characters: not a concatenation's parts (what a
    // template literal makes), nor a larger string that `dedupId` may be a slice of.
    const id = JSON.parse(JSON.stringify(dedupId)) as string;
    const slot = (this.#head + this.#size) & (this.#ids.length - 1);
    const ticket = this.#firstTicket + this.#size;
    this.#ids[slot] = id;
    this.#expiresAt[slot] = now + this.#windowMs;
    this.#size++;
    this.#index.set(id, ticket & TICKET_MASK);
    this.#armTimer();
    return ticket;
  }

  /** Forget every id and stop the timer (tickets keep counting). */
  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#index.clear();
    this.#firstTicket += this.#size;
    this.#head = 0;
    this.#size = 0;
    this.#ids = new Array<string | undefined>(MIN_CAPACITY).fill(undefined);
    this.#expiresAt = new Float64Array(MIN_CAPACITY);
  }

  /**
   * Drop slots from the front while they have expired. Slots are in remember order, so with a
   * clock that only moves forward they are in expiry order too; after it steps back, a later slot
   * may stay behind an earlier one for up to that step (`lookup` checks each id's own expiry).
   */
  #dropExpired(now: number): void {
    const before = this.#size;
    while (this.#size > 0 && this.#expiresAt[this.#head]! <= now) this.#dropOldest();
    if (this.#size === before) return;
    // Give memory back after a burst: while at most a quarter full, halve.
    let capacity = this.#ids.length;
    while (capacity > MIN_CAPACITY && this.#size <= capacity / 4) capacity /= 2;
    if (capacity < this.#ids.length) this.#resize(capacity);
  }

  #dropOldest(): void {
    const id = this.#ids[this.#head]!;
    if (this.#index.get(id) === (this.#firstTicket & TICKET_MASK)) this.#index.delete(id);
    this.#ids[this.#head] = undefined;
    this.#head = (this.#head + 1) & (this.#ids.length - 1);
    this.#firstTicket++;
    this.#size--;
  }

  /** Copy the ring, oldest first, into arrays of `capacity` (a power of two, at least the size). */
  #resize(capacity: number): void {
    const ids = new Array<string | undefined>(capacity).fill(undefined);
    const expiresAt = new Float64Array(capacity);
    const mask = this.#ids.length - 1;
    for (let i = 0; i < this.#size; i++) {
      const from = (this.#head + i) & mask;
      ids[i] = this.#ids[from];
      expiresAt[i] = this.#expiresAt[from]!;
    }
    this.#ids = ids;
    this.#expiresAt = expiresAt;
    this.#head = 0;
  }

  /** While ids are remembered, drop expired ones now and then even if nothing is published. */
  #armTimer(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#dropExpired(this.#now());
      if (this.#size > 0) this.#armTimer();
    }, this.#sweepIntervalMs);
    // It must not keep the process alive (Node); other runtimes' timers have no unref.
    (this.#timer as { unref?: () => void }).unref?.();
  }
}
