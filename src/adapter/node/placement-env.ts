/**
 * @module
 * Placement settings of a Node server from its environment (docs/adr/0017-placement.md):
 * `TICKWORK_NODE_ID` (a stable id for `placement.nodes` / `notNodes`), `TICKWORK_GROUP` (the worker
 * group it runs) and `TICKWORK_WORKER_GROUPS` (with QStash: each group's worker URL).
 */
import { DEFAULT_GROUP, nodeIdentityProblem } from "../../core/placement.ts";
import { ConfigError } from "./errors.ts";

/** What {@link placementFromEnv} reads, as `startServer` options. */
export interface PlacementSettings {
  nodeId?: string;
  group?: string;
  workerGroups?: Record<string, string>;
}

const NODE_ID = /^[A-Za-z0-9_.:@/-]{1,200}$/;

/**
 * The placement settings in `env` (each absent when unset or empty).
 * @throws ConfigError naming the variable for a malformed value.
 *
 * @example
 * placementFromEnv({ TICKWORK_GROUP: "gpu", TICKWORK_NODE_ID: "gpu-1" });
 * // { nodeId: "gpu-1", group: "gpu" }
 */
export function placementFromEnv(
  env: Readonly<Record<string, string | undefined>>,
): PlacementSettings {
  const read = (name: string) => env[name]?.trim() || undefined;
  const out: PlacementSettings = {};
  const nodeId = read("TICKWORK_NODE_ID");
  if (nodeId !== undefined) {
    if (!NODE_ID.test(nodeId)) {
      throw new ConfigError(
        `TICKWORK_NODE_ID must be 1–200 of A–Z a–z 0–9 _ . : @ / -, got ${JSON.stringify(nodeId.slice(0, 80))}`,
        { variable: "TICKWORK_NODE_ID", field: "nodeId" },
      );
    }
    out.nodeId = nodeId;
  }
  const group = read("TICKWORK_GROUP");
  if (group !== undefined) {
    const problem = nodeIdentityProblem({ id: "-", group });
    if (problem)
      throw new ConfigError(`TICKWORK_GROUP: ${problem}`, {
        variable: "TICKWORK_GROUP",
        field: "group",
      });
    out.group = group;
  }
  const groups = read("TICKWORK_WORKER_GROUPS");
  if (groups !== undefined) out.workerGroups = parseWorkerGroups(groups);
  return out;
}

/**
 * `TICKWORK_WORKER_GROUPS`: a JSON object from group name to that group's worker URL
 * (`https://…/v1/worker`), at most 32 entries; `default` names the URL of jobs without a group.
 * @throws ConfigError saying what is wrong.
 */
export function parseWorkerGroups(text: string): Record<string, string> {
  const fail = (problem: string) =>
    new ConfigError(`TICKWORK_WORKER_GROUPS ${problem}`, {
      variable: "TICKWORK_WORKER_GROUPS",
      field: "workerGroups",
    });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw fail('is not JSON: set it to e.g. {"gpu":"https://gpu.example.com/v1/worker"}');
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw fail('must be a JSON object, e.g. {"gpu":"https://gpu.example.com/v1/worker"}');
  }
  const entries = Object.entries(value);
  if (entries.length > 32) throw fail(`has ${entries.length} groups; at most 32`);
  const groups: Record<string, string> = Object.create(null);
  for (const [group, url] of entries) {
    if (group !== DEFAULT_GROUP && nodeIdentityProblem({ id: "-", group })) {
      throw fail(
        `names a bad group ${JSON.stringify(group.slice(0, 80))}: use 1–64 of A–Z a–z 0–9 _ . : @ / -`,
      );
    }
    if (typeof url !== "string" || !URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
      throw fail(`gives group "${group}" no http(s) URL`);
    }
    groups[group] = url;
  }
  return { ...groups };
}
