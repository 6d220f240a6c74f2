/**
 * @module
 * Inbound webhooks (docs/webhooks.md): `POST /v1/hooks/:name` takes a delivery signed by its
 * sender, verifies it (`src/core/webhooks/`) and submits it as a job of the endpoint's tenant,
 * keyed by the sender's event id so a redelivery replays the first job; `GET /v1/hooks` lists the
 * caller's tenant's endpoints with their last deliveries. The signature is the authentication:
 * no API key, and no CORS (`src/http/middleware/cors.ts` skips these paths).
 */

import type { Context } from "hono";
import { Hono } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { WebhookEndpoint } from "../../config/webhooks.ts";
import {
  InputTooLargeError,
  OverloadedError,
  QuotaExceededError,
  TickworkError,
} from "../../core/errors.ts";
import { verifyWebhook, type WebhookJobInput, webhookDedupeMs } from "../../core/webhooks/index.ts";
import type { WebhookEndpointList, WebhookEndpointResource } from "../../core/webhooks/wire.ts";
import type { Actor } from "../../engine/broker.ts";
import { traceVia } from "../../engine/tracing.ts";
import {
  UNKNOWN_WEBHOOK_ENDPOINT,
  WEBHOOK_HISTORY,
  type WebhookDelivery,
  type WebhookOutcome,
  webhookLogId,
} from "../../store/port.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readBytes } from "../middleware/body.ts";
import { setRateLimitHeaders, withRateLimitHeaders } from "../middleware/rate-limit.ts";
import { requireScope } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import {
  bodyInput,
  dedupesOnBody,
  headersInput,
  shownEventId,
  webhookBodyKey,
  webhookIdempotencyKey,
} from "../webhook-input.ts";

/**
 * `POST /v1/hooks/:name`, to mount at `/v1/hooks` when the roles write. No API key: each
 * endpoint's verifier authenticates its sender.
 *
 * @example
 * app.route("/v1/hooks", hookIngestRoutes(config));
 */
export function hookIngestRoutes(config: AppConfig): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  routes.post("/:name", async (c) => {
    const name = c.req.param("name");
    const endpoint = config.webhooks.get(name);
    if (!endpoint) {
      await count(c, config, UNKNOWN_WEBHOOK_ENDPOINT, "not_found");
      throw new TickworkError(404, "webhook_not_found", "no webhook endpoint of that name");
    }
    return await receive(c, config, endpoint);
  });
  return routes;
}

async function receive(
  c: Context<AppEnv>,
  config: AppConfig,
  endpoint: WebhookEndpoint,
): Promise<Response> {
  let body: Uint8Array;
  try {
    body = await readBytes(c, config.bodyLimitBytes);
  } catch (error) {
    if (error instanceof TickworkError && error.status === 413) {
      await count(c, config, webhookLogId(endpoint.tenant, endpoint.name), "too_large");
    }
    throw error;
  }
  const headers = c.req.raw.headers;
  const verified = await verifyWebhook(endpoint.verifier, { body, headers }, Date.now());
  if (!verified.ok) {
    await count(
      c,
      config,
      webhookLogId(endpoint.tenant, endpoint.name),
      verified.reason === "stale_timestamp" ? "stale" : "unauthorized",
    );
    throw new TickworkError(401, `webhook_${verified.reason}`, verified.detail);
  }
  const challenge = slackChallenge(endpoint, body);
  // Slack checks a new Events API URL with a signed `url_verification` request: it wants its
  // challenge back, not a job.
  if (challenge !== undefined) return c.json({ challenge }, 200);
  const idempotencyKey = await deliveryKey(endpoint, body, verified.eventId);
  const input: WebhookJobInput = {
    ...bodyInput(body, headers.get("content-type")),
    headers: headersInput(headers, endpoint.headers),
    event: {
      ...(verified.eventId !== undefined ? { id: verified.eventId } : {}),
      endpoint: endpoint.name,
      scheme: endpoint.verifier.scheme,
    },
  };
  const actor: Actor = {
    tenant: endpoint.tenant,
    scopes: ["jobs:write"],
    ...(endpoint.manifest ? { manifest: endpoint.manifest } : {}),
  };
  const shown = verified.eventId === undefined ? undefined : await shownEventId(verified.eventId);
  let submitted: Awaited<ReturnType<typeof config.engine.broker.submit>>;
  try {
    submitted = await withRateLimitHeaders(c, async () =>
      config.engine.broker.submit({ handler: endpoint.handler, input }, actor, {
        // Beside the body: no body may name a `hook:` key (src/core/schemas.ts).
        ...(idempotencyKey !== undefined
          ? { idempotencyKey, idempotencyMs: webhookDedupeMs(endpoint.verifier) }
          : {}),
        webhook: {
          endpoint: endpoint.name,
          // Kept under the tenant and the name: a name another tenant's endpoint takes later
          // starts with no history and no counts.
          log: webhookLogId(endpoint.tenant, endpoint.name),
          ...(shown !== undefined ? { eventId: shown } : {}),
        },
        ...traceVia(c.req.raw.headers),
      }),
    );
  } catch (error) {
    const outcome = refusalOutcome(error);
    if (outcome) await count(c, config, webhookLogId(endpoint.tenant, endpoint.name), outcome);
    throw error;
  }
  const { job, replayed, quota } = submitted;
  if (quota) setRateLimitHeaders(c, quota);
  if (replayed) c.header("Idempotent-Replayed", "true");
  c.header("Location", `${c.get("appPath")}/v1/jobs/${encodeURIComponent(job.id)}`);
  if (endpoint.status === 204) return c.body(null, 204);
  // A redelivery answers the job's id only: its status now would tell whoever resends a captured
  // delivery (a GitHub signature never expires) how the job ended.
  const answer = replayed ? { id: job.id } : { id: job.id, status: job.status };
  return c.json(answer, endpoint.status as ContentfulStatusCode);
}

/**
 * The challenge of Slack's `url_verification` request (`{"type":"url_verification","challenge":…}`),
 * which Slack sends, signed, when an app's Events API URL is set: answered with the challenge, it
 * stores nothing and counts nothing. Undefined for every other body or sender.
 */
function slackChallenge(endpoint: WebhookEndpoint, body: Uint8Array): string | undefined {
  if (endpoint.verifier.scheme !== "slack" || body[0] !== 0x7b) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(body));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { type, challenge } = value as { type?: unknown; challenge?: unknown };
  return type === "url_verification" && typeof challenge === "string" ? challenge : undefined;
}

/**
 * The job's idempotency key (docs/webhooks.md, "Idempotency and retry windows"): none with
 * `idempotencyKey: "none"`; the body's digest when the signature does not cover the sender's
 * id ({@link dedupesOnBody}); else the sender's event id, when it gave one.
 */
async function deliveryKey(
  endpoint: WebhookEndpoint,
  body: Uint8Array,
  eventId: string | undefined,
): Promise<string | undefined> {
  if (endpoint.idempotencyKey !== "event") return undefined;
  if (dedupesOnBody(endpoint.verifier)) return await webhookBodyKey(endpoint.name, body);
  return eventId === undefined ? undefined : await webhookIdempotencyKey(endpoint.name, eventId);
}

/** The outcome a refused submit counts as (none for a failure of ours, such as the store's). */
function refusalOutcome(error: unknown): WebhookOutcome | undefined {
  if (error instanceof QuotaExceededError || error instanceof OverloadedError) return "limited";
  if (error instanceof InputTooLargeError) return "too_large";
  if (error instanceof TickworkError && error.status < 500) return "invalid";
  return undefined;
}

/**
 * Count a request the store's submit did not count (it counts `accepted` and `replayed`). A store
 * without the webhook log, or one that fails now, leaves the answer as it is.
 */
async function count(
  c: Context<AppEnv>,
  config: AppConfig,
  endpoint: string,
  outcome: WebhookOutcome,
): Promise<void> {
  const store = config.engine.store;
  if (!store.countWebhook) return;
  try {
    await store.countWebhook(endpoint, outcome);
  } catch (error) {
    c.get("logger").warn("webhook counter not written", {
      endpoint,
      outcome,
      error: (error as Error).message,
    });
  }
}

/**
 * `GET /v1/hooks` (the `read` scope), to mount at `/v1/hooks` when the roles read: the actor's
 * tenant's endpoints with their last deliveries — one store round trip (the histories `submitJob`
 * keeps per endpoint). An actor without scopes (auth off) sees every endpoint.
 *
 * @example
 * app.route("/v1/hooks", hookListRoutes(config));
 */
export function hookListRoutes(config: AppConfig): Hono<AppEnv> {
  const routes = new Hono<AppEnv>();
  // Middleware on the route itself: `/v1/hooks/:name` deliveries carry no API key.
  routes.get("/", authorizeRequest(config.authorize), requireScope("read"), async (c) => {
    const actor = c.get("actor");
    const mine = [...config.webhooks.values()].filter(
      (e) => actor.scopes === undefined || e.tenant === (actor.tenant ?? "default"),
    );
    const store = config.engine.store;
    const history =
      store.webhookDeliveries && mine.length > 0
        ? await store.webhookDeliveries(
            mine.map((e) => webhookLogId(e.tenant, e.name)),
            WEBHOOK_HISTORY,
          )
        : new Map<string, WebhookDelivery[]>();
    const items: WebhookEndpointResource[] = mine.map((e) => ({
      name: e.name,
      scheme: e.verifier.scheme,
      handler: e.handler,
      deliveries: (history.get(webhookLogId(e.tenant, e.name)) ?? []).map((d) => ({
        at: new Date(d.at).toISOString(),
        ...(d.eventId !== undefined ? { eventId: d.eventId } : {}),
        outcome: d.outcome,
        jobId: d.jobId,
      })),
    }));
    c.header("Cache-Control", "no-store");
    return c.json({ items } satisfies WebhookEndpointList);
  });
  return routes;
}
