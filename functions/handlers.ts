/**
 * @module
 * Example handlers, registered by the dev server (`npm run dev`): `echo`, `sleep` and `fail`.
 * They are what a user writes: a map of name → `{ input?, timeout?, retries?, run }`. No Node
 * imports, so every platform entry in `functions/` can register them.
 */
import { defineHandlers } from "tickwork";
import * as z from "zod";

const sleepInput = z.object({ ms: z.number().int().min(0).max(86_400_000) });
const failInput = z
  .object({ times: z.number().int().min(0).optional() })
  .strict()
  .nullish();

/**
 * The example handlers.
 *
 * @example
 * // POST /v1/jobs {"handler":"echo","input":{"hello":"world"}}   → result {"hello":"world"}
 * // POST /v1/jobs {"handler":"sleep","input":{"ms":2000}}         → result {"slept":2000}
 * // POST /v1/jobs {"handler":"fail","input":{"times":2},"retries":3} → succeeds on attempt 3
 */
export const handlers = defineHandlers({
  /** Returns its input unchanged. */
  echo: {
    run: (input) => input,
  },

  /** Waits `ms` milliseconds, then returns `{ slept: ms }`; stops early when the job times out. */
  sleep: {
    input: sleepInput,
    run: async ({ ms }: z.output<typeof sleepInput>, ctx) => {
      await sleep(ms, ctx.signal);
      return { slept: ms };
    },
  },

  /**
   * Fails attempts `1 … times`, then returns `{ attempt }`; without `times` it always fails.
   * Use it to watch retries, backoff and the dead-letter list.
   */
  fail: {
    input: failInput,
    run: (input: z.output<typeof failInput>, ctx) => {
      const times = input?.times;
      if (times === undefined || ctx.attempt <= times) {
        const plan = times === undefined ? "always fails" : `fails the first ${times}`;
        throw new Error(`fail: attempt ${ctx.attempt} failed on purpose (${plan})`);
      }
      return { attempt: ctx.attempt };
    },
  },
});

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
