/**
 * @module
 * The Redis store's placement record (the port's `PlacementLog`, docs/adr/0017-placement.md):
 * one script, one round trip. An occurrence whose schedule stopped before it began ends skipped
 * there, as at its begin.
 */
import type { JobSpec, JobStatus } from "../../core/model.ts";
import { cutText as cut, MAX_REFUSAL_REASON, type PlacementRefusal } from "../port.ts";
import { retentionArg, specArgs } from "./codec.ts";
import type { RedisContext } from "./context.ts";
import { beginKeys } from "./runs.ts";
import { scripts } from "./scripts.generated.ts";

/** The refusal as the script stores it: bounded, JSON (the script adds `at`). */
export function refusalJson(refusal: PlacementRefusal): string {
  return JSON.stringify({
    node: cut(refusal.node, 200),
    reason: cut(refusal.reason, MAX_REFUSAL_REASON),
  });
}

export async function refusePlacement(
  c: RedisContext,
  spec: JobSpec,
  refusal: PlacementRefusal,
  reapAfterMs: number,
): Promise<JobStatus | null> {
  const status = await c.run(scripts.refusePlacement, beginKeys(c.keys), [
    ...specArgs(spec),
    refusalJson(refusal),
    String(reapAfterMs),
    retentionArg(c.retention),
    c.eventsMaxLen,
  ]);
  return typeof status === "string" && status !== "" ? (status as JobStatus) : null;
}
