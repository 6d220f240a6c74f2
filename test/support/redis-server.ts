/**
 * A private redis-server on a free port, for measurements that need a Redis nobody else touches
 * (exact `INFO commandstats` counts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { Redis } from "ioredis";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

export interface PrivateRedis {
  url: string;
  port: number;
  /** The `redis-server` process (benchmarks register it for cleanup on exit). */
  child: ChildProcess;
  /** Kill it and wait until it has exited. */
  stop(): Promise<void>;
}

/** Start `redis-server` on a free loopback port, with no persistence. */
export async function startRedisServer(): Promise<PrivateRedis> {
  const port = await freePort();
  const child = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // Refused connections while the server starts are expected: the loop below retries.
  probe.on("error", () => {});
  for (let i = 0; ; i++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch (error) {
      if (i > 100) throw error;
      probe.disconnect();
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  probe.disconnect();
  return {
    url,
    port,
    child,
    async stop() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Total commands Redis has executed (all `cmdstat_*` calls), the unit Upstash bills. */
export async function commandsExecuted(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  const out = new Map<string, number>();
  for (const line of info.split("\n")) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** Commands executed between two snapshots, excluding the `INFO` used to take them. */
export function billedBetween(before: Map<string, number>, after: Map<string, number>): number {
  let total = 0;
  for (const [cmd, calls] of after) {
    if (cmd === "info") continue;
    total += calls - (before.get(cmd) ?? 0);
  }
  return total;
}
