/**
 * @module
 * Who acts on the broker, and what it sees: a tenant's records, under the tenant's own ids.
 */
import type { Manifest } from "../core/manifest.ts";
import {
  DEFAULT_TENANT,
  type JobRecord,
  type ScheduleRecord,
  scheduleStoreId,
  scheduleUserId,
} from "../core/model.ts";
import type { Scope } from "../core/scopes.ts";

/**
 * What an API key may do (docs/architecture.md, "Admission control"). `admin` may do everything;
 * an observer key has `read` only.
 */
export type { Scope };

/**
 * Who is acting: the tenant that owns what it creates, what its key may do, and its manifest.
 *
 * - `tenant` — `"default"` when absent (auth off).
 * - `scopes` — the key's scopes. Absent when auth is off, or a custom `authorize` does not use
 *   scopes: everything is allowed and every tenant's records are visible. Present (a key of a
 *   configured tenant): the actor sees and changes only records of its own `tenant` — another
 *   tenant's job or schedule answers 404, as if it did not exist.
 * - `manifest` — handler patterns, quotas and limits (absent: none apply).
 * - `keyId` — the key's `id` from the configuration, for logs (never the key).
 */
export interface Actor {
  tenant?: string;
  scopes?: readonly Scope[];
  manifest?: Manifest;
  keyId?: string;
}

/**
 * True when `actor` may see a record of `tenant` (see {@link Actor}).
 *
 * @example
 * sees({ tenant: "acme", scopes: ["read"] }, "globex"); // false
 * sees({ tenant: "default" }, "globex");                // true (auth off)
 */
export function sees(actor: Actor, tenant: string): boolean {
  return actor.scopes === undefined || (actor.tenant ?? "default") === tenant;
}

/**
 * The one tenant whose records the actor sees (see {@link sees}), for a store read to refuse
 * another's before reading it; `undefined` for an actor that sees every tenant (auth off).
 */
export function scopedTenant(actor: Actor): string | undefined {
  return actor.scopes === undefined ? undefined : tenantOf(actor);
}

/** The actor's tenant (`"default"` when it has none). */
export function tenantOf(actor: Actor): string {
  return actor.tenant ?? DEFAULT_TENANT;
}

/** The store id of the actor's schedule `userId` (see `scheduleStoreId`). */
export function scheduleStoreIdOf(userId: string, actor: Actor): string {
  return scheduleStoreId(tenantOf(actor), userId);
}

/** A schedule as its tenant knows it: its own id. */
export function presentSchedule(schedule: ScheduleRecord): ScheduleRecord {
  const id = scheduleUserId(schedule.tenant, schedule.id);
  return id === schedule.id ? schedule : Object.assign({}, schedule, { id });
}

/** A job as its tenant knows it: an occurrence names its schedule by the tenant's own id. */
export function presentJob(job: JobRecord): JobRecord {
  if (job.scheduleId === undefined) return job;
  const scheduleId = scheduleUserId(job.tenant, job.scheduleId);
  return scheduleId === job.scheduleId ? job : Object.assign({}, job, { scheduleId });
}
