/**
 * @module
 * The handlers of the realtime routes, mounted by `routes/jobs.ts` and `routes/schedules.ts`
 * (read scope): the job or schedule is read first, as the actor may see it, so an unknown id,
 * another tenant's or a malformed `Last-Event-ID` answers a problem+json before any stream starts,
 * and so does a caller that holds `stream.maxPerKey` streams open already (429).
 */
import type { Context } from "hono";
import { scheduleStoreId } from "../../core/model.ts";
import type { Actor } from "../../engine/actor.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { jobPathId, schedulePathId } from "../path-ids.ts";
import { runJobStream } from "./job-stream.ts";
import { runScheduleStream, startNow } from "./schedule-stream.ts";
import { parseLastEventId, sseResponse } from "./sse.ts";

/** `GET /v1/jobs/:id/stream`. */
export function jobStreamHandler(config: AppConfig) {
  const { engine } = config;
  return async (c: Context<AppEnv>): Promise<Response> => {
    const id = jobPathId(c.req.param("id"));
    const resume = parseLastEventId(c.req.header("last-event-id"));
    const actor = c.get("actor");
    const job = await engine.broker.getJob(id, actor);
    return sseResponse(
      c.req.raw,
      config.stream.retryMs,
      (out, signal) =>
        runJobStream({ engine, config: config.stream, actor, id, job, resume, out, signal }),
      (error) => streamFailed(config, "job", id, error),
      slotFor(c, config, actor),
    );
  };
}

/** `GET /v1/schedules/:id/stream`. */
export function scheduleStreamHandler(config: AppConfig) {
  const { engine } = config;
  return async (c: Context<AppEnv>): Promise<Response> => {
    const userId = schedulePathId(c.req.param("id"));
    const resume = parseLastEventId(c.req.header("last-event-id"));
    const actor = c.get("actor");
    const schedule = await engine.broker.getSchedule(userId, actor);
    // Fixed before the answer: a client that has the headers misses no run after them.
    const start = resume ?? startNow(await engine.store.now());
    return sseResponse(
      c.req.raw,
      config.stream.retryMs,
      (out, signal) =>
        runScheduleStream({
          engine,
          config: config.stream,
          actor,
          scheduleId: scheduleStoreId(schedule.tenant, userId),
          tenant: schedule.tenant,
          start,
          out,
          signal,
        }),
      (error) => streamFailed(config, "schedule", userId, error),
      slotFor(c, config, actor),
    );
  };
}

/**
 * The slot a stream holds against `stream.maxPerKey` (429 when there is none), given back when
 * it ends: counted per key id within its tenant (ids are unique only within one: two tenants'
 * `ci` keys are two keys), else (a key without an id, a custom `authorize`, no keys) per tenant.
 * A tenant id has no `:`, so no two pairs make one name. A `HEAD` starts no stream and holds none.
 */
function slotFor(c: Context<AppEnv>, config: AppConfig, actor: Actor): (() => void) | undefined {
  if (c.req.method === "HEAD") return undefined;
  const tenant = actor.tenant ?? "default";
  const key = actor.keyId !== undefined ? `key:${tenant}:${actor.keyId}` : `tenant:${tenant}`;
  return config.streamSlots.take(key);
}

/** A stream that failed after its headers: logged; the client reconnects with its last id. */
function streamFailed(config: AppConfig, what: string, id: string, error: unknown): void {
  config.engine.options.logger.warn("stream ended by an error", {
    [what]: id,
    error: error instanceof Error ? error.message : String(error),
  });
}
