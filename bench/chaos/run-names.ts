/**
 * @module
 * Which run of a chaos app process a `finishRun` call records, so its ledger marks (`F`, `E`,
 * `X`) name the run whose handler produced the outcome. The runner retries a `finishRun` that
 * failed while the run lease holds, so one run may finish several times: every call names the
 * run, and only the first is the moment "after completion, before `finishRun`" where the suite
 * injects a crash.
 */

/** A finishRun call's run, and whether it is the run's first call. */
export interface FinishCall {
  /** The run's name, or `?` for an attempt no handler of this process ran. */
  run: string;
  first: boolean;
}

/** Run names by `<jobId>#<attempt>`, from the handler's start to its recorded finish. */
export class RunNames {
  readonly #runs = new Map<string, { run: string; calls: number }>();

  /** The handler of `jobId`'s `attempt` started as `run`. */
  started(jobId: string, attempt: number, run: string): void {
    this.#runs.set(`${jobId}#${attempt}`, { run, calls: 0 });
  }

  /** A `finishRun` call for `jobId`'s `attempt` begins. */
  finishing(jobId: string, attempt: number): FinishCall {
    const entry = this.#runs.get(`${jobId}#${attempt}`);
    if (!entry) return { run: "?", first: true };
    entry.calls++;
    return { run: entry.run, first: entry.calls === 1 };
  }

  /** The attempt's outcome is recorded: no retry follows, its name is no longer needed. */
  finished(jobId: string, attempt: number): void {
    this.#runs.delete(`${jobId}#${attempt}`);
  }

  /** Attempts whose outcome is not recorded yet (their finish failed, or is still to come). */
  get size(): number {
    return this.#runs.size;
  }
}
