/**
 * @module
 * A Node server in the node registry (`GET /v1/nodes`): it describes itself (id, roles, version,
 * handlers, capabilities, its pull worker's concurrency and deliveries in flight, transport,
 * hostname, pid, start time) and heartbeats that well inside its TTL — the first heartbeat before
 * the start banner prints, then one every `everyMs` on an unref'd timer. A failed heartbeat is
 * logged, never fatal (the next one retries). At shutdown it stops and deregisters.
 *
 * Also the capabilities' check, shared by `startServer`'s option and `TICKWORK_CAPABILITIES`.
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import type { Logger } from "../../engine/logger.ts";
import {
  NODE_LIMITS,
  type NodeInfo,
  type NodeRecord,
  type NodeRegistry,
  nodeRegistry,
} from "../../store/port.ts";
import { StartError } from "./errors.ts";

/** A node is stale after this long without a heartbeat. */
export const DEFAULT_NODE_TTL_MS = 45_000;
/** A heartbeat every this long: three per TTL. */
export const DEFAULT_HEARTBEAT_MS = 15_000;

/** Options of the heartbeat (`StartServerOptions.heartbeat`). */
export interface HeartbeatOptions {
  /** How often the node heartbeats (ms). Must be below `ttlMs`. @default 15_000 */
  everyMs?: number | undefined;
  /** The node is `stale` after this long without a heartbeat (ms), dropped after 10×. @default 45_000 */
  ttlMs?: number | undefined;
}

/** A running heartbeat. */
export interface NodeHeartbeat {
  /** Stop heartbeating and deregister (a failure is logged). Idempotent. */
  stop(): Promise<void>;
}

/**
 * The heartbeat's period and TTL with the defaults applied (three heartbeats per TTL when only
 * the TTL is given), or what is wrong with them.
 *
 * @example
 * heartbeatSettings({ everyMs: 5_000 }); // { everyMs: 5000, ttlMs: 45000 }
 */
export function heartbeatSettings(
  options: HeartbeatOptions,
): { everyMs: number; ttlMs: number } | string {
  const ttlMs = options.ttlMs ?? DEFAULT_NODE_TTL_MS;
  const everyMs = options.everyMs ?? Math.min(DEFAULT_HEARTBEAT_MS, Math.floor(ttlMs / 3));
  if (!Number.isInteger(ttlMs) || ttlMs < 3 || ttlMs > NODE_LIMITS.maxTtlMs) {
    return `heartbeat.ttlMs must be a whole number from 3 to ${NODE_LIMITS.maxTtlMs}, got ${ttlMs}`;
  }
  if (!Number.isInteger(everyMs) || everyMs < 1 || everyMs >= ttlMs) {
    return `heartbeat.everyMs must be a whole number from 1 to below ttlMs (${ttlMs}), got ${everyMs}`;
  }
  return { everyMs, ttlMs };
}

/**
 * What is wrong with a capabilities value, or `undefined` when it is a JSON object of at most 32
 * strings, names and values of 1–200 and 0–200 characters.
 */
export function capabilitiesProblem(value: unknown): string | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return 'must be a JSON object of strings, e.g. {"region":"eu-west-1","gpu":"a100"}';
  }
  const entries = Object.entries(value);
  if (entries.length > NODE_LIMITS.capabilities) {
    return `must have at most ${NODE_LIMITS.capabilities} entries, got ${entries.length}`;
  }
  const max = NODE_LIMITS.stringChars;
  for (const [name, text] of entries) {
    if (name === "" || name.length > max) {
      return `names must be 1 to ${max} characters, got ${JSON.stringify(name.slice(0, 40))}`;
    }
    if (typeof text !== "string") {
      return `${JSON.stringify(name)} must be a string, got ${text === null ? "null" : typeof text}`;
    }
    if (text.length > max) return `${JSON.stringify(name)} must be at most ${max} characters`;
  }
  return undefined;
}

/** The package's version (its package.json, two folders above `src/` or `dist/`), or `unknown`. */
export function packageVersion(): string {
  try {
    const text = readFileSync(new URL("../../../package.json", import.meta.url), "utf8");
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === "string" ? version : "unknown";
  } catch {
    return "unknown";
  }
}

/** This process's fixed facts, for {@link NodeInfo}. */
export function processFacts(): Pick<NodeInfo, "hostname" | "pid" | "version"> {
  return {
    hostname: hostname().slice(0, NODE_LIMITS.stringChars),
    pid: process.pid,
    version: packageVersion().slice(0, NODE_LIMITS.stringChars),
  };
}

/** Handler names as a node reports them: within the registry's bounds. */
export function reportedHandlers(names: readonly string[]): string[] {
  return names
    .filter((name) => name.length <= NODE_LIMITS.stringChars)
    .slice(0, NODE_LIMITS.handlers);
}

/**
 * Heartbeat `info()` into `registry` now (awaited: failures logged), then every `everyMs`; never
 * two at once. `stop()` waits for a heartbeat under way, then deregisters.
 *
 * @example
 * const heartbeat = await startNodeHeartbeat({ registry, info, everyMs: 15_000, ttlMs: 45_000, logger });
 * // at shutdown
 * await heartbeat.stop();
 */
export async function startNodeHeartbeat(options: {
  registry: NodeRegistry;
  info: () => NodeInfo;
  everyMs: number;
  ttlMs: number;
  logger: Logger;
}): Promise<NodeHeartbeat> {
  const { registry, info, everyMs, ttlMs, logger } = options;
  let id = "";
  let self: NodeInfo | undefined;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failing = false;
  let beats = 0;
  /** Another live process was seen under this id. */
  let shared = false;
  const beat = async () => {
    const node = info();
    id = node.id;
    self = node;
    beats++;
    try {
      // Two processes given one TICKWORK_NODE_ID share one entry, each beat overwriting the
      // other's. Looked for before the second beat (by then one started beside us has
      // overwritten ours; a process that crashed under this id before we started has not), then
      // every SHARED_CHECK_BEATS beats, for one started later (one listing each time).
      if (!shared && (beats === 2 || beats % SHARED_CHECK_BEATS === 0)) {
        shared = await warnIfShared(registry, node, logger);
      }
      await registry.heartbeatNode(node, ttlMs);
      if (failing) logger.info("tickwork: node heartbeat recovered", { node: id });
      failing = false;
    } catch (error) {
      // Logged once per run of failures: a Redis outage would otherwise log every beat.
      if (!failing) {
        logger.warn("tickwork: node heartbeat failed; retrying on the next one", {
          node: id,
          error: String(error),
        });
      }
      failing = true;
    }
  };
  let current: Promise<void> = beat();
  await current;
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      current = beat().then(schedule);
    }, everyMs);
    timer.unref();
  };
  schedule();
  let stopping: Promise<void> | undefined;
  return {
    stop() {
      stopping ??= (async () => {
        stopped = true;
        clearTimeout(timer);
        await current;
        try {
          // Not an entry another process shares: it is still running (and may not have been
          // the last to write it).
          if (!shared && !(self && (await heldByAnother(registry, self)))) {
            await registry.removeNode(id);
          }
        } catch (error) {
          logger.warn("tickwork: could not deregister the node", {
            node: id,
            error: String(error),
          });
        }
      })();
      return stopping;
    },
  };
}

/**
 * The live entry of another process registered under `node`'s id (another host, pid or start
 * time), if any. A listing that fails counts as none.
 */
async function heldByAnother(
  registry: NodeRegistry,
  node: NodeInfo,
): Promise<NodeRecord | undefined> {
  let listed: NodeRecord[];
  try {
    listed = await registry.listNodes();
  } catch {
    return undefined;
  }
  return listed.find(
    (n) =>
      n.id === node.id &&
      n.status === "live" &&
      (n.hostname !== node.hostname || n.pid !== node.pid || n.startedAt !== node.startedAt),
  );
}

/** Beats between two looks for another process under the same node id (5 min at 15 s). */
const SHARED_CHECK_BEATS = 20;

/**
 * Logs a warning when another live process holds `node`'s entry in the registry; whether one
 * does.
 */
async function warnIfShared(
  registry: NodeRegistry,
  node: NodeInfo,
  logger: Logger,
): Promise<boolean> {
  const other = await heldByAnother(registry, node);
  if (!other) return false;
  logger.warn(
    "tickwork: another process heartbeats under this node id; give each process its own TICKWORK_NODE_ID (GET /v1/nodes shows one entry for both, and each one's graceful stop leaves it to the other)",
    { node: node.id, otherHost: other.hostname, otherPid: other.pid },
  );
  return true;
}

/** A server's node settings, checked: its capabilities and its heartbeat (`false`: none). */
export interface NodeOptions {
  capabilities: Record<string, string>;
  heartbeat: { everyMs: number; ttlMs: number } | false;
}

/**
 * `startServer`'s `capabilities` and `heartbeat`, checked, with the defaults applied.
 * @throws StartError naming the field at fault.
 */
export function resolveNodeOptions(
  capabilities: Readonly<Record<string, string>> | undefined,
  heartbeat: HeartbeatOptions | false | undefined,
): NodeOptions {
  const problem = capabilitiesProblem(capabilities ?? {});
  if (problem) throw new StartError(`capabilities ${problem}`, { field: "capabilities" });
  const settings = heartbeat === false ? false : heartbeatSettings(heartbeat ?? {});
  if (typeof settings === "string") throw new StartError(settings, { field: "heartbeat" });
  return { capabilities: { ...capabilities }, heartbeat: settings };
}

/** What a Node server registers as, besides this process's facts. */
export interface ServerNode extends NodeOptions {
  /** The store; a store without the registry's methods registers nothing. */
  store: Partial<NodeRegistry>;
  /** The engine's `instanceId`. */
  id: string;
  roles: readonly string[];
  handlers: readonly string[];
  transport: string;
  /** Its pull worker, when it runs one: concurrency and deliveries in flight. */
  worker: () => { stats(): { concurrency: number; inFlight: number } } | undefined;
  logger: Logger;
}

/**
 * Start a server's heartbeat ({@link startNodeHeartbeat}), or `undefined` when it registers
 * nothing (`heartbeat: false`, or a store without a registry).
 */
export async function registerServer(server: ServerNode): Promise<NodeHeartbeat | undefined> {
  const registry = nodeRegistry(server.store);
  if (!server.heartbeat || !registry) return undefined;
  const fixed = {
    id: server.id,
    roles: [...server.roles],
    handlers: reportedHandlers(server.handlers),
    capabilities: server.capabilities,
    transport: server.transport,
    ...processFacts(),
    startedAt: Date.now(),
  };
  return startNodeHeartbeat({
    registry,
    ...server.heartbeat,
    logger: server.logger,
    info: () => {
      const pulled = server.worker()?.stats();
      return { ...fixed, concurrency: pulled?.concurrency ?? 0, inFlight: pulled?.inFlight ?? 0 };
    },
  });
}
