/**
 * @module
 * The memory store's concurrency limits, as `beginRun-7.lua` keeps them on Redis: one slot table
 * per limit key (job id → the run lease's end), a member dropped once its lease ended, a run
 * admitted only while fewer than `limit` other jobs hold a slot.
 */
import { LIMITED_MIN_RETRY_MS, type RunLimit } from "../port.ts";
import type { MemoryState, StoredJob } from "./state.ts";

/**
 * Whether `id` may take a slot of `limit` now: `undefined` if it may (it holds one already, or
 * fewer than `limit.limit` live slots are held), else the wait until the earliest live slot's
 * lease ends (at least {@link LIMITED_MIN_RETRY_MS}). Slots whose lease ended are dropped first.
 */
export function limitedFor(
  s: MemoryState,
  limit: RunLimit,
  id: string,
  now: number,
): number | undefined {
  const slots = s.limits.get(limit.key);
  if (!slots) return undefined;
  let earliest = Number.POSITIVE_INFINITY;
  for (const [member, leaseEnd] of slots) {
    if (leaseEnd <= now) slots.delete(member);
    else earliest = Math.min(earliest, leaseEnd);
  }
  if (slots.size === 0) s.limits.delete(limit.key);
  if (slots.has(id) || slots.size < limit.limit) return undefined;
  return Math.max(LIMITED_MIN_RETRY_MS, earliest - now);
}

/**
 * The run of `stored` takes a slot of `limit` (or of none) until `leaseEnd`; a slot it held under
 * another key (an earlier attempt whose lease ran out, before its limit key changed) is left.
 */
export function takeSlot(
  s: MemoryState,
  stored: StoredJob,
  limit: RunLimit | undefined,
  leaseEnd: number,
): void {
  const id = stored.record.id;
  if (stored.slot !== undefined && stored.slot !== limit?.key) {
    const old = s.limits.get(stored.slot);
    old?.delete(id);
    if (old?.size === 0) s.limits.delete(stored.slot);
    delete stored.slot;
  }
  if (!limit) return;
  const slots = s.limits.get(limit.key) ?? new Map<string, number>();
  s.limits.set(limit.key, slots.set(id, leaseEnd));
  stored.slot = limit.key;
}
