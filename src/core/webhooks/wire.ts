/**
 * @module
 * `GET /v1/hooks` on the wire (docs/api.md): the declarations the server's answer is typed by and
 * the typed client returns (`tw.hooks.list()`). Kept beside the verifiers' types; no secret is
 * ever part of it.
 */
import type { WebhookScheme } from "./types.ts";

/** One delivery in an endpoint's history: accepted (a job was made) or replayed (the first one). */
export interface WebhookDeliveryResource {
  /** When the store took it, ISO-8601. */
  at: string;
  /** The sender's event id (its SHA-256, `sha256:<hex>`, when unfit to show as it is). */
  eventId?: string;
  outcome: "accepted" | "replayed";
  jobId: string;
}

/** One endpoint, `POST /v1/hooks/<name>`. */
export interface WebhookEndpointResource {
  name: string;
  scheme: WebhookScheme;
  handler: string;
  /** Its last deliveries (at most 20), newest first. */
  deliveries: WebhookDeliveryResource[];
}

/** `GET /v1/hooks`: the caller's tenant's endpoints. */
export interface WebhookEndpointList {
  items: WebhookEndpointResource[];
}
