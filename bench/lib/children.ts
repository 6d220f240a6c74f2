/**
 * @module
 * Child processes of the benchmark: TypeScript entry files run under tsx with an IPC channel
 * (`ready` once listening, then request/reply), and plain binaries (redis-server). Every child is
 * registered and killed when the benchmark exits, fails or is interrupted.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const live = new Set<ChildProcess>();

/** Kill every child still running (synchronous: safe in an `exit` handler). */
export function killAll(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  live.clear();
}

process.once("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

/** Register a spawned child so it is killed on exit. */
export function track(child: ChildProcess): ChildProcess {
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}

/** A running TypeScript child with a request/reply channel. */
export interface TsChild<Ready> {
  ready: Ready;
  /** The child's process id. */
  pid: number;
  /** Send `{ type, ...args }`, resolve with the child's reply. */
  request<T>(type: string, args?: Record<string, unknown>): Promise<T>;
  /** Kill it and wait for it to exit. */
  stop(): Promise<void>;
}

interface Reply {
  id?: number;
  type?: string;
  result?: unknown;
  error?: string;
}

/**
 * Extra Node options for every TypeScript child, from `BENCH_CHILD_NODE_ARGS` (space-separated),
 * e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where a server spends its time.
 */
function childNodeArgs(): string[] {
  return (process.env.BENCH_CHILD_NODE_ARGS ?? "").split(" ").filter(Boolean);
}

/**
 * The tsconfig a child's tsx reads: by default one without the repository's `paths`, so the
 * package's own name (`tickwork`, `tickwork/redis`, …) resolves as it does in an app that installed
 * it, through package.json `exports` to the built `dist/` (`npm run bench` builds first). The
 * contenders measured against BullMQ import tickwork that way: tsx's transform of the sources
 * adds work of its own (a `__name` call for every function it creates), which users never run.
 * `BENCH_SOURCES=1` runs the sources instead (e.g. for a profile that names their lines).
 */
function childTsconfig(): Record<string, string> {
  if (process.env.BENCH_SOURCES === "1") return {};
  return {
    TSX_TSCONFIG_PATH: fileURLToPath(new URL("../../tsconfig.build.json", import.meta.url)),
  };
}

/**
 * Start `file` (relative to `bench/`) under tsx with `args`; resolves once it sends
 * `{ type: "ready", ... }`.
 *
 * @example
 * const double = await startTsChild<{ url: string }>("servers/qstash-double.ts");
 * const counters = await double.request("counters");
 */
export async function startTsChild<Ready>(
  file: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<TsChild<Ready>> {
  const path = fileURLToPath(new URL(`../${file}`, import.meta.url));
  const child = track(
    spawn(process.execPath, [...childNodeArgs(), "--import", "tsx", path, ...args], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
      env: { ...process.env, ...childTsconfig(), ...env },
    }),
  );
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const ready = await new Promise<Ready>((resolve, reject) => {
    const onExit = (code: number | null) =>
      reject(new Error(`${file} exited with ${code} before it was ready`));
    child.once("exit", onExit);
    child.on("message", (raw: Reply) => {
      if (raw.type === "ready") {
        child.off("exit", onExit);
        resolve(raw as Ready);
        return;
      }
      const waiter = raw.id === undefined ? undefined : pending.get(raw.id);
      if (!waiter || raw.id === undefined) return;
      pending.delete(raw.id);
      if (raw.error !== undefined) waiter.reject(new Error(`${file}: ${raw.error}`));
      else waiter.resolve(raw.result);
    });
  });
  child.once("exit", (code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${file} exited (${code})`));
    pending.clear();
  });
  return {
    ready,
    pid: child.pid ?? 0,
    request<T>(type: string, extra: Record<string, unknown> = {}): Promise<T> {
      const id = nextId++;
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
        child.send({ id, type, ...extra });
      });
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null && child.connected) {
        // Ask for a clean exit first (it writes a --cpu-prof profile), then make sure.
        child.send({ type: "exit" });
        const timer = setTimeout(() => child.kill("SIGKILL"), 2_000);
        await exited;
        clearTimeout(timer);
      }
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/**
 * The child side: announce readiness and answer requests with `handlers[type](message)`.
 * Built in: `cpu` answers the CPU time used so far (µs); `exit` exits cleanly. The child also
 * exits when the parent goes away (the IPC channel closes).
 */
export function serveParent(
  ready: Record<string, unknown>,
  handlers: Record<string, (message: Record<string, unknown>) => unknown>,
): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error("this file is started by bench/run.ts (no IPC channel)");
  process.on("disconnect", () => process.exit(0));
  process.on("message", (message: Record<string, unknown>) => {
    const id = message.id;
    if (message.type === "exit") {
      // A clean exit (flushes e.g. a --cpu-prof profile); the parent sees the channel close.
      process.exit(0);
    }
    if (message.type === "cpu") {
      // CPU time this process has used, in µs (user + system).
      const { user, system } = process.cpuUsage();
      send({ id, result: user + system });
      return;
    }
    const handler = handlers[String(message.type)];
    if (!handler) {
      send({ id, error: `unknown request ${String(message.type)}` });
      return;
    }
    Promise.resolve()
      .then(() => handler(message))
      .then(
        (result) => send({ id, result }),
        (error: unknown) =>
          send({ id, error: error instanceof Error ? error.message : String(error) }),
      );
  });
  send({ type: "ready", ...ready });
}
