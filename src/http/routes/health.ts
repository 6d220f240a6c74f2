/**
 * @module
 * `/health` (liveness: no I/O) and `/ready` (the store answers).
 */
import { Hono } from "hono";
import { TickworkError } from "../../core/errors.ts";
import type { AppConfig, AppEnv } from "../options.ts";

/** How long `/ready` waits for the store before answering 503. */
const READY_TIMEOUT_MS = 2_000;

/**
 * The health routes, to mount at the base path.
 *
 * @example
 * app.route("/", healthRoutes(config));
 */
export function healthRoutes(config: AppConfig): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();

  routes.get("/health", (c) => c.json({ ok: true }));

  routes.get("/ready", async (c) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)),
        READY_TIMEOUT_MS,
      );
    });
    try {
      await Promise.race([config.engine.store.now(), timeout]);
    } catch (error) {
      throw new TickworkError(503, "store_unavailable", "the store does not answer", {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
    return c.json({ ok: true });
  });

  return routes;
}
