/**
 * @module
 * The deduplication window: a second publish with the same dedup id within the window is accepted
 * but not delivered, and answers with the first message's id (QStash: 10 minutes).
 */

/** Dedup ids remembered for a fixed window after their first publish. */
export class DedupWindow {
  // Insertion order is publish order, so expired entries are always at the front.
  readonly #entries = new Map<string, { messageId: string; expiresAt: number }>();
  readonly #windowMs: number;
  readonly #now: () => number;

  constructor(windowMs: number, now: () => number) {
    this.#windowMs = windowMs;
    this.#now = now;
  }

  /** The message id first published under `dedupId`, if still within the window. */
  lookup(dedupId: string): string | undefined {
    this.#sweep();
    return this.#entries.get(dedupId)?.messageId;
  }

  /** Remember `dedupId` as published now under `messageId`. */
  remember(dedupId: string, messageId: string): void {
    this.#entries.delete(dedupId);
    this.#entries.set(dedupId, { messageId, expiresAt: this.#now() + this.#windowMs });
  }

  #sweep(): void {
    const now = this.#now();
    for (const [dedupId, entry] of this.#entries) {
      if (entry.expiresAt > now) break;
      this.#entries.delete(dedupId);
    }
  }
}
