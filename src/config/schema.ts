/**
 * @module
 * The configuration's shape, as zod schemas: tenants with hashed API keys, scopes and manifests,
 * CORS, and the degradation controller. The published JSON schema
 * (`schema/tickwork.config.schema.json`) is generated from {@link configSchema}.
 */
import * as z from "zod";
import { GLOB_PATTERN } from "../core/glob.ts";
import type { Manifest, QuotaLimits } from "../core/manifest.ts";
import { MAX_TIMEOUT_MS, MIN_TIMEOUT_MS } from "../core/schemas.ts";
import { SCOPES } from "../core/scopes.ts";
import { webhookIssues, webhooksSchema } from "./webhooks.ts";

/** `sha256:` and the 64 lowercase hex digits of the key's SHA-256 (`npx tickwork hash-key`). */
export const KEY_HASH = /^sha256:[0-9a-f]{64}$/;

const count = z.number().int().min(1);

const handlerPatterns = z
  .array(
    z
      .string()
      .regex(GLOB_PATTERN, "a pattern may only contain A–Z a–z 0–9 _ . : - and *")
      .meta({ description: "`*` matches within one dot-separated segment, `**` across segments." }),
  )
  .max(100);

/** Limits of one kind of write, each a sliding window (checked inside the write itself). */
export const quotaLimitsSchema = z
  .object({
    perMinute: count.optional().meta({ description: "At most this many in any 60 s." }),
    perHour: count.optional().meta({ description: "At most this many in any hour." }),
    perDay: count.optional().meta({ description: "At most this many in any 24 h." }),
    windows: z
      .array(
        z
          .object({
            limit: count,
            windowMs: z
              .number()
              .int()
              .min(1_000)
              .max(31 * 24 * 60 * 60 * 1000),
          })
          .strict(),
      )
      .max(8)
      .optional()
      .meta({ description: "Further windows: at most `limit` in any `windowMs`." }),
  })
  .strict();

/**
 * What a tenant may do besides its scopes (docs/architecture.md, "Admission control"). Every field
 * is optional.
 */
export const manifestSchema = z
  .object({
    submit: handlerPatterns.optional().meta({
      description: 'Handlers the tenant may submit jobs for. Default ["**"] (every handler).',
    }),
    schedule: handlerPatterns.optional().meta({
      description: 'Handlers the tenant may schedule. Default ["**"] (every handler).',
    }),
    quotas: z
      .object({
        submit: quotaLimitsSchema.optional().meta({ description: "Job submits." }),
        schedule: quotaLimitsSchema.optional().meta({
          description: "Schedule writes (create, replace, patch).",
        }),
      })
      .strict()
      .optional(),
    maxTimeoutMs: z.number().int().min(MIN_TIMEOUT_MS).max(MAX_TIMEOUT_MS).optional().meta({
      description:
        "Largest handler timeout a job or schedule may ask for (a larger default is lowered to it); 1000–900000 ms.",
    }),
    minIntervalMs: count.optional().meta({
      description: "Smallest gap allowed between two occurrences of a schedule.",
    }),
    maxInputBytes: count.optional().meta({
      description: "Largest job or schedule input, as JSON in UTF-8 bytes.",
    }),
  })
  .strict();

/** One API key of a tenant: only its hash is stored. */
export const apiKeySchema = z
  .object({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/)
      .optional()
      .meta({ description: "A name for logs and rotation (never the key)." }),
    hash: z
      .string()
      .regex(KEY_HASH, 'must be "sha256:" and 64 lowercase hex digits (npx tickwork hash-key)'),
    scopes: z.array(z.enum(SCOPES)).min(1).meta({
      description:
        "read: GETs; jobs:write: submit and cancel; schedules:write: schedule changes; admin: all, plus dead letters.",
    }),
  })
  .strict();

/** A tenant: who owns jobs and schedules, authenticated by any of its keys. */
export const tenantSchema = z
  .object({
    id: z
      .string()
      .regex(
        /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/,
        "id must match [A-Za-z0-9_.-], 1–64 chars, and not start with . or -",
      ),
    keys: z.array(apiKeySchema).min(1).meta({
      description:
        "Its API keys, as SHA-256 hashes. Rotate by adding the new one, then removing the old.",
    }),
    manifest: manifestSchema.optional().meta({
      description: "Handlers it may use, quotas and limits. Absent: every handler, no quota.",
    }),
    webhooks: webhooksSchema.optional(),
  })
  .strict();

/** Cross-origin access from browsers; off unless configured. */
export const corsSchema = z
  .object({
    origins: z
      .array(
        z
          .string()
          .regex(/^(\*|https?:\/\/[^/\s?#]+)$/, 'an origin ("https://app.example.com") or "*"'),
      )
      .min(1),
    credentials: z.boolean().optional(),
    maxAgeSec: z.number().int().min(0).max(86_400).optional(),
  })
  .strict()
  .refine((c) => !(c.credentials && c.origins.includes("*")), {
    message: 'credentials cannot be used with origin "*"',
    path: ["credentials"],
  });

const thresholds = z
  .object({ normal: z.number().min(0), degraded: z.number().min(0), critical: z.number().min(0) })
  .strict()
  .refine((t) => t.normal <= t.degraded && t.degraded <= t.critical, {
    message: "must be normal ≤ degraded ≤ critical",
  });

/** The degradation controller's settings (`EngineOptions.degradation`); `false` turns it off. */
export const degradationSchema = z.union([
  z.literal(false),
  z
    .object({
      queueDepth: thresholds.optional(),
      lagMs: thresholds.optional(),
      failureRate: thresholds.optional(),
      cpu: thresholds.optional(),
      memory: thresholds.optional(),
      debounceMs: z.number().int().min(0).optional(),
      degradedDelayMs: z.number().int().min(0).optional(),
      critical: z.enum(["reject", "delay"]).optional(),
      criticalDelayMs: z.number().int().min(0).optional(),
      retryAfterMs: z.number().int().min(1).optional(),
    })
    .strict(),
]);

/** Ten years in ms: the longest a retention may be (far past any use; safe in Redis's arithmetic). */
const MAX_RETENTION_MS = 10 * 365 * 24 * 60 * 60 * 1000;
/** The most finished jobs or runs a cap may name. */
const MAX_RETENTION_COUNT = 1_000_000_000;

/** What the store keeps (`StoreRetention`); each left out keeps its default. */
export const retentionSchema = z
  .object({
    jobMs: z.number().int().min(1).max(MAX_RETENTION_MS).optional().meta({
      description: "How long a finished job record is kept, in ms. Default: 7 days.",
    }),
    idempotencyMs: z.number().int().min(1).max(MAX_RETENTION_MS).optional().meta({
      description: "How long an idempotency key replays its job, in ms. Default: 24 hours.",
    }),
    maxFinishedJobs: z.number().int().min(0).max(MAX_RETENTION_COUNT).optional().meta({
      description:
        "At most this many finished jobs are kept, deployment-wide (the oldest go first); 0: no cap. Default: 50000.",
    }),
    maxRunsPerSchedule: z.number().int().min(0).max(MAX_RETENTION_COUNT).optional().meta({
      description:
        "At most this many finished runs are kept per schedule; 0: no cap. Default: 100.",
    }),
  })
  .strict();

/** The whole configuration (`defineConfig`, or the JSON file named by `TICKWORK_CONFIG`). */
export const configSchema = z
  .object({
    $schema: z.string().optional(),
    tenants: z.array(tenantSchema).max(10_000).optional().meta({
      description: "Who may call the API. Each tenant sees only its own jobs and schedules.",
    }),
    cors: corsSchema.optional().meta({
      description: "Browsers on these origins may call the API. Absent: CORS is off.",
    }),
    degradation: degradationSchema.optional().meta({
      description: "The degradation controller (false turns it off). Absent: the defaults.",
    }),
    retention: retentionSchema.optional().meta({
      description:
        "What the store keeps: finished jobs, runs per schedule, idempotency keys. Absent: the defaults.",
    }),
    webhooks: webhooksSchema.optional().meta({
      description:
        "Inbound webhook endpoints of the tenant `default` (deployments without tenants); a tenant's own go in its `webhooks`.",
    }),
  })
  .strict()
  .superRefine((config, ctx) => {
    for (const issue of webhookIssues(config)) ctx.addIssue({ code: "custom", ...issue });
    const tenants = new Set<string>();
    const hashes = new Set<string>();
    config.tenants?.forEach((tenant, t) => {
      if (tenants.has(tenant.id)) {
        ctx.addIssue({
          code: "custom",
          message: `tenant id "${tenant.id}" is used twice`,
          path: ["tenants", t, "id"],
        });
      }
      tenants.add(tenant.id);
      const keyIds = new Set<string>();
      tenant.keys.forEach((key, k) => {
        if (hashes.has(key.hash)) {
          ctx.addIssue({
            code: "custom",
            message: "this key hash is listed twice: a key must belong to one tenant, once",
            path: ["tenants", t, "keys", k, "hash"],
          });
        }
        hashes.add(key.hash);
        if (key.id !== undefined) {
          if (keyIds.has(key.id)) {
            ctx.addIssue({
              code: "custom",
              message: `key id "${key.id}" is used twice in tenant "${tenant.id}"`,
              path: ["tenants", t, "keys", k, "id"],
            });
          }
          keyIds.add(key.id);
        }
      });
    });
  });

/**
 * True when `A` and `B` are the same type (not merely assignable either way: an optional field on
 * one side only, or a `readonly` one, makes them differ).
 */
type Same<A, B> =
  (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

/** Compiles only when `T` is `true`. */
type Assert<T extends true> = T;

// The domain's manifest types (src/core/manifest.ts) are what these schemas produce: a field added
// to one and not the other, or typed differently, fails to compile here.
type _SchemasMatchCore = Assert<
  | Same<z.infer<typeof quotaLimitsSchema>, QuotaLimits>
  | Same<z.infer<typeof manifestSchema>, Manifest>
>;

export type { Manifest, QuotaLimits };
export type ApiKeyConfig = z.infer<typeof apiKeySchema>;
export type TenantConfig = z.infer<typeof tenantSchema>;
export type CorsConfig = z.infer<typeof corsSchema>;
export type DegradationConfig = z.infer<typeof degradationSchema>;
export type RetentionConfig = z.infer<typeof retentionSchema>;
/** The configuration: tenants, CORS, degradation, retention, webhooks. */
export type Config = z.infer<typeof configSchema>;
