/**
 * The dev server as a child process, the way a developer runs it: spawn, wait for the banner,
 * read its URL and curl lines; stop with SIGTERM (the whole process group). Plus a Redis prefix
 * cleaner (SCAN MATCH + DEL, never FLUSHALL).
 *
 * Readiness and shutdown are what the process says, never a guess after a sleep:
 * - ready: the banner's last line is printed. `startServer` prints the banner after `serve` has
 *   bound the port and installed the SIGINT/SIGTERM handlers (src/adapter/node/start.ts and
 *   serve.ts), so a signal sent after it is handled gracefully;
 * - stopped: the child emitted `close`, i.e. it exited *and* everything it wrote to stdout and
 *   stderr has been read. `exit` alone can come first: the shutdown note on stderr may still be
 *   unread then.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const REDIS_URL = "redis://127.0.0.1:6379";

/** Every variable the CLI and `functions/node.ts` read: a test's child starts without them. */
export const CONFIG_VARIABLES = [
  "PORT",
  "HOST",
  "REDIS_URL",
  "UPSTASH_REDIS_REST_URL",
  "UPSTASH_REDIS_REST_TOKEN",
  "KV_REST_API_URL",
  "KV_REST_API_TOKEN",
  "QSTASH_TOKEN",
  "QSTASH_URL",
  "QSTASH_CURRENT_SIGNING_KEY",
  "QSTASH_NEXT_SIGNING_KEY",
  "TICKWORK_PUBLIC_URL",
  "TICKWORK_SIGNING_KEY",
  "TICKWORK_API_KEY",
  "TICKWORK_PREFIX",
  "TICKWORK_ROLES",
  "TICKWORK_TRANSPORT",
  "TICKWORK_CONCURRENCY",
  "TICKWORK_READ_AHEAD",
  "TICKWORK_KEEP_ALIVE_MS",
  "TICKWORK_CAPABILITIES",
  "TICKWORK_HEARTBEAT_MS",
  "TICKWORK_NODE_TTL_MS",
  "TICKWORK_NODE_ID",
  "TICKWORK_GROUP",
  "TICKWORK_WORKER_GROUPS",
  "TICKWORK_CONFIG",
  "CRON_SECRET",
];

/** This process's environment without {@link CONFIG_VARIABLES}, plus `env`. */
export function cleanEnv(env: Record<string, string> = {}): Record<string, string | undefined> {
  const base = { ...process.env };
  for (const name of CONFIG_VARIABLES) delete base[name];
  return { ...base, ...env };
}

export interface DevServer {
  url: string;
  /** The banner's curl lines, exactly as printed. */
  curls: string[];
  banner: string;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
  /** The process id (also its process group's: it is started detached). */
  pid: number;
  /**
   * SIGTERM the process group and wait until it has exited and all its output is read (`close`);
   * resolves with the exit code. SIGKILL after 8 s.
   */
  stop(): Promise<number | null>;
  /**
   * SIGKILL the process group at once (a crash: no shutdown runs) and wait until it has exited
   * and all its output is read; resolves when it has.
   */
  kill(): Promise<void>;
}

/**
 * Start the dev server on a free port (`PORT=0`) and wait for its banner.
 * `command` chooses how: `npm run dev` (as documented), `tsx` directly (one process, quicker),
 * the `tickwork` bin with arguments (e.g. `["start"]`; it runs the compiled `dist/`), or the CLI
 * from its sources through tsx with arguments (`{ cli: ["start"] }`: one process, no build).
 */
export async function startDevServer(
  options: {
    env?: Record<string, string>;
    command?: "npm" | "tsx" | { bin: string[] } | { cli: string[] };
    timeoutMs?: number;
  } = {},
): Promise<DevServer> {
  const env = cleanEnv({ PORT: "0", ...options.env });
  const { command } = options;
  const [file, args] =
    command === "npm"
      ? ["npm", ["run", "--silent", "dev"]]
      : typeof command === "object" && "bin" in command
        ? [process.execPath, ["bin/tickwork.js", ...command.bin]]
        : typeof command === "object"
          ? [process.execPath, ["--import", "tsx", "src/cli.ts", ...command.cli]]
          : [process.execPath, ["--import", "tsx", "functions/node.ts"]];
  const child = spawn(file, args, { cwd: ROOT, env, detached: true });
  let out = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    out += chunk.toString();
  });
  // `close`, not `exit`: the child has exited and its stdout and stderr are read to the end.
  const closed = new Promise<number | null>((resolve) =>
    child.once("close", (code) => resolve(code)),
  );

  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      stopGroup(child);
      reject(new Error(`no banner within ${options.timeoutMs ?? 20_000} ms; output:\n${out}`));
    }, options.timeoutMs ?? 20_000);
    const check = () => {
      const start = out.search(/tickwork (dev server|server) listening on /);
      // The banner's last line: after the curl lines, or without them (no api role).
      const last = /answers 200 with the same job\.|through a server with the api role\./g;
      last.lastIndex = Math.max(start, 0);
      const end = last.exec(out)?.index ?? -1;
      if (start >= 0 && end >= 0) {
        clearTimeout(timer);
        child.stdout?.off("data", check);
        resolve(out.slice(start, out.indexOf("\n", end) + 1));
      }
    };
    child.stdout?.on("data", check);
    void closed.then((code) => {
      clearTimeout(timer);
      reject(new Error(`dev server exited (${code}) before its banner; output:\n${out}`));
    });
  });

  const url = /listening on (http:\/\/\S+)/.exec(banner)?.[1];
  if (!url) throw new Error(`no URL in banner:\n${banner}`);
  const curls = banner
    .split("\n")
    .filter((line) => /^\s+curl /.test(line))
    .map((line) => line.trim());
  let stopping: Promise<number | null> | undefined;
  return {
    url,
    curls,
    banner,
    pid: child.pid as number,
    output: () => out,
    async kill() {
      stopGroup(child, "SIGKILL");
      await closed;
    },
    stop() {
      stopping ??= (async () => {
        // Signalled even when the child has exited: the rest of its group may hold the pipes.
        stopGroup(child, "SIGTERM");
        const killer = setTimeout(() => stopGroup(child, "SIGKILL"), 8_000);
        const code = await closed;
        clearTimeout(killer);
        return code;
      })();
      return stopping;
    },
  };
}

function stopGroup(child: ChildProcess, signal: NodeJS.Signals = "SIGKILL"): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** A fresh random key prefix. */
export function randomPrefix(): string {
  return `twdev${Math.random().toString(36).slice(2, 10)}`;
}

/** Delete every key under `{prefix}` (SCAN MATCH, never FLUSHALL). */
export async function deletePrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = "0";
    do {
      const [next, found] = await redis.scan(cursor, "MATCH", `{${prefix}}:*`, "COUNT", 1000);
      if (found.length > 0) await redis.del(...found);
      cursor = next;
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Poll `probe` until it returns a value other than `undefined`, or fail after `timeoutMs`. */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  what: string,
  timeoutMs = 10_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}
