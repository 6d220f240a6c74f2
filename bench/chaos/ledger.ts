/**
 * @module
 * The ledger: what handlers did, kept outside the system under test (its own key prefix on a
 * direct Redis connection that bypasses the fault proxy). A handler's side effect IS its ledger
 * write: `done` counts, per job id, the runs that completed. Around it, a log of marks says how
 * each run went, so a job that completed twice can be explained:
 *
 * - `S` a run started the handler;
 * - `C` the handler completed its side effect (written atomically with the `done` count); detail
 *   `late:<ms>` when it completed past the handler's timeout without its signal aborted (the
 *   process was stalled: every timer fired late);
 * - `X` the process is about to kill itself after completion, before `finishRun` (injected);
 * - `F` `finishRun` returned: `<kind>:<outcome>` (`ok:success` is a recorded success; `stale:…`
 *   means the attempt had lost its run lease);
 * - `E` `finishRun` threw (the result could not be recorded).
 *
 * A run is named `<slot>.<pid>.<n>`; the orchestrator knows which pids it killed.
 */
import type { Redis } from "ioredis";

export type MarkKind = "S" | "C" | "X" | "F" | "E";

/** One mark. */
export interface Mark {
  kind: MarkKind;
  jobId: string;
  run: string;
  attempt: number;
  /** F: `<finishRun kind>:<success|failure>`; E: the error message. */
  detail: string;
}

const PREFIX = "chaos-ledger";
const DONE = `${PREFIX}:done`;
const MARKS = `${PREFIX}:marks`;

/**
 * Ledger writes and reads.
 *
 * @example
 * const ledger = new Ledger(new Redis(directUrl));
 * await ledger.completed(ctx.jobId, run, ctx.attempt);
 */
export class Ledger {
  constructor(readonly redis: Redis) {}

  /** Forget a previous run's ledger. */
  async reset(): Promise<void> {
    await this.redis.del(DONE, MARKS);
  }

  async mark(
    kind: Exclude<MarkKind, "C">,
    jobId: string,
    run: string,
    attempt: number,
    detail = "",
  ) {
    await this.redis.rpush(MARKS, encode({ kind, jobId, run, attempt, detail }));
  }

  /** The side effect: count the completion and mark it, atomically. */
  async completed(jobId: string, run: string, attempt: number, detail = ""): Promise<void> {
    await this.redis
      .multi()
      .hincrby(DONE, jobId, 1)
      .rpush(MARKS, encode({ kind: "C", jobId, run, attempt, detail }))
      .exec();
  }

  /** Completions per job id. */
  async done(): Promise<Map<string, number>> {
    const raw = await this.redis.hgetall(DONE);
    return new Map(Object.entries(raw).map(([id, n]) => [id, Number(n)]));
  }

  /** How many job ids completed at least once. */
  async doneCount(): Promise<number> {
    return this.redis.hlen(DONE);
  }

  async marks(): Promise<Mark[]> {
    const out: Mark[] = [];
    const total = await this.redis.llen(MARKS);
    for (let start = 0; start < total; start += 10_000) {
      const page = await this.redis.lrange(MARKS, start, start + 9_999);
      for (const line of page) out.push(decode(line));
    }
    return out;
  }
}

function encode(m: Mark): string {
  return JSON.stringify([m.kind, m.jobId, m.run, m.attempt, m.detail]);
}

function decode(line: string): Mark {
  const [kind, jobId, run, attempt, detail] = JSON.parse(line) as [
    MarkKind,
    string,
    string,
    number,
    string,
  ];
  return { kind, jobId, run, attempt, detail };
}
