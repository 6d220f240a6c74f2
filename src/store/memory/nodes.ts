/**
 * @module
 * The memory store's node registry (the port's `NodeRegistry`), as the Redis scripts
 * `heartbeatNode`, `removeNode` and `listNodes` keep it: one record per node id with the time it
 * is dropped, pruned by the heartbeats themselves (at most `NODE_LIMITS.prunePerCall` a call).
 */
import {
  NODE_DROP_TTLS,
  NODE_LIMITS,
  type NodeInfo,
  type NodeRecord,
  nodeRecordJson,
  nodeStatus,
} from "../port.ts";
import { compareIds } from "./shared.ts";
import type { MemoryState } from "./state.ts";

/** One registered node (`{p}:nodes` and `{p}:nodes:expiry` in Redis). */
export interface StoredNode {
  /** The node's record as JSON (copied in and out as text). */
  json: string;
  lastSeen: number;
  ttlMs: number;
  /** When it is dropped: `lastSeen + NODE_DROP_TTLS × ttlMs`. */
  dropAt: number;
}

export function heartbeatNode(s: MemoryState, node: NodeInfo, ttlMs: number): void {
  const json = nodeRecordJson(node, ttlMs);
  const now = s.now();
  let pruned = 0;
  for (const [id, stored] of s.nodes) {
    if (pruned >= NODE_LIMITS.prunePerCall) break;
    if (stored.dropAt <= now) {
      s.nodes.delete(id);
      pruned++;
    }
  }
  const added = !s.nodes.has(node.id);
  s.nodes.set(node.id, { json, lastSeen: now, ttlMs, dropAt: now + NODE_DROP_TTLS * ttlMs });
  if (added && s.nodes.size > NODE_LIMITS.nodes) {
    // Full: the node closest to being dropped makes room (ties by id, as a sorted set).
    let victim: [string, number] | undefined;
    for (const [id, stored] of s.nodes) {
      if (id === node.id) continue;
      if (
        !victim ||
        stored.dropAt < victim[1] ||
        (stored.dropAt === victim[1] && compareIds(id, victim[0]) < 0)
      ) {
        victim = [id, stored.dropAt];
      }
    }
    if (victim) s.nodes.delete(victim[0]);
  }
}

export function removeNode(s: MemoryState, id: string): void {
  s.nodes.delete(id);
}

export function listNodes(s: MemoryState): NodeRecord[] {
  const now = s.now();
  const out: NodeRecord[] = [];
  for (const stored of s.nodes.values()) {
    const status = nodeStatus(stored.lastSeen, stored.ttlMs, now);
    if (status === "dropped") continue;
    const info = JSON.parse(stored.json) as NodeInfo;
    out.push({ ...info, lastSeen: stored.lastSeen, ttlMs: stored.ttlMs, status });
  }
  return out.sort((a, b) => compareIds(a.id, b.id));
}
