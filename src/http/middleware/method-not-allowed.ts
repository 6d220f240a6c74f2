/**
 * @module
 * 405 for a known path asked with a method it does not serve (Hono alone would say 404).
 */
import type { Hono } from "hono";
import { basePath } from "hono/route";
import { TrieRouter } from "hono/router/trie-router";
import type { BlankSchema } from "hono/types";
import { TickworkError } from "../../core/errors.ts";
import type { AppEnv } from "../options.ts";

/**
 * After the last route, one catch-all: a request no route answered whose path is a route's, asked
 * with a method that route does not serve, gets 405 with `Allow`; any other goes on (to a later
 * route of an outer app, or the not-found answer). Call it on the root app after the last route.
 *
 * The paths and their methods sit in a router of their own, read only for requests no route
 * answered. One catch-all per path in the app's router (as before) kept Hono from its
 * one-regular-expression router, which cannot hold a static `POST /v1/jobs/batch` next to an
 * any-method `/v1/jobs/:id`, and every request paid for the tree router instead.
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
  const router = new TrieRouter<Set<string>>();
  for (const [path, set] of methods) router.add("ALL", path, set);
  app.all("*", async function methodNotAllowed(c, next) {
    // Mounted under an outer app, the routes' paths start after the mount point (this route's
    // own base path, parameters resolved).
    const mount = basePath(c);
    const path = c.req.path;
    const own = mount === "/" ? path : path.startsWith(mount) ? path.slice(mount.length) : "";
    // Every route whose path matches serves the path (`/v1/jobs/batch` is also a `/v1/jobs/:id`).
    const matched = own ? router.match("ALL", own)[0] : [];
    if (matched.length === 0) return next();
    const allowed = new Set<string>();
    for (const [set] of matched) for (const method of set) allowed.add(method);
    const allow = [...allowed].sort().join(", ");
    c.header("Allow", allow);
    throw new TickworkError(
      405,
      "method_not_allowed",
      `${c.req.method} is not allowed here; allowed: ${allow}${suffix}`,
    );
  });
}
