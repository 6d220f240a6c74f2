/**
 * @module
 * The node registry part of the Store port: every long-lived process that serves a role (a Node
 * server: api, worker, tick, observer) heartbeats a description of itself; the registry reports
 * each one `live` or `stale` by the store's clock and drops the ones silent for
 * {@link NODE_DROP_TTLS} times their TTL. Serverless entries (Workers, Vercel) register nothing.
 *
 * The role is optional on {@link Store}: its three methods are optional there, so a store written
 * before it keeps compiling (and reports no nodes). A store implements all three or none;
 * {@link nodeRegistry} gives them as one object, or `undefined`.
 */

/** What a node says about itself on each heartbeat. Times are epoch ms. */
export interface NodeInfo {
  /** The engine's `instanceId`: unique per process. 1–200 characters. */
  id: string;
  /** The roles it serves (`all`, `api`, `tick`, `worker`, `observer`). */
  roles: string[];
  /** The package version it runs. */
  version: string;
  /** The handler names it can run. */
  handlers: string[];
  /** Free-form labels from configuration (`TICKWORK_CAPABILITIES`), e.g. `{ "gpu": "a100" }`. */
  capabilities: Record<string, string>;
  /** Deliveries it runs at once (its pull worker's), 0 when it runs none. */
  concurrency: number;
  /** Deliveries it is running now (its pull worker's), 0 when it runs none. */
  inFlight: number;
  /** How its jobs travel: `qstash`, `streams` or `local`. */
  transport: string;
  hostname: string;
  pid: number;
  /** When the process started (its own clock). */
  startedAt: number;
}

/** A registered node as {@link NodeRegistry.listNodes} reports it. */
export interface NodeRecord extends NodeInfo {
  /** The store's time of its last heartbeat. */
  lastSeen: number;
  /** The TTL its last heartbeat gave. */
  ttlMs: number;
  /** `live` while `now - lastSeen <= ttlMs` (store clock), `stale` after. */
  status: "live" | "stale";
}

/** Registered nodes: heartbeats, deregistration and the fleet's listing. */
export interface NodeRegistry {
  /**
   * Register or refresh `node` (upsert by id): `lastSeen` becomes the store's now, and the node
   * is `stale` once `ttlMs` passes without another heartbeat. The same operation drops nodes
   * silent for {@link NODE_DROP_TTLS} × their TTL, at most {@link NODE_LIMITS}`.prunePerCall` per
   * call; a new node past {@link NODE_LIMITS}`.nodes` evicts the one closest to being dropped.
   * One round trip.
   * @throws RangeError when `node` or `ttlMs` is outside {@link NODE_LIMITS} (nothing written).
   */
  heartbeatNode(node: NodeInfo, ttlMs: number): Promise<void>;
  /** Deregister a node (graceful shutdown). Unknown ids are ignored. One round trip. */
  removeNode(id: string): Promise<void>;
  /**
   * Every registered node not yet dropped, by id, with its status judged by the store's clock.
   * One round trip; at most {@link NODE_LIMITS}`.nodes` records.
   */
  listNodes(): Promise<NodeRecord[]>;
}

/** A node silent for this many TTLs is dropped. */
export const NODE_DROP_TTLS = 10;

/**
 * Bounds of a heartbeat, checked by both stores before anything is written (the Redis scripts
 * check the id and the record's size again), so input from anywhere cannot grow the registry
 * beyond `nodes` records of at most `recordBytes` each.
 */
export const NODE_LIMITS = {
  /** Characters of an id. */
  idChars: 200,
  /** Characters of every other string (a role, a handler name, a capability key or value…). */
  stringChars: 200,
  roles: 8,
  handlers: 256,
  capabilities: 32,
  /** UTF-8 bytes of one stored record (its JSON). */
  recordBytes: 32_768,
  /** Nodes registered at once. */
  nodes: 1_000,
  /** Longest TTL (ms): one day. */
  maxTtlMs: 86_400_000,
  /** Dropped nodes removed per heartbeat at most. */
  prunePerCall: 100,
} as const;

/**
 * The registry of a store that implements one (all three methods), bound to it; else `undefined`.
 *
 * @example
 * const registry = nodeRegistry(engine.store);
 * const nodes = registry ? await registry.listNodes() : [];
 */
export function nodeRegistry(store: Partial<NodeRegistry>): NodeRegistry | undefined {
  const { heartbeatNode, removeNode, listNodes } = store;
  if (!heartbeatNode || !removeNode || !listNodes) return undefined;
  return {
    heartbeatNode: heartbeatNode.bind(store),
    removeNode: removeNode.bind(store),
    listNodes: listNodes.bind(store),
  };
}

/**
 * Checks a heartbeat against {@link NODE_LIMITS} and returns the record's JSON (the fields of
 * {@link NodeInfo} only, in a fixed order), which both stores keep.
 * @throws RangeError naming the field at fault.
 */
export function nodeRecordJson(node: NodeInfo, ttlMs: number): string {
  if (!Number.isInteger(ttlMs) || ttlMs < 1 || ttlMs > NODE_LIMITS.maxTtlMs) {
    throw new RangeError(`node ttlMs must be a whole number from 1 to ${NODE_LIMITS.maxTtlMs}`);
  }
  const text = (field: string, value: unknown, max: number = NODE_LIMITS.stringChars) => {
    if (typeof value !== "string" || value.length > max) {
      throw new RangeError(`node ${field} must be a string of at most ${max} characters`);
    }
    return value;
  };
  const list = (field: string, value: unknown, max: number) => {
    if (!Array.isArray(value) || value.length > max) {
      throw new RangeError(`node ${field} must be a list of at most ${max} strings`);
    }
    return value.map((item, i) => text(`${field}[${i}]`, item));
  };
  const count = (field: string, value: unknown) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`node ${field} must be a whole number ≥ 0`);
    }
    return value;
  };
  const id = text("id", node.id, NODE_LIMITS.idChars);
  if (id === "") throw new RangeError("node id must not be empty");
  const capabilities = node.capabilities;
  if (typeof capabilities !== "object" || capabilities === null || Array.isArray(capabilities)) {
    throw new RangeError("node capabilities must be an object of strings");
  }
  const entries = Object.entries(capabilities);
  if (entries.length > NODE_LIMITS.capabilities) {
    throw new RangeError(`node capabilities must have at most ${NODE_LIMITS.capabilities} entries`);
  }
  const record: NodeInfo = {
    id,
    roles: list("roles", node.roles, NODE_LIMITS.roles),
    version: text("version", node.version),
    handlers: list("handlers", node.handlers, NODE_LIMITS.handlers),
    capabilities: Object.fromEntries(
      entries.map(([key, value]) => [
        text("capability name", key),
        text(`capabilities.${key}`, value),
      ]),
    ),
    concurrency: count("concurrency", node.concurrency),
    inFlight: count("inFlight", node.inFlight),
    transport: text("transport", node.transport),
    hostname: text("hostname", node.hostname),
    pid: count("pid", node.pid),
    startedAt: count("startedAt", node.startedAt),
  };
  const json = JSON.stringify(record);
  if (new TextEncoder().encode(json).length > NODE_LIMITS.recordBytes) {
    throw new RangeError(`node record must be at most ${NODE_LIMITS.recordBytes} bytes as JSON`);
  }
  return json;
}

/**
 * A node's status at `now` (store clock): `live` while `now - lastSeen <= ttlMs`, then `stale`,
 * and `dropped` from `lastSeen + NODE_DROP_TTLS × ttlMs` on (no longer listed).
 */
export function nodeStatus(
  lastSeen: number,
  ttlMs: number,
  now: number,
): NodeRecord["status"] | "dropped" {
  if (now >= lastSeen + NODE_DROP_TTLS * ttlMs) return "dropped";
  return now - lastSeen <= ttlMs ? "live" : "stale";
}
