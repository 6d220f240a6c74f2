/**
 * The chaos suite's verdict on a run whose `finishRun` failed once and succeeded when the runner
 * retried it: the retry's `F` mark must name the run, or the verdict finds no recorded run for
 * the job and counts its completion as a double (`finish_failed`) although the job's outcome was
 * recorded once.
 */
import { describe, expect, it } from "vitest";
import type { Mark } from "../../bench/chaos/ledger.ts";
import { judge } from "../../bench/chaos/report.ts";
import { RunNames } from "../../bench/chaos/run-names.ts";

describe("chaos run names", () => {
  it("names the run in every finishRun call of an attempt, and only the first may crash", () => {
    const names = new RunNames();
    names.started("j1", 3, "0.200.7");
    expect(names.finishing("j1", 3)).toEqual({ run: "0.200.7", first: true });
    expect(names.finishing("j1", 3)).toEqual({ run: "0.200.7", first: false });
    names.finished("j1", 3);
    expect(names.size).toBe(0);
    expect(names.finishing("j1", 3)).toEqual({ run: "?", first: true });
  });

  it("judges a finish recorded on its retry as the recorded run, not a double", () => {
    const names = new RunNames();
    const marks: Mark[] = [];
    const mark = (kind: Mark["kind"], attempt: number, run: string, detail = "") =>
      marks.push({ kind, jobId: "j1", run, attempt, detail });
    // Attempt 1 (process 100) completes and its process is killed before finishRun: the window.
    names.started("j1", 1, "0.100.1");
    mark("S", 1, "0.100.1");
    mark("C", 1, "0.100.1");
    mark("X", 1, names.finishing("j1", 1).run);
    // Attempt 3 (process 200) completes; its first finishRun fails, the retry records success.
    names.started("j1", 3, "0.200.1");
    mark("S", 3, "0.200.1");
    mark("C", 3, "0.200.1");
    mark("E", 3, names.finishing("j1", 3).run, "MaxRetriesPerRequestError");
    mark("F", 3, names.finishing("j1", 3).run, "ok:success");
    const verdict = judge(
      new Set(["j1"]),
      new Map([["j1", 2]]),
      marks,
      new Map([
        [100, "self-killed"],
        [200, "stopped"],
      ]),
      new Map(),
    );
    expect(verdict.doubled.size).toBe(0);
    expect(verdict.doubledAfterCompletionCrash.get("j1")).toEqual([
      "crash_after_completion_injected",
    ]);
  });
});
