/**
 * @module
 * The handlers of the realtime routes, mounted by `routes/jobs.ts` and `routes/schedules.ts`
 * (read scope): the job or schedule is read first, as the actor may see it, so an unknown id,
 * another tenant's or a malformed `Last-Event-ID` answers a problem+json before any stream starts.
 */
import type { Context } from "hono";
import { scheduleStoreId } from "../../core/model.ts";
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
    );
  };
}

/** A stream that failed after its headers: logged; the client reconnects with its last id. */
function streamFailed(config: AppConfig, what: string, id: string, error: unknown): void {
  config.engine.options.logger.warn("stream ended by an error", {
    [what]: id,
    error: error instanceof Error ? error.message : String(error),
  });
}
