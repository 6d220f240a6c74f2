/**
 * @module
 * Background work of a long-lived engine, handed to the `ctx.waitUntil` of the request that
 * started it. The engine and app are built once per isolate (building the app costs more CPU than
 * serving a request), while `waitUntil` belongs to one request: so the engine's `defer` collects
 * the work here, and each request, once answered, extends its own lifetime until the work deferred
 * so far has settled. Work deferred while a request runs is always covered by that request.
 */

/**
 * A set of pending promises.
 *
 * @example
 * const background = new Background();
 * const engine = createEngine({ store, transport, handlers, defer: background.defer });
 * const response = await app.fetch(request, env, ctx);
 * ctx.waitUntil(background.settled());
 */
export class Background {
  readonly #pending = new Set<Promise<unknown>>();

  /** Track `work` until it settles (its rejection is the engine's to log; it is not rethrown). */
  readonly defer = (work: Promise<unknown>): void => {
    const tracked = work.then(
      () => undefined,
      () => undefined,
    );
    this.#pending.add(tracked);
    void tracked.then(() => this.#pending.delete(tracked));
  };

  /** How many deferred promises have not settled. */
  get size(): number {
    return this.#pending.size;
  }

  /** Resolves once every promise deferred so far has settled; never rejects. */
  settled(): Promise<void> {
    return Promise.all(this.#pending).then(() => undefined);
  }
}
