/**
 * @module
 * Roles (docs/architecture.md, "Topologies and roles"): route sets of the one app, so a
 * deployment mounts only what it is for — the public API on one service, the tick on another, the
 * queue's worker route on a third.
 */

/**
 * A route set of the app:
 *
 * - `all` — every route (the default);
 * - `api` — submit, schedule and manage: every `/v1/jobs` and `/v1/schedules` route and the
 *   dead-letter list `/v1/dlq` (reads included: clients poll their jobs);
 * - `tick` — `/v1/tick`, what the platform cron (or the Node timer) calls;
 * - `worker` — `/v1/worker` and `/v1/dead`, where the queue delivers;
 * - `observer` — read only: the `GET` routes of jobs, schedules and the dead-letter list, and
 *   `/metrics`, `/v1/stats`, `/v1/events`, `/v1/nodes` and `/dashboard` (which `api` serves too).
 *
 * `/health` and `/ready` are served whatever the roles.
 */
export type Role = "all" | "api" | "tick" | "worker" | "observer";

/** Every role, in the order they are listed to humans. */
export const ROLES: readonly Role[] = ["all", "api", "tick", "worker", "observer"];

/** Which groups of routes a set of roles serves. */
export interface RouteSet {
  /** Submit, cancel, create/patch/pause/resume/delete schedules, retry/delete dead letters. */
  write: boolean;
  /** The `GET` routes of jobs, schedules, runs and dead letters; metrics, stats, events, dashboard. */
  read: boolean;
  /** `/v1/tick`. */
  tick: boolean;
  /** `/v1/worker` and `/v1/dead`. */
  worker: boolean;
}

/**
 * The roles, checked and without duplicates; `all` absorbs the rest.
 * @throws RangeError for an empty list or an unknown role.
 *
 * @example
 * normalizeRoles(["worker", "api", "api"]); // ["api", "worker"]
 * normalizeRoles(["tick", "all"]);          // ["all"]
 */
export function normalizeRoles(roles: readonly string[]): Role[] {
  if (roles.length === 0) {
    throw new RangeError(`roles must name at least one of ${ROLES.join(", ")}`);
  }
  for (const role of roles) {
    if (!(ROLES as readonly string[]).includes(role)) {
      throw new RangeError(`unknown role "${role}" (roles: ${ROLES.join(", ")})`);
    }
  }
  if (roles.includes("all")) return ["all"];
  return ROLES.filter((role) => roles.includes(role));
}

/**
 * Roles from their text form: comma-separated, possibly several times over (as `--role a,b
 * --role c` or `TICKWORK_ROLES=a,b` give them); blanks are ignored.
 * @throws RangeError for an unknown role or none at all.
 *
 * @example
 * parseRoles("api, worker");        // ["api", "worker"]
 * parseRoles(["api", "tick,worker"]); // ["api", "tick", "worker"]
 */
export function parseRoles(text: string | readonly string[]): Role[] {
  const parts = (typeof text === "string" ? [text] : text)
    .flatMap((entry) => entry.split(","))
    .map((role) => role.trim().toLowerCase())
    .filter(Boolean);
  return normalizeRoles(parts);
}

/**
 * What `roles` (already normalised) serve.
 *
 * @example
 * routeSet(["observer"]); // { write: false, read: true, tick: false, worker: false }
 */
export function routeSet(roles: readonly Role[]): RouteSet {
  const has = (role: Role) => roles.includes("all") || roles.includes(role);
  return {
    write: has("api"),
    read: has("api") || has("observer"),
    tick: has("tick"),
    worker: has("worker"),
  };
}
