/**
 * @module
 * The Redis store's placement record (the port's `PlacementLog`, docs/adr/0017-placement.md):
 * one script, one round trip.
 */
import type { JobStatus } from "../../core/model.ts";
import { MAX_REFUSAL_REASON, type PlacementRefusal } from "../port.ts";
import type { RedisContext } from "./context.ts";
import { scripts } from "./scripts.generated.ts";

/** The refusal as the script stores it: bounded, JSON (the script adds `at`). */
export function refusalJson(refusal: PlacementRefusal): string {
  return JSON.stringify({
    node: refusal.node.slice(0, 200),
    reason: refusal.reason.slice(0, MAX_REFUSAL_REASON),
  });
}

export async function refusePlacement(
  c: RedisContext,
  id: string,
  refusal: PlacementRefusal,
  reapAfterMs: number,
): Promise<JobStatus | null> {
  const status = await c.run(
    scripts.refusePlacement,
    [c.keys.root, c.keys.outbox, c.keys.metrics],
    [id, refusalJson(refusal), String(reapAfterMs)],
  );
  return typeof status === "string" && status !== "" ? (status as JobStatus) : null;
}
