/**
 * @module
 * What every operation of the Redis store runs with: the deployment's keys, its retention and
 * event cap as the scripts take them, and the script runner (one EVALSHA, or EVALSHA + EVAL the
 * first time a server sees the script).
 */
import type { StoreRetention } from "../port.ts";
import type { CallBatch } from "./call-batch.ts";
import { errorCodeOf } from "./codec.ts";
import { RedisStoreError } from "./errors.ts";
import type { Keys } from "./keys.ts";
import type { LuaScript } from "./script.ts";

/** One `RedisStore`'s settings and client, shared by its operations. */
export interface RedisContext {
  readonly keys: Keys;
  readonly retention: StoreRetention;
  /** How many events the stream keeps, as the scripts take it. */
  readonly eventsMaxLen: string;
  /** Where a submit puts the job's delivery: the outbox (a queue publishes it) or the stream. */
  readonly dispatch: "outbox" | "streams";
  /** Runs `script` (see `safeEval`). */
  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<unknown>;
  /**
   * With `dispatch: "streams"`: `beginRun` and `finishRun` calls grouped (see `CallBatch`), as a
   * worker makes many at once; without, each call is its own script call.
   */
  readonly runBatches?: { begin: CallBatch; finish: CallBatch } | undefined;
  /**
   * With `dispatch: "streams"`: `submitJob` calls grouped (see `CallBatch`), as a server taking
   * many submits at once makes them; without, each submit is its own script call.
   */
  readonly submitBatch?: CallBatch | undefined;
}

/** A script's JSON answer tagged by its one member. */
export type Tagged<K extends string, T> = { [P in K]: T };

/** Throws for an error code the operation does not map to a result. */
export function expectNoCode(operation: string, raw: unknown): void {
  const code = errorCodeOf(raw);
  if (code !== undefined) {
    throw new RedisStoreError(operation, `unexpected error code ${code}`, { code });
  }
}
