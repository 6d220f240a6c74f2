/**
 * @module
 * Where the app answers, as this request reached it. The app cannot know its mount point: under
 * `outer.route("/api/tickwork", app)` Hono copies its routes into the outer app with the prefix
 * prepended, and nothing tells the app. Hono does keep, for every route, the base path it was
 * registered under (prefixes included); a middleware registered on the app's root reads its own,
 * which is exactly the mount point. Anything that writes a path into an answer (`Location`) starts
 * from it.
 */
import type { Context } from "hono";
import { basePath, baseRoutePath } from "hono/route";
import type { AppEnv } from "../options.ts";

/**
 * What `c.get("appPath")` is set to (by the request middleware, `./request-id.ts`): the mount
 * point (`""` when the app is served as it is) followed by `pathPrefix` (the app's own
 * `basePath`, `""` at the root). Call it from a middleware registered on the app's root, before
 * `basePath` is applied, so its own route's base path is the mount point alone.
 *
 * @example
 * const appPathOf = appPathResolver(config.pathPrefix);
 * // in a root middleware, under outer.route("/api/tickwork", app):
 * appPathOf(c) === "/api/tickwork"
 */
export function appPathResolver(pathPrefix: string): (c: Context<AppEnv>) => string {
  // The answer for each mount without parameters (nearly always one): it depends on the route
  // pattern alone. A mount with parameters is worked out from each request's path.
  const known = new Map<string, string>();
  return function appPathOf(c) {
    const pattern = baseRoutePath(c);
    let path = known.get(pattern);
    if (path === undefined) {
      // `basePath` resolves parameters of the mount (`/orgs/:org/tickwork`) from the request path.
      const mount = basePath(c);
      path = `${mount === "/" ? "" : encodePath(mount)}${pathPrefix}`;
      if (!PARAMETER.test(pattern)) known.set(pattern, path);
    }
    return path;
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
