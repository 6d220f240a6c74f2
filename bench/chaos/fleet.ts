/**
 * @module
 * The child processes of the system under test (`child.ts`): app processes behind the balancer
 * and tick processes. A process that exits is started again after a cold-start delay, whatever
 * killed it; the fleet remembers the pids the orchestrator killed, to tell its kills from the
 * injected self-kills after completion and from unexpected exits. An app process can also be
 * stalled (SIGSTOP, then SIGCONT): out of the balancer meanwhile, as a failing readiness probe
 * would take it out.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { SlotPorts } from "./balancer.ts";
import type { ChildConfig } from "./config.ts";

const CHILD = fileURLToPath(new URL("./child.ts", import.meta.url));
const BUNDLE = fileURLToPath(
  new URL("../../node_modules/.cache/tickwork-chaos/child.mjs", import.meta.url),
);

/**
 * How to start a child: `child.ts` bundled into one ES module (with esbuild, which tsx brings),
 * so a restart is a plain `node` start — about a second, like a function's cold start, instead
 * of tsx's two to three; or, when esbuild cannot be loaded, `--import tsx` on the source.
 */
export async function childCommand(): Promise<string[]> {
  try {
    const fromTsx = createRequire(createRequire(import.meta.url).resolve("tsx/package.json"));
    const esbuild = fromTsx("esbuild") as typeof import("esbuild");
    await esbuild.build({
      entryPoints: [CHILD],
      bundle: true,
      platform: "node",
      format: "esm",
      packages: "external",
      outfile: BUNDLE,
      logLevel: "warning",
    });
    return [BUNDLE];
  } catch {
    return ["--import", "tsx", CHILD];
  }
}

/** One process slot. */
export interface Slot {
  role: ChildConfig["role"];
  index: number;
  generation: number;
  child?: ChildProcess;
  pid?: number | undefined;
  /** Listening (app) or ticking (tick). */
  ready: boolean;
  /** Handlers running now, as last reported. */
  inflight: number;
  /** Stalled now (SIGSTOPped; see {@link Fleet.stall}). */
  stalled?: boolean;
  /** When the slot last went down (stopped answering), if it is down. */
  downSince?: number | undefined;
  /** Time spent down so far (since {@link Fleet.start}). */
  downMs: number;
}

/** One process's life, by pid. */
export interface ProcessLife {
  slot: string;
  spawnedAt: number;
  exitedAt?: number;
  /** `killed` (by the orchestrator), `self-killed`, `exit <code|signal>`, `stopped` (at the end). */
  exit?: string;
  lastBeat?: { at: number; inflight: number; finishing: number; lagMs: number };
  maxLagMs: number;
}

/** What the fleet counted. */
export interface FleetCounts {
  /** Processes started, first starts included. */
  starts: number;
  /** Spawn to ready, summed and at most, over restarts (not first starts). */
  restartMs: number;
  restartMaxMs: number;
  restarts: number;
  /** Killed by the orchestrator (SIGKILL). */
  killed: number;
  /** Died of SIGKILL sent by themselves (the injected crash after completion). */
  selfKilled: number;
  /** Any other exit while running. */
  unexpected: number;
  /** Stalled (SIGSTOP … SIGCONT), and the time spent so, summed and at most. */
  stalled: number;
  stalledMs: number;
  stalledMaxMs: number;
}

/**
 * The fleet.
 *
 * @example
 * const appPorts: SlotPorts = [undefined, undefined, undefined]; // also the balancer's
 * const fleet = new Fleet(base, { appPorts, ticks: 3 }, () => 300, await childCommand());
 * fleet.start();
 * await fleet.ready(60_000);
 */
export class Fleet {
  readonly slots: Slot[] = [];
  /** Ports of the app slots, shared with the balancer (undefined while down); one slot each. */
  readonly appPorts: SlotPorts;
  readonly killedPids = new Set<number>();
  /** Every process started, by pid. */
  readonly lives = new Map<number, ProcessLife>();
  readonly counts: FleetCounts = {
    starts: 0,
    restartMs: 0,
    restartMaxMs: 0,
    restarts: 0,
    killed: 0,
    selfKilled: 0,
    unexpected: 0,
    stalled: 0,
    stalledMs: 0,
    stalledMaxMs: 0,
  };
  /** Streams runs: each app process's last reported worker counts, by pid. */
  readonly workerCounts = new Map<number, Record<string, number>>();
  /** Stalls under way: resume them now (see {@link Fleet.resumeAll}). */
  readonly #stalls = new Set<() => void>();
  /** Log lines counted by the children, by level and message. */
  readonly logs: Record<string, number> = {};
  /** Last stderr lines of processes that exited unexpectedly. */
  readonly crashNotes: string[] = [];
  #stopping = false;
  readonly #base: Omit<ChildConfig, "role" | "slot" | "generation">;
  readonly #restartDelayMs: () => number;
  readonly #command: string[];

  /** `command`: the node arguments that start a child (see {@link childCommand}). */
  constructor(
    base: Omit<ChildConfig, "role" | "slot" | "generation">,
    size: { appPorts: SlotPorts; ticks: number },
    restartDelayMs: () => number,
    command: string[],
  ) {
    this.#command = command;
    this.#base = base;
    this.#restartDelayMs = restartDelayMs;
    this.appPorts = size.appPorts;
    for (let i = 0; i < size.appPorts.length; i++) {
      this.slots.push({
        role: "app",
        index: i,
        generation: 0,
        ready: false,
        inflight: 0,
        downMs: 0,
      });
    }
    for (let i = 0; i < size.ticks; i++) {
      this.slots.push({
        role: "tick",
        index: i,
        generation: 0,
        ready: false,
        inflight: 0,
        downMs: 0,
      });
    }
  }

  start(): void {
    for (const slot of this.slots) this.#spawn(slot);
  }

  /** What became of a process, for the report: `app-1 pid 123: killed at 10:00:01.234 …`. */
  fate(pid: number): string {
    const life = this.lives.get(pid);
    if (!life) return `pid ${pid}: unknown`;
    const t = (ms: number) => new Date(ms).toISOString().slice(11, 23);
    const beat = life.lastBeat
      ? `last beat ${t(life.lastBeat.at)} (inflight ${life.lastBeat.inflight}, finishing ${life.lastBeat.finishing}, lag ${life.lastBeat.lagMs} ms)`
      : "no beat";
    const end = life.exit ? `${life.exit} at ${t(life.exitedAt ?? 0)}` : "alive";
    return `${life.slot} pid ${pid}: ${end}; ${beat}; max lag ${life.maxLagMs} ms`;
  }

  /** Share of time the slots of `role` were down since they first came up (0–1). */
  downShare(role: Slot["role"], since: number): number {
    const now = Date.now();
    const slots = this.slots.filter((s) => s.role === role);
    const down = slots.reduce(
      (sum, s) => sum + s.downMs + (s.downSince !== undefined ? now - s.downSince : 0),
      0,
    );
    return down / (slots.length * Math.max(1, now - since));
  }

  #down(slot: Slot): void {
    slot.ready = false;
    slot.downSince ??= Date.now();
    if (slot.role === "app") this.appPorts[slot.index] = undefined;
  }

  #up(slot: Slot, spawnedAt: number): void {
    slot.ready = true;
    if (slot.downSince !== undefined) {
      slot.downMs += Date.now() - slot.downSince;
      slot.downSince = undefined;
    }
    if (slot.generation > 0) {
      const took = Date.now() - spawnedAt;
      this.counts.restarts++;
      this.counts.restartMs += took;
      this.counts.restartMaxMs = Math.max(this.counts.restartMaxMs, took);
    }
  }

  /** Resolves once every slot is ready. */
  async ready(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.slots.every((s) => s.ready)) {
      if (Date.now() > deadline) {
        throw new Error(`processes not ready after ${timeoutMs} ms\n${this.crashNotes.join("\n")}`);
      }
      await sleep(100);
    }
  }

  /** SIGKILL the slot's process now (it is restarted after the delay). */
  kill(slot: Slot): boolean {
    const { child, pid } = slot;
    if (!child || pid === undefined || child.exitCode !== null || child.signalCode !== null) {
      return false;
    }
    this.killedPids.add(pid);
    this.counts.killed++;
    this.#down(slot);
    child.kill("SIGKILL");
    return true;
  }

  /**
   * SIGSTOP the slot's process for `ms`, then SIGCONT it: a consumer stalled (its handlers, its
   * reads and its connections frozen) while the rest go on. Out of the balancer meanwhile.
   * Returns false when there was no live, ready process to stall.
   */
  stall(slot: Slot, ms: number): boolean {
    const { child } = slot;
    if (!child || !slot.ready || child.exitCode !== null || child.signalCode !== null) return false;
    const port = this.appPorts[slot.index];
    const began = Date.now();
    this.counts.stalled++;
    slot.stalled = true;
    slot.ready = false;
    if (slot.role === "app") this.appPorts[slot.index] = undefined;
    child.kill("SIGSTOP");
    const resume = () => {
      clearTimeout(timer);
      this.#stalls.delete(resume);
      const took = Date.now() - began;
      this.counts.stalledMs += took;
      this.counts.stalledMaxMs = Math.max(this.counts.stalledMaxMs, took);
      slot.stalled = false;
      if (slot.child !== child || child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGCONT");
      slot.ready = true;
      if (slot.role === "app") this.appPorts[slot.index] = port;
    };
    const timer = setTimeout(resume, ms);
    this.#stalls.add(resume);
    return true;
  }

  /** SIGCONT every stalled process now. */
  resumeAll(): void {
    for (const resume of [...this.#stalls]) resume();
  }

  /** Stop every process (no restarts from now on). */
  async stop(): Promise<void> {
    this.resumeAll();
    this.#stopping = true;
    await Promise.all(
      this.slots.map(async ({ child }) => {
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once("exit", resolve));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
      }),
    );
  }

  #spawn(slot: Slot): void {
    const config: ChildConfig = {
      ...this.#base,
      role: slot.role,
      slot: slot.index,
      generation: slot.generation,
    };
    // CHAOS_NODE_FLAGS: extra flags for the children (e.g. `--cpu-prof`, to profile them).
    const flags = process.env.CHAOS_NODE_FLAGS?.split(" ").filter(Boolean) ?? [];
    const child = spawn(process.execPath, [...flags, ...this.#command], {
      env: { ...process.env, CHAOS_CHILD: JSON.stringify(config) },
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    this.counts.starts++;
    const spawnedAt = Date.now();
    const life: ProcessLife = { slot: `${slot.role}-${slot.index}`, spawnedAt, maxLagMs: 0 };
    if (child.pid !== undefined) this.lives.set(child.pid, life);
    slot.child = child;
    slot.pid = child.pid;
    slot.ready = false;
    slot.inflight = 0;
    const stderr: string[] = [];
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr.push(chunk.toString("utf8"));
      if (stderr.length > 20) stderr.shift();
    });
    child.on("message", (message: ChildMessage) => {
      if (slot.child !== child) return;
      if (message.t === "listening") {
        this.appPorts[slot.index] = message.port;
        this.#up(slot, spawnedAt);
      } else if (message.t === "ready") this.#up(slot, spawnedAt);
      else if (message.t === "inflight") slot.inflight = message.n;
      else if (message.t === "beat") {
        const { inflight, finishing, lagMs } = message;
        life.lastBeat = { at: Date.now(), inflight, finishing, lagMs };
        life.maxLagMs = Math.max(life.maxLagMs, lagMs);
      } else if (message.t === "worker") {
        if (child.pid !== undefined) this.workerCounts.set(child.pid, message.counts);
      } else if (message.t === "log") {
        for (const [key, n] of Object.entries(message.counts)) {
          this.logs[key] = (this.logs[key] ?? 0) + n;
        }
      }
    });
    child.on("exit", (code, signal) => {
      const pid = child.pid ?? -1;
      life.exitedAt = Date.now();
      life.exit = this.#stopping
        ? "stopped"
        : this.killedPids.has(pid)
          ? "killed"
          : signal === "SIGKILL"
            ? "self-killed"
            : `exit ${signal ?? code}`;
      if (slot.child !== child) return;
      slot.inflight = 0;
      if (this.#stopping) return;
      this.#down(slot);
      if (this.killedPids.has(pid)) {
        // counted in kill()
      } else if (signal === "SIGKILL") this.counts.selfKilled++;
      else {
        this.counts.unexpected++;
        this.crashNotes.push(
          `${slot.role}-${slot.index} (pid ${pid}) exited with ${signal ?? code}:\n${stderr.join("").slice(-2_000)}`,
        );
      }
      slot.generation++;
      setTimeout(() => {
        if (!this.#stopping) this.#spawn(slot);
      }, this.#restartDelayMs());
    });
  }
}

type ChildMessage =
  | { t: "listening"; port: number }
  | { t: "ready" }
  | { t: "inflight"; n: number }
  | { t: "beat"; inflight: number; finishing: number; lagMs: number }
  | { t: "log"; counts: Record<string, number> }
  | { t: "worker"; counts: Record<string, number> };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
