/**
 * @module
 * The memory store's webhook part (`WebhookLog`, docs/webhooks.md): per-endpoint outcome
 * counters and each endpoint's last deliveries, kept beside the state (a `WeakMap` keyed by it,
 * so `MemoryState` needs no field of its own). `submitJob` records its webhook through
 * {@link recordWebhookSubmit}, inside its own synchronous step.
 */
import {
  WEBHOOK_HISTORY,
  type WebhookDelivery,
  type WebhookOutcome,
  type WebhookSubmit,
} from "../port.ts";
import type { MemoryState } from "./state.ts";

interface WebhookState {
  counts: Map<string, Map<WebhookOutcome, number>>;
  history: Map<string, WebhookDelivery[]>;
}

const states = new WeakMap<MemoryState, WebhookState>();

function stateOf(s: MemoryState): WebhookState {
  let state = states.get(s);
  if (!state) {
    state = { counts: new Map(), history: new Map() };
    states.set(s, state);
  }
  return state;
}

/** `countWebhook`: one more `outcome` for `endpoint`. */
export function countWebhook(s: MemoryState, endpoint: string, outcome: WebhookOutcome): void {
  const counts = stateOf(s).counts;
  const byOutcome = counts.get(endpoint) ?? new Map<WebhookOutcome, number>();
  byOutcome.set(outcome, (byOutcome.get(outcome) ?? 0) + 1);
  counts.set(endpoint, byOutcome);
}

/** A submit's webhook, accepted or replayed: counted and put at the head of the history. */
export function recordWebhookSubmit(
  s: MemoryState,
  webhook: WebhookSubmit,
  outcome: "accepted" | "replayed",
  jobId: string,
  now: number,
): void {
  const log = webhook.log ?? webhook.endpoint;
  countWebhook(s, log, outcome);
  const history = stateOf(s).history;
  const list = history.get(log) ?? [];
  list.unshift({
    at: now,
    ...(webhook.eventId !== undefined ? { eventId: webhook.eventId } : {}),
    outcome,
    jobId,
  });
  list.length = Math.min(list.length, WEBHOOK_HISTORY);
  history.set(log, list);
}

/** `webhookCounts`: copies of every counter. */
export function webhookCounts(s: MemoryState): Map<string, Map<WebhookOutcome, number>> {
  return new Map([...stateOf(s).counts].map(([endpoint, m]) => [endpoint, new Map(m)]));
}

/** `webhookDeliveries`: the last `limit` deliveries of each endpoint asked for. */
export function webhookDeliveries(
  s: MemoryState,
  endpoints: readonly string[],
  limit: number,
): Map<string, WebhookDelivery[]> {
  const history = stateOf(s).history;
  const n = Math.max(0, Math.min(WEBHOOK_HISTORY, Math.floor(limit)));
  return new Map(
    endpoints.map((e) => [e, (history.get(e) ?? []).slice(0, n).map((d) => ({ ...d }))]),
  );
}
