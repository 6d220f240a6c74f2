/**
 * @module
 * `/health` (liveness: no I/O) and `/ready` (the store answers; reports the degradation level).
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
    let level: string;
    try {
      // One round trip that also evaluates the shared degradation controller.
      level = (await Promise.race([config.engine.stats(), timeout])).degradation.level;
    } catch (error) {
      throw new TickworkError(503, "store_unavailable", "the store does not answer", {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
    // Still ready when degraded or critical: the level is shared by every instance, and taking
    // them all out of rotation would turn "overloaded" into "down". Admission control acts instead.
    return c.json({ ok: true, degradation: level });
  });

  return routes;
}
