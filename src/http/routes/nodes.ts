/**
 * @module
 * `GET /v1/nodes`: the fleet, from the store's node registry — every long-lived process serving a
 * role (a Node server) heartbeats into it, and is reported `live` or `stale` by the store's clock.
 * Deployment-wide like `/v1/stats` (every tenant's key with the `read` scope sees the same
 * fleet); one store round trip. On a serverless platform (Workers, Vercel) no process lives on
 * to register: the answer is an empty list with a note, and the store is not read.
 */
import { Hono } from "hono";
import type { NodeResource, NodesResource } from "../../core/wire.ts";
import { type NodeRecord, nodeRegistry } from "../../store/port.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { requireScope } from "../middleware/scope.ts";
import { type AppConfig, type AppEnv, SERVERLESS_PLATFORMS } from "../options.ts";

// The answers' shapes are declared once for the server and the client (`src/core/wire.ts`).
export type { NodeResource, NodesResource };

/** The fleet as the route answers it (and the node counts of `/metrics`). */
export async function readNodes(config: AppConfig): Promise<NodesResource> {
  const deployment = config.platform;
  if (SERVERLESS_PLATFORMS.includes(deployment)) {
    return {
      nodes: [],
      deployment,
      note:
        `${deployment} is serverless: no long-lived nodes register here (each invocation ends ` +
        "when it has answered); see /v1/stats for the deployment's figures.",
    };
  }
  const registry = nodeRegistry(config.engine.store);
  if (!registry) {
    return { nodes: [], deployment, note: "this store keeps no node registry" };
  }
  return { nodes: (await registry.listNodes()).map(nodeResource), deployment };
}

/**
 * Live and stale nodes for `/metrics`, or `undefined` where nothing registers (a serverless
 * platform, a store without a registry): then `/metrics` has no `tickwork_nodes` family.
 */
export async function nodeCounts(
  config: AppConfig,
): Promise<{ live: number; stale: number } | undefined> {
  const answer = await readNodes(config);
  if (answer.note !== undefined) return undefined;
  const live = answer.nodes.filter((n) => n.status === "live").length;
  return { live, stale: answer.nodes.length - live };
}

/**
 * The node registry's route, to mount at the base path when the roles read.
 *
 * @example
 * app.route("/", nodesRoutes(config));
 * // GET /v1/nodes → { "nodes": [{ "id": "tw-1a2b3c4d", "status": "live", … }], "deployment": "node" }
 */
export function nodesRoutes(config: AppConfig): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.get("/v1/nodes", authorizeRequest(config.authorize), requireScope("read"), async (c) => {
    c.header("Cache-Control", "no-store");
    return c.json(await readNodes(config));
  });
  return routes;
}

/** A node as the API shows it. */
export function nodeResource(node: NodeRecord): NodeResource {
  return {
    id: node.id,
    status: node.status,
    roles: node.roles,
    version: node.version,
    handlers: node.handlers,
    capabilities: node.capabilities,
    concurrency: node.concurrency,
    inFlight: node.inFlight,
    transport: node.transport,
    hostname: node.hostname,
    pid: node.pid,
    startedAt: new Date(node.startedAt).toISOString(),
    lastSeen: new Date(node.lastSeen).toISOString(),
    ttlMs: node.ttlMs,
  };
}
