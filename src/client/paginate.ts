/**
 * @module
 * Listings as async iterables that follow the API's opaque cursors page by page.
 */
import type { Page } from "./types.ts";

/**
 * A listing: iterate it for every item across pages (fetched lazily, one request per page), or
 * walk the pages themselves.
 *
 * @example
 * for await (const job of client.jobs.list({ status: "dead", limit: 50 })) console.log(job.id);
 *
 * @example
 * for await (const page of client.jobs.list({ handler: "echo" }).pages()) console.log(page.items.length);
 */
export class PagedList<T> implements AsyncIterable<T> {
  readonly #fetchPage: (cursor: string | undefined) => Promise<Page<T>>;
  readonly #start: string | undefined;

  constructor(fetchPage: (cursor: string | undefined) => Promise<Page<T>>, startCursor?: string) {
    this.#fetchPage = fetchPage;
    this.#start = startCursor;
  }

  /** The first page only (one request). */
  first(): Promise<Page<T>> {
    return this.#fetchPage(this.#start);
  }

  /** Every page, in order, until the last one (the one without a `cursor`). */
  async *pages(): AsyncGenerator<Page<T>, void, undefined> {
    let cursor = this.#start;
    const seen = new Set<string>();
    for (;;) {
      const page = await this.#fetchPage(cursor);
      yield page;
      if (!page.cursor || seen.has(page.cursor)) return;
      seen.add(page.cursor);
      cursor = page.cursor;
    }
  }

  /** Every item across pages. */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.items;
  }

  /**
   * Collect items into an array, at most `max` of them (stops fetching once it has them).
   * @default max Infinity
   */
  async toArray(max = Number.POSITIVE_INFINITY): Promise<T[]> {
    const out: T[] = [];
    if (max <= 0) return out;
    for await (const item of this) {
      out.push(item);
      if (out.length >= max) break;
    }
    return out;
  }
}
