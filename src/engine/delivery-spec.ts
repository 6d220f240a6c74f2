/**
 * @module
 * The job spec a delivery carries (the outbox message's `job`, a Redis Streams entry's `j`), as
 * the runner reads it from the parsed body: {@link jobSpecSchema} says what is accepted, and
 * {@link readSpec} reads a well-formed spec without zod (`plainSpec`), leaving anything else to
 * the schema. A worker reads one per delivery, and zod's checks showed as about 5 % of a Redis
 * Streams worker's CPU in a profile of the benchmark's drain
 * (docs/adr/0042-delivery-spec-by-hand.md). `src/engine/delivery-spec.test.ts` holds the two
 * readers equal.
 */
import * as z from "zod";

/** The job spec carried by every delivery. */
export const jobSpecSchema = z.object({
  id: z.string().min(1).max(300),
  tenant: z.string(),
  handler: z.string(),
  input: z.unknown(),
  priority: z.number(),
  // Any number: a job stored before timeouts were bounded still runs (see `runnableTimeoutMs`).
  timeoutMs: z.number(),
  retries: z.number().int().min(0),
  tags: z.array(z.string()),
  runAt: z.number(),
  createdAt: z.number(),
  scheduleId: z.string().optional(),
  fireAt: z.number().optional(),
  overlap: z.enum(["allow", "skip"]).optional(),
  idempotencyKey: z.string().optional(),
  // Checked by `placementOf`: one this version does not understand is a refusal, not a bad body.
  placement: z.unknown().optional(),
  // Checked by `traceOfUnknown`: a malformed trace context is dropped, the job still runs.
  trace: z.unknown().optional(),
});

/** A delivery's spec as {@link jobSpecSchema} accepts it. */
export type DeliverySpec = z.infer<typeof jobSpecSchema>;

/** The spec in `raw` (a parsed body), or `undefined` when the schema refuses it. */
export function readSpec(raw: unknown): DeliverySpec | undefined {
  const plain = plainSpec(raw);
  if (plain !== undefined) return plain;
  const parsed = jobSpecSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

/**
 * `raw` as {@link jobSpecSchema} would answer it, checked by hand, when it is a plain object whose
 * every field the schema knows has the type the schema asks for; `undefined` otherwise (the schema
 * then decides: it may still accept what this leaves, never the other way round). Like the schema,
 * it keeps only the fields it knows.
 */
export function plainSpec(raw: unknown): DeliverySpec | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return undefined;
  const r = raw as Record<string, unknown>;
  const { id, tenant, handler, priority, timeoutMs, retries, tags, runAt, createdAt } = r;
  if (typeof id !== "string" || id.length < 1 || id.length > 300) return undefined;
  if (typeof tenant !== "string" || typeof handler !== "string") return undefined;
  if (!Object.hasOwn(r, "input")) return undefined;
  if (!finite(priority) || !finite(timeoutMs) || !finite(runAt) || !finite(createdAt)) {
    return undefined;
  }
  if (!Number.isSafeInteger(retries) || (retries as number) < 0) return undefined;
  if (!Array.isArray(tags)) return undefined;
  for (const tag of tags) if (typeof tag !== "string") return undefined;
  const spec: DeliverySpec = {
    id,
    tenant,
    handler,
    input: r.input,
    priority,
    timeoutMs,
    retries: retries as number,
    tags: tags as string[],
    runAt,
    createdAt,
  };
  const { scheduleId, fireAt, overlap, idempotencyKey, placement, trace } = r;
  if (scheduleId !== undefined) {
    if (typeof scheduleId !== "string") return undefined;
    spec.scheduleId = scheduleId;
  }
  if (fireAt !== undefined) {
    if (!finite(fireAt)) return undefined;
    spec.fireAt = fireAt;
  }
  if (overlap !== undefined) {
    if (overlap !== "allow" && overlap !== "skip") return undefined;
    spec.overlap = overlap;
  }
  if (idempotencyKey !== undefined) {
    if (typeof idempotencyKey !== "string") return undefined;
    spec.idempotencyKey = idempotencyKey;
  }
  if (placement !== undefined) spec.placement = placement;
  if (trace !== undefined) spec.trace = trace;
  return spec;
}

/** A number zod's `z.number()` accepts: finite (JSON's `1e400` parses to Infinity). */
function finite(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}
