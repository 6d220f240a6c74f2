/**
 * @module
 * `client.hooks`: the inbound webhook endpoints of the key's tenant, with their last deliveries
 * (`GET /v1/hooks`, `src/http/routes/hooks.ts`, docs/webhooks.md). Senders deliver to
 * `POST /v1/hooks/<name>` themselves: the client never sends deliveries.
 */
import type { WebhookEndpointList } from "../core/webhooks/wire.ts";
import { type Caller, call } from "./request.ts";

/** `client.hooks`. */
export class HooksApi {
  readonly #caller: Caller;

  constructor(caller: Caller) {
    this.#caller = caller;
  }

  /**
   * The tenant's endpoints (name, scheme, handler — never secrets), each with its last
   * deliveries, newest first; needs the `read` scope.
   *
   * @example
   * const { items } = await client.hooks.list();
   * for (const hook of items) console.log(hook.name, hook.deliveries[0]?.outcome);
   */
  async list(): Promise<WebhookEndpointList> {
    return (await call<WebhookEndpointList>(this.#caller, "GET", "/v1/hooks")).data;
  }
}
