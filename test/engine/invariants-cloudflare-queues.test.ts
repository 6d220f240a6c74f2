/**
 * The invariant suite (`invariants.ts`) with Cloudflare Queues' delivery semantics
 * (`test/support/chaos-cf-queue.ts`: batches to the `queue()` consumer, per-message ack and retry,
 * no deduplication, at-least-once redelivery, a consumer that throws mid-batch, the queue's own
 * `max_retries`), on the memory store: I1–I3 hold as they do on QStash's push semantics.
 */
import { afterAll, expect } from "vitest";
import { queuesTotals } from "../support/chaos-cf-queue.ts";
import { describeInvariants } from "./invariants.ts";

describeInvariants("memory", "cloudflare-queues", { runs: 8 });

afterAll(() => {
  console.log("Cloudflare Queues double:", queuesTotals);
  // The Queues faults happened, or the property proved nothing about them.
  expect(queuesTotals.crashes).toBeGreaterThan(0);
  expect(queuesTotals.redelivered).toBeGreaterThan(0);
  expect(queuesTotals.queueDead).toBeGreaterThan(0);
});
