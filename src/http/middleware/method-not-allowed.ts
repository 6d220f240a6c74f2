/**
 * @module
 * 405 for a known path asked with a method it does not serve (Hono alone would say 404).
 */
import type { Hono } from "hono";
import type { BlankSchema } from "hono/types";
import { TickworkError } from "../../core/errors.ts";
import type { AppEnv } from "../options.ts";

/**
 * For every route path registered so far, add a catch-all that answers 405 with `Allow`. Call it
 * on the root app after the last route: Hono tries handlers in registration order, so the real
 * routes answer first and the catch-all only sees the other methods. `note` ends the detail
 * (e.g. which roles the app serves, when that is why a method is missing).
 *
 * @example
 * answerMethodNotAllowed(app);
 */
export function answerMethodNotAllowed(app: Hono<AppEnv, BlankSchema, "/">, note?: string): void {
  const suffix = note ? ` (${note})` : "";
  const methods = new Map<string, Set<string>>();
  for (const route of app.routes) {
    if (route.method === "ALL") continue;
    const set = methods.get(route.path) ?? new Set<string>();
    set.add(route.method);
    if (route.method === "GET") set.add("HEAD");
    methods.set(route.path, set);
  }
  for (const [path, set] of methods) {
    const allow = [...set].sort().join(", ");
    app.all(path, function methodNotAllowed(c) {
      c.header("Allow", allow);
      throw new TickworkError(
        405,
        "method_not_allowed",
        `${c.req.method} is not allowed here; allowed: ${allow}${suffix}`,
      );
    });
  }
}
