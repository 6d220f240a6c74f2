/**
 * The invariant suite (`invariants.ts`) with Cloudflare Queues' delivery semantics
 * (`test/support/chaos-cf-queue.ts`: batches to the `queue()` consumer, per-message ack and retry,
 * no deduplication, at-least-once redelivery, a consumer that throws mid-batch, the queue's own
 * `max_retries`), on the memory store: I1–I3 hold as they do on QStash's push semantics.
 */
import { afterAll, expect } from "vitest";
import { queuesTotals } from "../support/chaos-cf-queue.ts";
import { describeInvariants } from "./invariants.ts";

/** The Queues faults happened, or the property proved nothing about them. */
const faultsSeen = () =>
  queuesTotals.crashes > 0 && queuesTotals.redelivered > 0 && queuesTotals.queueDead > 0;

// A message the queue itself gives up on (`queueDead`) is rare: 0 to 9 in 8 runs. More runs
// follow until one was seen, instead of failing by chance.
describeInvariants("memory", "cloudflare-queues", { runs: 8, until: faultsSeen });

afterAll(() => {
  console.log("Cloudflare Queues double:", queuesTotals);
  expect(queuesTotals.crashes).toBeGreaterThan(0);
  expect(queuesTotals.redelivered).toBeGreaterThan(0);
  expect(queuesTotals.queueDead).toBeGreaterThan(0);
});
