/**
 * @module
 * Inbound webhook endpoints in the configuration (docs/webhooks.md): each tenant (or, without
 * tenants, the top level, for the tenant `default`) names endpoints `POST /v1/hooks/:name` that
 * turn a signed delivery from Stripe, GitHub, Slack, Shopify, Standard Webhooks or any HMAC
 * sender into a job. The verifier's settings are `src/core/webhooks/`'s; this file adds the
 * endpoint around them, the bounds, and the cross-checks the whole configuration needs (names
 * unique across tenants, handlers inside the tenant's manifest).
 */
import * as z from "zod";
import { compileGlobs } from "../core/glob.ts";
import type { Manifest } from "../core/manifest.ts";
import { FORBIDDEN_KEYS, handlerName } from "../core/schemas.ts";
import { type WebhookVerifier, webhookVerifierSchema } from "../core/webhooks/index.ts";

/** Most endpoints one tenant may declare. */
export const MAX_WEBHOOK_ENDPOINTS = 100;
/** Most request headers an endpoint copies into the job's input. */
export const MAX_WEBHOOK_INPUT_HEADERS = 32;
/** An endpoint's name: the last segment of `/v1/hooks/:name`. */
export const WEBHOOK_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
/**
 * Names no endpoint may take: `_unknown` is the metrics label requests to unknown names are
 * counted under (`UNKNOWN_WEBHOOK_ENDPOINT`, src/store/port/webhooks.ts).
 */
export const RESERVED_WEBHOOK_NAMES: readonly string[] = ["_unknown"];

/**
 * True when `name` may name an endpoint: {@link WEBHOOK_NAME}, not only dots (`.` and `..` are
 * path segments a URL parser removes), not {@link RESERVED_WEBHOOK_NAMES}, and not a name every
 * object inherits (`__proto__`, `constructor`, `toString`, …), so no lookup can ever reach
 * `Object.prototype`.
 */
export function isWebhookName(name: string): boolean {
  return (
    WEBHOOK_NAME.test(name) &&
    !/^\.+$/.test(name) &&
    !RESERVED_WEBHOOK_NAMES.includes(name) &&
    name !== "prototype" &&
    !Object.hasOwn(Object.prototype, name) &&
    name !== "__proto__"
  );
}

const endpointName = z
  .string()
  .regex(WEBHOOK_NAME, "an endpoint name must match [A-Za-z0-9_.-], 1–64 chars")
  .refine(
    isWebhookName,
    "an endpoint name may not be only dots, _unknown (the metrics label of unknown names), nor a name objects inherit (__proto__, constructor, toString, …)",
  );

/** A header name (RFC 9110 token), lowercase, as `input.headers` lists it. */
const headerName = z
  .string()
  .regex(/^[a-z0-9!#$%&'*+.^_`|~-]{1,64}$/, "a header name in lowercase, 1–64 token characters")
  .refine(
    (name) => !FORBIDDEN_KEYS.includes(name),
    "a header name may not be __proto__, constructor or prototype (the input's headers are an object)",
  );

/** One endpoint: who signs, which handler runs, what the job's input holds. */
export const webhookEndpointSchema = z
  .object({
    verifier: webhookVerifierSchema.meta({
      description: "The sender's signature scheme and secrets (docs/webhooks.md, Verifiers).",
    }),
    handler: handlerName.meta({ description: "The handler each accepted delivery runs." }),
    input: z
      .object({
        headers: z.array(headerName).max(MAX_WEBHOOK_INPUT_HEADERS).optional().meta({
          description: "Request headers copied into the job's `input.headers` (lowercase names).",
        }),
      })
      .strict()
      .optional(),
    idempotencyKey: z.enum(["event", "none"]).optional().meta({
      description:
        '"event" (default): the sender\'s event id is the job\'s idempotency key, so a redelivery makes no second job; "none": every delivery is a job.',
    }),
    status: z
      .union([z.literal(200), z.literal(202), z.literal(204)])
      .optional()
      .meta({ description: "The status an accepted delivery answers. Default 202." }),
  })
  .strict();

/** A tenant's endpoints by name (at most {@link MAX_WEBHOOK_ENDPOINTS}). */
export const webhooksSchema = z
  .record(endpointName, webhookEndpointSchema)
  .refine((hooks) => Object.keys(hooks).length <= MAX_WEBHOOK_ENDPOINTS, {
    message: `at most ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints per tenant`,
  })
  .meta({ description: "Inbound webhook endpoints, POST /v1/hooks/<name> (docs/webhooks.md)." });

/** One configured endpoint. */
export type WebhookEndpointConfig = z.infer<typeof webhookEndpointSchema>;
/** Endpoints by name, as configured. */
export type WebhooksConfig = z.infer<typeof webhooksSchema>;

/** An endpoint resolved for serving: its name, its tenant and its settings. */
export interface WebhookEndpoint {
  name: string;
  tenant: string;
  verifier: WebhookVerifier;
  handler: string;
  /** Lowercase header names copied into `input.headers`. */
  headers: readonly string[];
  idempotencyKey: "event" | "none";
  status: 200 | 202 | 204;
  /** The tenant's manifest, applied to the endpoint's submits. */
  manifest?: Manifest | undefined;
}

/** Where endpoints come from: the tenants (each with its own), and the default tenant's. */
export interface WebhookSources {
  tenants?:
    | readonly {
        id: string;
        manifest?: Manifest | undefined;
        webhooks?: WebhooksConfig | undefined;
      }[]
    | undefined;
  /** The top-level endpoints: the default tenant's (deployments without tenants). */
  webhooks?: WebhooksConfig | undefined;
}

/** A configuration problem with the endpoints, with its path. */
export interface WebhookIssue {
  path: (string | number)[];
  message: string;
}

/**
 * Check what the schema of one tenant cannot: every name unique across tenants (the issue names
 * both), and every handler inside its tenant's `manifest.submit` patterns (refused here rather
 * than at request time, so a misconfigured endpoint never answers senders 403 for days).
 */
export function webhookIssues(sources: WebhookSources): WebhookIssue[] {
  const issues: WebhookIssue[] = [];
  const owners = new Map<string, string>();
  const visit = (
    tenant: string,
    hooks: WebhooksConfig | undefined,
    manifest: Manifest | undefined,
    path: (string | number)[],
  ) => {
    if (!hooks) return;
    const allowed = manifest?.submit ? compileGlobs(manifest.submit) : () => true;
    for (const [name, endpoint] of Object.entries(hooks)) {
      const owner = owners.get(name);
      if (owner !== undefined) {
        issues.push({
          path: [...path, name],
          message: `webhook endpoint "${name}" is declared by tenant "${owner}" and by tenant "${tenant}": names must be unique across tenants`,
        });
      } else owners.set(name, tenant);
      if (!allowed(endpoint.handler)) {
        issues.push({
          path: [...path, name, "handler"],
          message: `handler "${endpoint.handler}" is outside tenant "${tenant}"'s manifest.submit patterns`,
        });
      }
    }
  };
  sources.tenants?.forEach((t, i) => {
    visit(t.id, t.webhooks, t.manifest, ["tenants", i, "webhooks"]);
  });
  if (sources.webhooks) {
    const fallback = sources.tenants?.find((t) => t.id === "default");
    visit("default", sources.webhooks, fallback?.manifest, ["webhooks"]);
  }
  return issues;
}

/**
 * Endpoints whose handler `registered` does not know (the engine's handler map), each with its
 * path: such an endpoint would answer every delivery 422 (and its sender retry for days), so the
 * app refuses to start instead (`resolveAppOptions`, src/http/options.ts).
 */
export function unregisteredHandlerIssues(
  sources: WebhookSources,
  registered: (handler: string) => boolean,
): WebhookIssue[] {
  const issues: WebhookIssue[] = [];
  const visit = (hooks: WebhooksConfig | undefined, path: (string | number)[]) => {
    for (const [name, endpoint] of Object.entries(hooks ?? {})) {
      if (registered(endpoint.handler)) continue;
      issues.push({
        path: [...path, name, "handler"],
        message: `webhook endpoint "${name}" runs handler "${endpoint.handler}", which is not registered with the engine (every delivery would be refused 422)`,
      });
    }
  };
  sources.tenants?.forEach((t, i) => {
    visit(t.webhooks, ["tenants", i, "webhooks"]);
  });
  visit(sources.webhooks, ["webhooks"]);
  return issues;
}

/**
 * Endpoints named `__proto__` in parsed JSON (an own key there): zod's records drop that key
 * silently, so it is looked for in the raw value and refused by name instead of ignored.
 */
export function protoKeyIssues(value: unknown): WebhookIssue[] {
  const issues: WebhookIssue[] = [];
  const check = (hooks: unknown, path: (string | number)[]) => {
    if (hooks !== null && typeof hooks === "object" && Object.hasOwn(hooks, "__proto__")) {
      issues.push({
        path: [...path, "__proto__"],
        message: "an endpoint may not be named __proto__",
      });
    }
  };
  if (value === null || typeof value !== "object") return issues;
  const raw = value as { webhooks?: unknown; tenants?: unknown };
  check(raw.webhooks, ["webhooks"]);
  if (Array.isArray(raw.tenants)) {
    raw.tenants.forEach((t: unknown, i) => {
      if (t !== null && typeof t === "object") {
        check((t as { webhooks?: unknown }).webhooks, ["tenants", i, "webhooks"]);
      }
    });
  }
  return issues;
}

/**
 * The endpoints to serve, by name, in a `Map` (a name is never looked up on an object). The
 * sources must have passed {@link webhookIssues}; a later duplicate is ignored.
 *
 * @example
 * const endpoints = resolveWebhooks({ webhooks: { stripe: { verifier, handler: "stripe.event" } } });
 * endpoints.get("stripe")?.tenant; // "default"
 */
export function resolveWebhooks(sources: WebhookSources): Map<string, WebhookEndpoint> {
  const out = new Map<string, WebhookEndpoint>();
  const add = (tenant: string, hooks: WebhooksConfig | undefined, manifest?: Manifest) => {
    if (!hooks) return;
    for (const [name, e] of Object.entries(hooks)) {
      if (out.has(name) || !isWebhookName(name)) continue;
      out.set(name, {
        name,
        tenant,
        verifier: e.verifier,
        handler: e.handler,
        headers: [...new Set(e.input?.headers ?? [])],
        idempotencyKey: e.idempotencyKey ?? "event",
        status: e.status ?? 202,
        ...(manifest ? { manifest } : {}),
      });
    }
  };
  for (const t of sources.tenants ?? []) add(t.id, t.webhooks, t.manifest);
  const fallback = sources.tenants?.find((t) => t.id === "default");
  add("default", sources.webhooks, fallback?.manifest);
  return out;
}
