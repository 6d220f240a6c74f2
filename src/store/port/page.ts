/**
 * @module
 * The page every listing of the Store port answers with.
 */

/**
 * A page of a listing. `cursor` is opaque; absent on the last page.
 *
 * Listings are newest first by their index score (jobs: `createdAt`; schedules: `createdAt`;
 * dead-letter list: time of death; runs: `fireAt`, else `runAt`), ties by id descending. The cursor names the
 * last item returned, so writes between pages neither repeat nor skip items of the listing.
 * A page may hold fewer than `limit` items (even none) and still carry a cursor when a store bounds
 * the work of one call (the Redis store examines at most 1,000 index entries per call); only a
 * missing cursor means the end.
 */
export interface Page<T> {
  items: T[];
  cursor?: string;
}
