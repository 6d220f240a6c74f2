/**
 * @module
 * Placement in the engine (docs/adr/0017-placement.md): the field a job or schedule stores, and
 * the runner's check of a delivery against the node it arrived at.
 */
import type { DeliveryOutcome } from "../core/delivery.ts";
import { FINAL_JOB_STATUSES, type JobSpec } from "../core/model.ts";
import {
  type NodeIdentity,
  normalPlacement,
  type Placement,
  placementMismatch,
  placementSchema,
} from "../core/placement.ts";
import type { Store } from "../store/port.ts";
import { pullRecheckMs } from "./concurrency.ts";
import type { Logger } from "./logger.ts";
import type { ResolvedOptions } from "./options.ts";

/** How long a push queue waits before it offers a refused delivery again (each 409 spends a retry). */
export const UNPLACED_PUSH_RETRY_MS = 10_000;

/** `{ placement }` when it holds anything, else `{}`: spread into a job or schedule. */
export function withPlacement(placement: Placement | undefined): { placement?: Placement } {
  const normal = normalPlacement(placement);
  return normal ? { placement: normal } : {};
}

/**
 * Why this node may not run a delivered job, or `undefined`. A placement this version does not
 * understand (a newer sender's) is a refusal, never a bad body: another node may understand it.
 */
export function deliveryMismatch(placement: unknown, node: NodeIdentity): string | undefined {
  if (placement !== undefined && !placementSchema.safeParse(placement).success) {
    return "placement not understood by this node";
  }
  return placementMismatch(placement as Placement | undefined, node);
}

/**
 * This node may not run the job (`reason`): record the refusal (a job no node takes shows it) and
 * hand the delivery back — not an attempt. A job that is already finished is acknowledged
 * instead, so a leftover delivery no node may take does not circle forever; one that another
 * node is running is busy as usual.
 */
export async function refuseDelivery(
  store: Store,
  options: ResolvedOptions,
  spec: JobSpec,
  reason: string,
  logger: Logger,
  pulled: boolean,
): Promise<DeliveryOutcome> {
  const refusal = { node: options.node.id, reason };
  const status = store.refusePlacement
    ? await store.refusePlacement(spec, refusal, options.reapAfterMs)
    : "queued";
  // Missing: it expired after it finished (an occurrence is created by the refusal itself).
  if (status === null) return { kind: "done", id: spec.id, status: "gone" };
  if (FINAL_JOB_STATUSES.includes(status)) {
    return { kind: "done", id: spec.id, status };
  }
  logger.debug("delivery refused: placement", { jobId: spec.id, reason });
  const retryAfterMs = pulled ? pullRecheckMs() : UNPLACED_PUSH_RETRY_MS;
  return status === "running"
    ? { kind: "busy", reason: "attempt-running", retryAfterMs }
    : { kind: "busy", reason: "unplaced", retryAfterMs };
}
