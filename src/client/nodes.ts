/**
 * @module
 * `client.nodes`: the fleet — every long-lived server registered in the node registry, `live` or
 * `stale` by its last heartbeat (`GET /v1/nodes`, `src/http/routes/nodes.ts`).
 */
import { type Caller, call } from "./request.ts";
import type { Nodes } from "./types.ts";

/** `client.nodes`. */
export class NodesApi {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * The registered nodes, by id, and where the app runs; needs the `read` scope. On a serverless
   * platform the list is empty and `note` says why.
   *
   * @example
   * const { nodes } = await client.nodes.list();
   * const gpus = nodes.filter((n) => n.status === "live" && n.capabilities.gpu === "a100");
   */
  async list(): Promise<Nodes> {
    return (await call<Nodes>(this.#caller, "GET", "/v1/nodes")).data;
  }
}
