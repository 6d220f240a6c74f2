/**
 * @module
 * The Redis store's webhook operations (the port's `WebhookLog`, docs/webhooks.md): the
 * counters of outcomes decided before any submit, and one read of every counter with the
 * endpoints' last deliveries. `submitJob` writes `accepted`/`replayed` and the histories itself.
 * Each one script, one round trip.
 */
import {
  WEBHOOK_HISTORY,
  WEBHOOK_OUTCOMES,
  type WebhookDelivery,
  type WebhookOutcome,
} from "../port.ts";
import { fromJson } from "./codec.ts";
import type { RedisContext } from "./context.ts";
import { scripts } from "./scripts.generated.ts";

export async function countWebhook(
  c: RedisContext,
  endpoint: string,
  outcome: WebhookOutcome,
): Promise<void> {
  await c.run(scripts.countWebhook, [c.keys.hookCounts], [outcome, endpoint]);
}

interface RawLog {
  counts: Record<string, string>;
  log: Record<string, WebhookDelivery[]>;
}

async function readLog(
  c: RedisContext,
  endpoints: readonly string[],
  limit: number,
): Promise<RawLog> {
  const n = Math.max(0, Math.min(WEBHOOK_HISTORY, Math.floor(limit)));
  const raw = await c.run(scripts.webhookLog, [c.keys.root], [n, ...endpoints]);
  return fromJson<RawLog>(raw);
}

export async function webhookCounts(
  c: RedisContext,
): Promise<Map<string, Map<WebhookOutcome, number>>> {
  const { counts } = await readLog(c, [], 0);
  const out = new Map<string, Map<WebhookOutcome, number>>();
  for (const [field, value] of Object.entries(counts)) {
    const colon = field.indexOf(":");
    const outcome = field.slice(0, colon) as WebhookOutcome;
    if (colon < 0 || !WEBHOOK_OUTCOMES.includes(outcome)) continue;
    const endpoint = field.slice(colon + 1);
    const byOutcome = out.get(endpoint) ?? new Map<WebhookOutcome, number>();
    byOutcome.set(outcome, Number(value));
    out.set(endpoint, byOutcome);
  }
  return out;
}

export async function webhookDeliveries(
  c: RedisContext,
  endpoints: readonly string[],
  limit: number,
): Promise<Map<string, WebhookDelivery[]>> {
  const { log } = await readLog(c, endpoints, limit);
  return new Map(endpoints.map((e) => [e, Object.hasOwn(log, e) ? (log[e] ?? []) : []]));
}
