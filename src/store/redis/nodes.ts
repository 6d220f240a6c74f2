/**
 * @module
 * The Redis store's node registry (the port's `NodeRegistry`): `heartbeatNode`, `removeNode` and
 * `listNodes`, each one script, one round trip. The scripts build the registry's keys from the
 * root (`keys.ts` `nodes` and `nodesExpiry` name them).
 */
import {
  NODE_DROP_TTLS,
  NODE_LIMITS,
  type NodeInfo,
  type NodeRecord,
  nodeRecordJson,
  nodeStatus,
} from "../port.ts";
import { fromJson, toInt } from "./codec.ts";
import type { RedisContext } from "./context.ts";
import { RedisStoreError } from "./errors.ts";
import { scripts } from "./scripts.generated.ts";

/** A UTF-16 code unit is at most 3 bytes of UTF-8: the scripts' bound on an id's bytes. */
const MAX_ID_BYTES = NODE_LIMITS.idChars * 3;

export async function heartbeatNode(c: RedisContext, node: NodeInfo, ttlMs: number): Promise<void> {
  const record = nodeRecordJson(node, ttlMs);
  const raw = await c.run(
    scripts.heartbeatNode,
    [c.keys.root],
    [
      node.id,
      record,
      String(ttlMs),
      String(NODE_DROP_TTLS),
      String(NODE_LIMITS.prunePerCall),
      String(NODE_LIMITS.nodes),
      String(MAX_ID_BYTES),
      String(NODE_LIMITS.recordBytes),
    ],
  );
  if (toInt(raw) !== 1) throw new RedisStoreError("heartbeatNode", "the script refused the node");
}

export async function removeNode(c: RedisContext, id: string): Promise<void> {
  await c.run(scripts.removeNode, [c.keys.root], [id]);
}

export async function listNodes(c: RedisContext): Promise<NodeRecord[]> {
  const raw = await c.run(scripts.listNodes, [c.keys.root], []);
  const r = fromJson<{ now: number; nodes: (NodeInfo & { lastSeen: number; ttlMs: number })[] }>(
    raw,
  );
  const out: NodeRecord[] = [];
  for (const node of r.nodes) {
    const status = nodeStatus(node.lastSeen, node.ttlMs, r.now);
    if (status !== "dropped") out.push({ ...node, status });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
