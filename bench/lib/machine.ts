/**
 * @module
 * What the benchmark ran on, recorded beside its figures.
 */
import { execFileSync } from "node:child_process";
import { cpus, loadavg, totalmem } from "node:os";

export interface Machine {
  cpu: string;
  /** "KVM" etc. when virtualised (lscpu), else "none". */
  hypervisor: string;
  cores: number;
  memory_gib: number;
  os: string;
  node: string;
  redis: string;
  /** 1-minute load average when the benchmark started (other work on the machine skews figures). */
  load_at_start: number;
  commit: string;
}

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return "unknown";
  }
}

/** The 1-minute load average now. */
export function loadNow(): number {
  return Math.round(loadavg()[0]! * 100) / 100;
}

export function machine(): Machine {
  const redis = /v=(\S+)/.exec(run("redis-server", ["--version"]))?.[1] ?? "unknown";
  return {
    cpu: cpus()[0]?.model.trim() ?? "unknown",
    hypervisor: /Hypervisor vendor:\s*(\S+)/.exec(run("lscpu", []))?.[1] ?? "none",
    cores: cpus().length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    os: `${process.platform} ${run("uname", ["-r"])}`,
    node: process.version,
    redis,
    load_at_start: loadNow(),
    commit: run("git", ["rev-parse", "--short", "HEAD"]),
  };
}
