/**
 * @module
 * Group commit of one script's calls (docs/streams.md, "Begin and finish in batches"): calls made
 * while none is under way go out together at the end of the current turn of the event loop;
 * calls made while one is under way wait for it and then go out together. One call alone runs
 * the script itself; several run its batch script (`beginRuns`, `finishRuns`, `submitJobs`),
 * which applies each in order and answers a list. A worker running many deliveries at once (or
 * a server taking many submits, docs/adr/0043-submits-in-groups.md) thereby pays one round
 * trip, one `TIME` and one metrics batch for a group of them instead of one each.
 *
 * One script's calls are applied in the order they were made. Calls of two scripts made at the
 * same time (a begin and a finish) may be applied in either order, as concurrent calls could be
 * without grouping; a call made after another's answer is applied after it.
 */
import { RedisStoreError } from "./errors.ts";

/** The most calls in one batch script (a batch runs inside Redis without a break). */
export const MAX_BATCH = 32;

/** The most calls of one script under way at once, unless its `CallBatch` says otherwise. */
export const MAX_IN_FLIGHT = 4;

/**
 * A group goes before the end of the turn or a group's answer (see `sendAt`) only once it holds
 * as many calls as the groups under way hold, or half of {@link MAX_BATCH}: a few callers still
 * take turns in pairs, and under a server's many requests the groups double until they hold 16
 * (docs/adr/0056-submit-groups-that-grow.md).
 */
const EARLY_GROUP = MAX_BATCH / 2;

/** A batch's answer for a call that raised an error inside the script: `!` and its text. */
const FAILED = "!";

interface Waiting {
  args: string[];
  resolve: (answer: unknown) => void;
  reject: (error: unknown) => void;
}

/** Runs the end of the current turn of the event loop (Node), or at once without `setImmediate`. */
const soon: (run: () => void) => void =
  typeof setImmediate === "function" ? (run) => setImmediate(run) : (run) => run();

/** The calls of one script, sent one at a time or in batches. */
export class CallBatch {
  readonly #operation: string;
  readonly #one: (args: string[]) => Promise<unknown>;
  readonly #many: (args: string[], width: number) => Promise<unknown>;
  readonly #sendAt: number;
  readonly #maxInFlight: number;
  #waiting: Waiting[] = [];
  #inFlight = 0;
  /** Calls in the groups under way. */
  #callsInFlight = 0;
  #scheduled = false;

  /**
   * @param operation the script's name, for errors
   * @param one runs the script for one call's arguments
   * @param many runs the batch script for the calls' arguments, concatenated, each call's padded
   *   with `''` to `width` (the longest call's length: a script reads an absent argument as
   *   `''`); answers one value per call, in order
   * @param sendAt a group goes as soon as this many calls wait, and they are as many as the calls
   *   under way (or 16), while fewer than `maxInFlight` groups are under way, without waiting for
   *   the end of the turn or for the group under way (default: never). A few callers that each
   *   wait for their answer before their next call then form two groups that take turns, one
   *   with Redis while the other's callers make their next calls, instead of one group that
   *   leaves Redis idle while all of them do (docs/adr/0043-submits-in-groups.md); many callers
   *   form larger groups, each call costing Redis and the process less
   *   (docs/adr/0056-submit-groups-that-grow.md).
   * @param maxInFlight the most calls of the script under way at once (default
   *   {@link MAX_IN_FLIGHT}); what arrives meanwhile waits for one of them
   */
  constructor(
    operation: string,
    one: (args: string[]) => Promise<unknown>,
    many: (args: string[], width: number) => Promise<unknown>,
    sendAt = Number.POSITIVE_INFINITY,
    maxInFlight = MAX_IN_FLIGHT,
  ) {
    this.#operation = operation;
    this.#one = one;
    this.#many = many;
    this.#sendAt = sendAt;
    this.#maxInFlight = maxInFlight;
  }

  /** Runs the script for `args`, alone or with other calls; answers what the script answered. */
  call(args: string[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ args, resolve, reject });
      const waiting = this.#waiting.length;
      if (
        waiting >= this.#sendAt &&
        (waiting >= this.#callsInFlight || waiting >= EARLY_GROUP) &&
        this.#inFlight < this.#maxInFlight
      ) {
        this.#send();
        return;
      }
      if (this.#inFlight > 0 || this.#scheduled) return;
      this.#scheduled = true;
      soon(() => {
        this.#scheduled = false;
        this.#send();
      });
    });
  }

  /**
   * Sends what waits, in groups of up to {@link MAX_BATCH}, while fewer than the most are under
   * way: a worker gets the first group's answers (and runs their handlers) while Redis still runs
   * the next.
   */
  #send(): void {
    while (this.#inFlight < this.#maxInFlight && this.#waiting.length > 0) {
      const size = Math.min(MAX_BATCH, this.#waiting.length);
      this.#inFlight++;
      this.#callsInFlight += size;
      void this.#sendGroup(this.#waiting.splice(0, size)).finally(() => {
        this.#inFlight--;
        this.#callsInFlight -= size;
        // What arrived meanwhile has waited a round trip already: it goes now.
        this.#send();
      });
    }
  }

  async #sendGroup(group: Waiting[]): Promise<void> {
    try {
      if (group.length === 1) {
        group[0]!.resolve(await this.#one(group[0]!.args));
        return;
      }
      let width = 0;
      for (const w of group) if (w.args.length > width) width = w.args.length;
      // Concatenated with a loop: `flatMap` builds an array per call and is slow on Node 20.
      const args: string[] = [];
      for (const w of group) {
        for (const arg of w.args) args.push(arg);
        for (let i = w.args.length; i < width; i++) args.push("");
      }
      const answers = await this.#many(args, width);
      if (!Array.isArray(answers) || answers.length !== group.length) {
        throw new RedisStoreError(
          this.#operation,
          `a batch of ${group.length} answered ${Array.isArray(answers) ? answers.length : typeof answers}`,
        );
      }
      group.forEach((w, i) => {
        const answer: unknown = answers[i];
        if (typeof answer === "string" && answer.startsWith(FAILED)) {
          w.reject(new RedisStoreError(this.#operation, answer.slice(FAILED.length)));
        } else {
          w.resolve(answer);
        }
      });
    } catch (error) {
      for (const w of group) w.reject(error);
    }
  }
}
