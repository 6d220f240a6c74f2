/**
 * @module
 * What an API key may do (docs/architecture.md, "Admission control"); the configuration grants
 * scopes to keys, the engine's actor carries them. Scopes are independent of
 * each other; `admin` implies every other one. A client that submits and polls its jobs needs
 * `["jobs:write", "read"]`; an observer (a dashboard, a status page) needs `["read"]`.
 */

/** Every scope, in the order they are documented. */
export const SCOPES = ["read", "jobs:write", "schedules:write", "admin"] as const;

/**
 * - `read` — every `GET` of jobs, schedules, runs and dead letters;
 * - `jobs:write` — submit and cancel jobs;
 * - `schedules:write` — create, replace, patch, pause, resume and delete schedules;
 * - `admin` — all of the above, plus retry and delete dead letters.
 */
export type Scope = (typeof SCOPES)[number];

/**
 * True when `scopes` grant `needed` (`admin` grants everything). `undefined` scopes (auth off, or
 * a custom `authorize` that does not use scopes) grant everything.
 *
 * @example
 * hasScope(["read"], "jobs:write");  // false
 * hasScope(["admin"], "jobs:write"); // true
 */
export function hasScope(scopes: readonly Scope[] | undefined, needed: Scope): boolean {
  return scopes === undefined || scopes.includes(needed) || scopes.includes("admin");
}
