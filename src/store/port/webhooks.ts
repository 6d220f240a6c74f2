/**
 * @module
 * Inbound webhooks in the Store port (docs/webhooks.md): what a webhook submit carries
 * ({@link SubmitTiming}'s `webhook`), the per-endpoint counters every replica adds to, and the
 * short list of each endpoint's last deliveries. Optional on a store, like the node registry:
 * without {@link WebhookLog} the endpoints still work, with no rejection counts and no history.
 */

/** What `tickwork_webhook_requests_total{endpoint,outcome}` counts. */
export type WebhookOutcome =
  | "accepted"
  | "replayed"
  | "unauthorized"
  | "stale"
  | "not_found"
  | "too_large"
  | "limited"
  | "invalid";

/** Every {@link WebhookOutcome}, in the order they are shown. */
export const WEBHOOK_OUTCOMES: readonly WebhookOutcome[] = [
  "accepted",
  "replayed",
  "unauthorized",
  "stale",
  "not_found",
  "too_large",
  "limited",
  "invalid",
];

/** The endpoint label under which requests to unknown endpoints are counted. */
export const UNKNOWN_WEBHOOK_ENDPOINT = "_unknown";

/** Deliveries kept per endpoint (newest first). */
export const WEBHOOK_HISTORY = 20;

/** Longest endpoint name the stores accept in a counter or a history key. */
export const MAX_WEBHOOK_ENDPOINT = 64;

/**
 * The webhook a submit comes from (`submitJob`'s `timing.webhook`). In the same atomic step as
 * the submit, the store counts it (`accepted`, or `replayed` for a known idempotency key), puts it
 * at the head of the endpoint's history (at most {@link WEBHOOK_HISTORY}), and adds `webhook`
 * to the `job.created` event.
 */
export interface WebhookSubmit {
  /** The endpoint's name (at most {@link MAX_WEBHOOK_ENDPOINT} characters), as events show it. */
  endpoint: string;
  /**
   * What its count and history are kept under (default: `endpoint`). The HTTP route gives the
   * endpoint's tenant and name ({@link webhookLogId}), so a name that passes from one tenant's
   * endpoint to another's does not carry the first one's deliveries along.
   */
  log?: string;
  /** The sender's event id, when it has one (at most 256 characters). */
  eventId?: string;
}

/** One delivery in an endpoint's history. */
export interface WebhookDelivery {
  /** When the store took it (its clock), ms. */
  at: number;
  eventId?: string;
  outcome: "accepted" | "replayed";
  jobId: string;
}

/**
 * The optional webhook part of a store: counters for outcomes decided before any submit (bad
 * signatures, unknown endpoints, oversized bodies), and the endpoints' histories.
 */
export interface WebhookLog {
  /**
   * Add 1 to `endpoint`'s `outcome` counter (the store's metrics, shared by every replica). One
   * round trip; the caller bounds `endpoint` to configured endpoints or
   * {@link UNKNOWN_WEBHOOK_ENDPOINT}. Here and below `endpoint` is what the counts and histories
   * are kept under, to the store an opaque text: the HTTP route passes {@link webhookLogId}.
   */
  countWebhook(endpoint: string, outcome: WebhookOutcome): Promise<void>;
  /**
   * Every endpoint's counters, as `endpoint → outcome → count` (only counters above 0). One round
   * trip.
   */
  webhookCounts(): Promise<Map<string, Map<WebhookOutcome, number>>>;
  /** The last deliveries of each of `endpoints`, newest first (at most `limit` each). One round trip. */
  webhookDeliveries(
    endpoints: readonly string[],
    limit: number,
  ): Promise<Map<string, WebhookDelivery[]>>;
}

/** The second argument of `submitJob`: when the job runs, and what its submit carries besides. */
export interface SubmitTiming {
  runAt?: number;
  delayMs: number;
  recoverGraceMs: number;
  /**
   * How long this job's idempotency key lives, when longer than the store's
   * `retention.idempotencyMs` (the longer of the two applies). The job's record is then kept at
   * least as long once it finishes, and a retention cap does not drop it earlier.
   */
  idempotencyMs?: number;
  /** The webhook delivery the job comes from (see {@link WebhookSubmit}). */
  webhook?: WebhookSubmit;
}

/**
 * What a tenant's endpoint's count and history are kept under: its tenant and name
 * (length-prefixed, so no two pairs meet), never {@link UNKNOWN_WEBHOOK_ENDPOINT}.
 */
export function webhookLogId(tenant: string, endpoint: string): string {
  return `${tenant.length}:${tenant}:${endpoint}`;
}
