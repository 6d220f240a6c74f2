/**
 * @module
 * CORS, off unless configured: browsers on the listed origins may call the API (with
 * `Authorization` or `X-Api-Key`) and read the headers clients need (`Location`, `Retry-After`,
 * `RateLimit-*`, `Idempotent-Replayed`, `x-request-id`). Preflight requests are answered here.
 * Inbound webhook deliveries (`/v1/hooks/<name>`) get no CORS headers at all.
 */
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { CorsConfig } from "../../config/schema.ts";
import type { AppEnv } from "../options.ts";

/** Response headers a browser script may read. */
const EXPOSED = [
  "Location",
  "Retry-After",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
  "RateLimit-Policy",
  "Idempotent-Replayed",
  "x-request-id",
];

/**
 * The CORS middleware for `config`.
 *
 * @example
 * root.use(corsMiddleware({ origins: ["https://app.example.com"] }));
 */
export function corsMiddleware(config: CorsConfig): MiddlewareHandler<AppEnv> {
  const any = config.origins.includes("*");
  const handler = cors({
    origin: any ? "*" : [...config.origins],
    allowMethods: ["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
    // Last-Event-ID: a browser resuming a realtime stream (`job.updates()`) sends it;
    // traceparent, tracestate: a browser's OpenTelemetry propagating its trace to a submit.
    allowHeaders: [
      "Authorization",
      "X-Api-Key",
      "Content-Type",
      "x-request-id",
      "Last-Event-ID",
      "traceparent",
      "tracestate",
    ],
    exposeHeaders: EXPOSED,
    maxAge: config.maxAgeSec ?? 600,
    credentials: config.credentials ?? false,
  });
  // Inbound webhook deliveries come from servers, never browsers (docs/webhooks.md): no CORS.
  return function corsUnlessWebhook(c, next) {
    return WEBHOOK_DELIVERY.test(c.req.path) ? next() : handler(c, next);
  };
}

/** `…/v1/hooks/<name>`: where senders deliver. */
const WEBHOOK_DELIVERY = /\/v1\/hooks\/[^/]+\/?$/;
