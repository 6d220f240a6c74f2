/**
 * @module
 * `/metrics` (Prometheus text), `/v1/stats` (the same as JSON), `/v1/events` (the lifecycle
 * event log) and `/dashboard` (one static page that reads those and the listings). Each data
 * route is one store round trip (`/metrics` and `/v1/stats` also read the transport's queue, when
 * it reports one, at the same time, and `/metrics` the node registry, `routes/nodes.ts`); all of
 * them need the `read` scope when keys carry scopes.
 * Metrics and stats are the deployment's (every tenant's); a tenant's key sees the events of its
 * own jobs, plus those of the deployment (leader and degradation changes) — also with `jobId`: the
 * events of another tenant's job are filtered out like any other of its events.
 */
import { Hono } from "hono";
import * as z from "zod";
import { parseInstant } from "../../core/instant.ts";
import { scheduleUserId } from "../../core/model.ts";
import { isJobId, wellFormed } from "../../core/schemas.ts";
import { scopedTenant } from "../../engine/actor.ts";
import { sees } from "../../engine/broker.ts";
import { EVENT_SEQ_MAX } from "../../store/port/event-wait.ts";
import { UNKNOWN_WEBHOOK_ENDPOINT, webhookLogId } from "../../store/port/webhooks.ts";
import type {
  DegradationState,
  EventType,
  Histogram,
  StoreStats,
  TickEvent,
} from "../../store/port.ts";
import type { QueueStats } from "../../transport/port.ts";
import { dashboardPage } from "../dashboard/page.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { requireScope } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import {
  PROMETHEUS_TEXT,
  renderNodeMetrics,
  renderPrometheus,
  renderWebhookMetrics,
} from "../prometheus.ts";
import { parseQuery } from "../query.ts";
import { nodeCounts } from "./nodes.ts";

/** Every event type, as `?type=` accepts them. */
export const EVENT_TYPES = [
  "job.created",
  "job.dispatched",
  "job.started",
  "job.succeeded",
  "job.failed",
  "job.retried",
  "job.dead",
  "job.cancelled",
  "job.skipped",
  "leader.changed",
  "degradation.changed",
] as const satisfies readonly EventType[];
// Fails to compile when EventType gains a member this list lacks.
const _allEventTypes: Exclude<EventType, (typeof EVENT_TYPES)[number]> extends never
  ? true
  : never = true;
void _allEventTypes;

/** Events per page when `limit` is not given, and the most one page holds. */
export const EVENTS_DEFAULT_LIMIT = 100;
export const EVENTS_MAX_LIMIT = 1_000;

/** Longest `jobId` the events query takes (an occurrence's id: tenant, schedule id, fire time). */
const MAX_JOB_ID_CHARS = 256;

/**
 * `GET /v1/events?since=&type=&jobId=&limit=`: `since` is an event id (`<ms>-<seq>`, events after
 * it) or a time (ISO-8601 or epoch ms, events at or after it); `type` a comma list of event types;
 * `jobId` one job's id (its events only).
 */
export const eventsQuery = z.object({
  since: z
    .string()
    .max(64)
    .transform((value, ctx) => {
      if (/^\d{1,16}-\d{1,16}$/.test(value)) return value;
      const ms = /^\d{1,16}$/.test(value) ? Number(value) : parseInstant(value);
      // Epoch ms past JavaScript's dates (8.64e15) is no time either, as in ISO form.
      if (Number.isNaN(ms) || ms > 8.64e15) {
        ctx.addIssue({
          code: "custom",
          message: `not an event id or a time: ${JSON.stringify(value)} (e.g. "1700000000000-0" or "2026-01-01T00:00:00Z")`,
        });
        return z.NEVER;
      }
      // The ids of events at or after `ms` are those above the last id of the millisecond before.
      return ms > 0 ? `${ms - 1}-${EVENT_SEQ_MAX}` : undefined;
    })
    .optional(),
  type: z
    .string()
    .max(1_000)
    .transform((value, ctx) => {
      const types = [...new Set(value.split(",").map((t) => t.trim()))].filter(Boolean);
      const unknown = types.filter((t) => !(EVENT_TYPES as readonly string[]).includes(t));
      if (types.length === 0 || unknown.length > 0) {
        ctx.addIssue({
          code: "custom",
          message: `unknown event type${unknown.length === 1 ? "" : "s"} ${unknown.map((t) => JSON.stringify(t)).join(", ") || '""'}; one of ${EVENT_TYPES.join(", ")}`,
        });
        return z.NEVER;
      }
      return types as EventType[];
    })
    .optional(),
  /** One job's events: its id as `GET /v1/jobs/:id` shows it (checked like a path's job id). */
  jobId: wellFormed(z.string().max(MAX_JOB_ID_CHARS))
    .refine(isJobId, "not a job id (j_… or <scheduleId>@<fireAtMs>)")
    .optional(),
  limit: z
    .string()
    .regex(/^\d{1,6}$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(1).max(EVENTS_MAX_LIMIT))
    .default(EVENTS_DEFAULT_LIMIT),
});

/**
 * The observability routes, to mount at the base path when the roles read.
 *
 * @example
 * app.route("/", observabilityRoutes(config));
 * // GET /metrics → tickwork_jobs_succeeded_total 42 …
 */
export function observabilityRoutes(config: AppConfig): Hono<AppEnv> {
  const { engine } = config;
  const routes = new Hono<AppEnv>();
  const guard = [authorizeRequest(config.authorize), requireScope("read")] as const;

  routes.get("/metrics", ...guard, async (c) => {
    const [stats, queue, nodes, counts] = await Promise.all([
      engine.stats(),
      engine.queueStats(),
      nodeCounts(config),
      engine.store.webhookCounts?.(),
    ]);
    // The deployment's figures are everyone's; webhook endpoints are a tenant's own: a tenant's
    // key sees its endpoints' counts only, as `GET /v1/hooks` lists only its endpoints (and the
    // requests to no endpoint, `_unknown`, which are no tenant's).
    // Counts are kept under each endpoint's tenant and name (webhookLogId): shown under the names
    // of the endpoints configured now, so a name that passed to another tenant shows its own.
    const actor = c.get("actor");
    const endpoints = [...config.webhooks.values()]
      .filter((e) => sees(actor, e.tenant))
      .map((e) => e.name);
    let hooks: typeof counts;
    if (counts) {
      hooks = new Map();
      const unknown = counts.get(UNKNOWN_WEBHOOK_ENDPOINT);
      if (unknown) hooks.set(UNKNOWN_WEBHOOK_ENDPOINT, unknown);
      for (const e of config.webhooks.values()) {
        const mine = counts.get(webhookLogId(e.tenant, e.name));
        if (mine && sees(actor, e.tenant)) hooks.set(e.name, mine);
      }
    }
    const text =
      renderPrometheus(stats, queue) +
      (nodes ? renderNodeMetrics(nodes) : "") +
      (hooks && (hooks.size > 0 || endpoints.length > 0)
        ? renderWebhookMetrics(hooks, endpoints)
        : "");
    return c.body(text, 200, { "Content-Type": PROMETHEUS_TEXT, "Cache-Control": "no-store" });
  });

  routes.get("/v1/stats", ...guard, async (c) => {
    const [stats, queue] = await Promise.all([engine.stats(), engine.queueStats()]);
    c.header("Cache-Control", "no-store");
    return c.json(statsResource(stats, engine.options.instanceId, queue));
  });

  routes.get("/v1/events", ...guard, async (c) => {
    const query = parseQuery(c, eventsQuery);
    const actor = c.get("actor");
    const tenant = scopedTenant(actor);
    const page = await engine.store.events({
      ...(query.since !== undefined ? { after: query.since } : {}),
      ...(query.type !== undefined ? { types: query.type } : {}),
      ...(query.jobId !== undefined ? { jobId: query.jobId } : {}),
      // A tenant's key sees its own jobs' events and the deployment's (leader, degradation),
      // filtered while the store scans: another tenant's event never ends a page, and `last` and
      // `more` tell nothing of it (`EventsPage.examined`, which is not sent; the filter below is
      // a second line).
      ...(tenant !== undefined ? { tenant } : {}),
      limit: query.limit,
    });
    const events = page.events.filter((e) => e.tenant === undefined || sees(actor, e.tenant));
    c.header("Cache-Control", "no-store");
    return c.json({
      items: events.map(eventResource),
      ...(page.last !== undefined ? { last: page.last } : {}),
      // The scan stopped before the end of the log (at `limit`, or its bound of events examined).
      ...(page.more ? { more: true } : {}),
    });
  });

  // The page holds no data: it may be fetched without a key and asks for one on a 401.
  routes.get("/dashboard", async (c) => {
    const page = await dashboardPage();
    return c.html(page.html, 200, {
      "Content-Security-Policy": page.contentSecurityPolicy,
      "Cache-Control": "no-store",
      "X-Content-Type-Options": "nosniff",
      "Referrer-Policy": "no-referrer",
      // Also for browsers without CSP's `frame-ancestors`: the page holds an API key.
      "X-Frame-Options": "DENY",
    });
  });

  return routes;
}

/** `/v1/stats`: the store's stats with times as ISO-8601 (`null` for never) and durations in ms. */
export interface StatsResource {
  now: string;
  /** The instance that answered (`EngineOptions.instanceId`). */
  instance: string;
  jobs: StoreStats["jobs"];
  totals: StoreStats["totals"];
  outbox: number;
  backlog: number;
  histograms: {
    dispatchLagMs: Histogram;
    handlerDurationMs: Histogram;
    tickDurationMs: Histogram;
    leaseAcquisitionMs: Histogram;
  };
  averages: StoreStats["averages"];
  leader: Omit<StoreStats["leader"], "acquiredAt"> & { acquiredAt: string | null };
  degradation: Omit<DegradationState, "since" | "pending"> & {
    since: string | null;
    pending?: { level: DegradationState["level"]; since: string };
  };
  /**
   * The transport's queue (`engine.queueStats()`), only when the transport reports one (Redis
   * Streams); `oldestPendingMs` in ms like the other durations.
   */
  queue?: QueueStats;
}

/** Stats as `/v1/stats` answers them (with `queue` when the transport reported one). */
export function statsResource(
  stats: StoreStats,
  instance: string,
  queue?: QueueStats,
): StatsResource {
  const { degradation, leader } = stats;
  return {
    now: iso(stats.now),
    instance,
    jobs: stats.jobs,
    totals: stats.totals,
    outbox: stats.outbox,
    backlog: stats.backlog,
    histograms: {
      dispatchLagMs: stats.dispatchLagMs,
      handlerDurationMs: stats.handlerDurationMs,
      tickDurationMs: stats.tickDurationMs,
      leaseAcquisitionMs: stats.leaseAcquisitionMs,
    },
    averages: stats.averages,
    leader: { ...leader, acquiredAt: leader.acquiredAt > 0 ? iso(leader.acquiredAt) : null },
    degradation: {
      level: degradation.level,
      since: degradation.since > 0 ? iso(degradation.since) : null,
      ...(degradation.pending
        ? { pending: { level: degradation.pending.level, since: iso(degradation.pending.since) } }
        : {}),
      signals: degradation.signals,
    },
    ...(queue ? { queue: queueResource(queue) } : {}),
  };
}

/** The queue's figures, exactly the fields of `QueueStats` (nothing else a transport adds). */
function queueResource(queue: QueueStats): QueueStats {
  const { kind, length, pending, oldestPendingMs, delayed, consumers, claimed } = queue;
  return { kind, length, pending, oldestPendingMs, delayed, consumers, claimed };
}

/** An event as `/v1/events` lists it: `at` as ISO-8601. */
export type EventResource = Omit<TickEvent, "at"> & { at: string };

/** An event as the API shows it (a schedule named by its tenant's own id). */
export function eventResource(event: TickEvent): EventResource {
  const { scheduleId, tenant } = event;
  return {
    ...event,
    at: iso(event.at),
    ...(scheduleId !== undefined && tenant !== undefined
      ? { scheduleId: scheduleUserId(tenant, scheduleId) }
      : {}),
  };
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
