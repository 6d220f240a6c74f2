/**
 * @module
 * A tenant's manifest — what it may do besides its scopes (docs/architecture.md, "Admission
 * control") — and its rules in the form the broker checks them: handler patterns compiled, quotas
 * turned into the store's sliding windows ({@link QuotaCheck}), limits as numbers.
 *
 * The types are the domain's; `src/config/schema.ts` validates a configuration against them (its
 * zod schema is checked, at compile time, to infer exactly {@link Manifest} and {@link QuotaLimits}).
 */
import type { QuotaCheck, QuotaWindow } from "./admission.ts";
import { compileGlobs } from "./glob.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Limits of one kind of write, each a sliding window (checked inside the write itself). */
export interface QuotaLimits {
  /** At most this many in any 60 s. */
  perMinute?: number | undefined;
  /** At most this many in any hour. */
  perHour?: number | undefined;
  /** At most this many in any 24 h. */
  perDay?: number | undefined;
  /** Further windows: at most `limit` in any `windowMs`. */
  windows?: { limit: number; windowMs: number }[] | undefined;
}

/** What a tenant may do besides its scopes. Every field is optional. */
export interface Manifest {
  /** Handlers the tenant may submit jobs for (patterns, see `compileGlobs`). Default `["**"]`. */
  submit?: string[] | undefined;
  /** Handlers the tenant may schedule. Default `["**"]`. */
  schedule?: string[] | undefined;
  /** Job submits, and schedule writes (create, replace, patch). */
  quotas?: { submit?: QuotaLimits | undefined; schedule?: QuotaLimits | undefined } | undefined;
  /** Largest handler timeout a job or schedule may ask for (a larger default is lowered to it). */
  maxTimeoutMs?: number | undefined;
  /** Smallest gap allowed between two occurrences of a schedule. */
  minIntervalMs?: number | undefined;
  /** Largest job or schedule input, as JSON in UTF-8 bytes. */
  maxInputBytes?: number | undefined;
}

/** A {@link Manifest}, compiled. */
export interface ManifestRules {
  /** May the tenant submit jobs for this handler? */
  submits(handler: string): boolean;
  /** May the tenant schedule this handler? */
  schedules(handler: string): boolean;
  /** Sliding windows of the submit quota (empty: no quota). */
  submitWindows: QuotaWindow[];
  /** Sliding windows of the schedule-write quota (empty: no quota). */
  scheduleWindows: QuotaWindow[];
  maxTimeoutMs?: number;
  minIntervalMs?: number;
  maxInputBytes?: number;
}
const compiled = new WeakMap<Manifest, ManifestRules>();

/**
 * The manifest's rules (compiled once per manifest object). Handler patterns default to `["**"]`.
 * @throws RangeError for a malformed handler pattern (a validated config has none).
 *
 * @example
 * const rules = manifestRules({ submit: ["email.*"], quotas: { submit: { perMinute: 5 } } });
 * rules.submits("email.send"); // true
 * rules.submitWindows;         // [{ windowMs: 60_000, limit: 5 }]
 */
export function manifestRules(manifest: Manifest): ManifestRules {
  let rules = compiled.get(manifest);
  if (!rules) {
    rules = {
      submits: compileGlobs(manifest.submit ?? ["**"]),
      schedules: compileGlobs(manifest.schedule ?? ["**"]),
      submitWindows: quotaWindows(manifest.quotas?.submit),
      scheduleWindows: quotaWindows(manifest.quotas?.schedule),
      ...(manifest.maxTimeoutMs !== undefined ? { maxTimeoutMs: manifest.maxTimeoutMs } : {}),
      ...(manifest.minIntervalMs !== undefined ? { minIntervalMs: manifest.minIntervalMs } : {}),
      ...(manifest.maxInputBytes !== undefined ? { maxInputBytes: manifest.maxInputBytes } : {}),
    };
    compiled.set(manifest, rules);
  }
  return rules;
}

/**
 * The sliding windows of a quota, shortest first.
 *
 * @example
 * quotaWindows({ perMinute: 100, perDay: 10_000 });
 * // [{ windowMs: 60_000, limit: 100 }, { windowMs: 86_400_000, limit: 10_000 }]
 */
export function quotaWindows(limits: QuotaLimits | undefined): QuotaWindow[] {
  if (!limits) return [];
  const windows: QuotaWindow[] = [];
  if (limits.perMinute !== undefined) windows.push({ windowMs: MINUTE, limit: limits.perMinute });
  if (limits.perHour !== undefined) windows.push({ windowMs: HOUR, limit: limits.perHour });
  if (limits.perDay !== undefined) windows.push({ windowMs: DAY, limit: limits.perDay });
  for (const w of limits.windows ?? []) windows.push({ windowMs: w.windowMs, limit: w.limit });
  return windows.sort((a, b) => a.windowMs - b.windowMs || a.limit - b.limit);
}

/**
 * The store's quota check for a tenant's writes of one kind, or `undefined` without a quota.
 * Counters are per tenant and kind: `submit:<tenant>`, `schedule:<tenant>`.
 *
 * @example
 * quotaCheck("submit", "acme", [{ windowMs: 60_000, limit: 5 }]);
 * // { key: "submit:acme", windows: [{ windowMs: 60_000, limit: 5 }] }
 */
export function quotaCheck(
  kind: "submit" | "schedule",
  tenant: string,
  windows: readonly QuotaWindow[],
): QuotaCheck | undefined {
  return windows.length === 0 ? undefined : { key: `${kind}:${tenant}`, windows: [...windows] };
}
