/**
 * @module
 * The QStash double (`test/support/qstash-double/`) in a process of its own, so the server under
 * load does not share its event loop with it. It accepts publishes exactly as QStash does and
 * keeps the messages without delivering them (`holdDeliveries`): the benchmark measures the
 * publishing side, and a real QStash delivers from its own machines, so deliveries must not take
 * CPU from the contenders on this one. Started with the argument `deliver` (the precision
 * section) it delivers over real HTTP to their destinations, as QStash does. Requests: `counters`.
 */
import { startQStashDouble } from "../../test/support/qstash-double/index.ts";
import { serveParent } from "../lib/children.ts";

// `deliver` (the precision section): deliveries go out over real HTTP, as QStash's do.
const double = await startQStashDouble({
  faults: { holdDeliveries: process.argv[2] !== "deliver" },
});

serveParent(
  {
    url: double.url,
    token: double.token,
    currentSigningKey: double.currentSigningKey,
    nextSigningKey: double.nextSigningKey,
  },
  {
    counters: () => {
      const { batchSizes, ...rest } = double.counters;
      return { ...rest, batches: batchSizes.length };
    },
  },
);
