/**
 * @module
 * The fault suite's drain: with the faults off, wait until every expected run has completed and
 * the queue is idle (twice in a row), or until nothing could move any more (the queue idle and
 * nothing dead for longer than a run lease and the reaper take), or the drain limit.
 */
import { ENGINE_OPTIONS, HANDLER_TIMEOUT_MS } from "./config.ts";
import type { Ledger } from "./ledger.ts";
import { sleep } from "./util.ts";

/**
 * Drain until settled; `quiesced` is false only when the drain limit (70 s quick, 240 s full,
 * from the end of the load) cut it short. `idle` says whether the queue holds nothing now (the
 * QStash double: nothing to deliver; Streams: nothing on the stream, pending or delayed).
 */
export async function drain(
  expected: ReadonlySet<string>,
  parts: { ledger: Ledger; idle: () => Promise<boolean>; dlq: { lastSeen: number } },
  options: { quick: boolean; loadEnded: number },
  log: (line: string) => void,
): Promise<{ quiesced: boolean }> {
  const { ledger, dlq } = parts;
  const drainLimitMs = options.quick ? 70_000 : 240_000;
  // Longer than a run lease plus the reaper's wait: an abandoned job comes back only after that.
  const quietLimitMs = HANDLER_TIMEOUT_MS + 5_000 + (ENGINE_OPTIONS.reapAfterMs ?? 0) + 10_000;
  let quiesced = false;
  let settled = 0;
  let quietSince: number | undefined;
  let incomplete = expected.size;
  for (;;) {
    await sleep(1_000);
    const done = await ledger.done();
    incomplete = 0;
    for (const id of expected) if (!done.has(id)) incomplete++;
    const idle = await parts.idle();
    if (incomplete === 0 && idle) {
      if (++settled >= 2) {
        quiesced = true;
        break;
      }
    } else settled = 0;
    // Nothing left that could move: the queue is idle and nothing is dead.
    if (idle && dlq.lastSeen === 0) quietSince ??= Date.now();
    else quietSince = undefined;
    if (quietSince !== undefined && Date.now() - quietSince > quietLimitMs) {
      quiesced = true;
      log(
        `nothing moved for ${quietLimitMs / 1000} s with ${incomplete} expected runs not completed`,
      );
      break;
    }
    if (Date.now() - options.loadEnded > drainLimitMs) {
      log(`drain limit reached with ${incomplete} expected runs not completed`);
      break;
    }
  }
  return { quiesced };
}
