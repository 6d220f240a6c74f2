/**
 * @module
 * What the A/B tools (`bench/drain-ab.ts`, `bench/submit-ab.ts`) share: each run in a fresh
 * process, and the medians per built package.
 */
import { spawn } from "node:child_process";
import { pinProcess } from "./cores.ts";
import { medians } from "./median.ts";

/**
 * Runs `node --import tsx <file> --child <args…>` (pinned to `cpus` when given) and answers the
 * JSON of the last line it printed. `what` names the run in an error.
 */
export function childRun<T>(file: string, args: string[], what: string, cpus?: string): Promise<T> {
  return new Promise((done, fail) => {
    const proc = spawn(process.execPath, ["--import", "tsx", file, "--child", ...args], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    if (cpus && proc.pid) pinProcess(proc.pid, cpus);
    let out = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    proc.on("error", fail);
    proc.on("exit", (code) => {
      if (code !== 0) fail(new Error(`${what} exited with ${code}`));
      else done(JSON.parse(out.trim().split("\n").at(-1)!) as T);
    });
  });
}

/** Each directory's runs (`dir` as they name it), their count and the medians of their figures. */
export function mediansByDir<R extends { dir: string }>(
  dirs: string[],
  runs: R[],
): { dir: string; count: number; m: Omit<R, "dir"> }[] {
  return dirs.map((dir) => {
    const mine = runs
      .filter((r) => r.dir === dir)
      .map(({ dir: _dir, ...figures }) => figures as unknown as Record<string, number>);
    return { dir, count: mine.length, m: medians(mine) as unknown as Omit<R, "dir"> };
  });
}
