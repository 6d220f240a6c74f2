/**
 * @module
 * Where the app answers, as this request reached it. The app cannot know its mount point: under
 * `outer.route("/api/tickwork", app)` Hono copies its routes into the outer app with the prefix
 * prepended, and nothing tells the app. Hono does keep, for every route, the base path it was
 * registered under (prefixes included); a middleware registered on the app's root reads its own,
 * which is exactly the mount point. Anything that writes a path into an answer (`Location`) starts
 * from it.
 */
import type { MiddlewareHandler } from "hono";
import { basePath, baseRoutePath } from "hono/route";
import type { AppEnv } from "../options.ts";

/**
 * Sets `c.get("appPath")`: the mount point (`""` when the app is served as it is) followed by
 * `pathPrefix` (the app's own `basePath`, `""` at the root). Register it on the app's root, before
 * `basePath` is applied, so its own route's base path is the mount point alone.
 *
 * @example
 * root.use(appPath(config.pathPrefix));
 * // under outer.route("/api/tickwork", app): c.get("appPath") === "/api/tickwork"
 */
export function appPath(pathPrefix: string): MiddlewareHandler<AppEnv> {
  // The answer for each mount without parameters (nearly always one): it depends on the route
  // pattern alone. A mount with parameters is worked out from each request's path.
  const known = new Map<string, string>();
  return async function appPath(c, next) {
    const pattern = baseRoutePath(c);
    let path = known.get(pattern);
    if (path === undefined) {
      // `basePath` resolves parameters of the mount (`/orgs/:org/tickwork`) from the request path.
      const mount = basePath(c);
      path = `${mount === "/" ? "" : encodePath(mount)}${pathPrefix}`;
      if (!PARAMETER.test(pattern)) known.set(pattern, path);
    }
    c.set("appPath", path);
    await next();
  };
}

/** A route pattern with a parameter or wildcard (as `basePath` of hono/route tells them). */
const PARAMETER = /[:*]/;

/**
 * The path as a header may carry it: Hono matches (and fills parameters from) the decoded path,
 * and a header value with a space or a non-Latin-1 character is invalid or throws.
 */
function encodePath(path: string): string {
  const encoded = /^[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(path)
    ? path
    : new URL(`http://x${path}`).pathname;
  return encoded.replace(/\/+$/, "");
}
