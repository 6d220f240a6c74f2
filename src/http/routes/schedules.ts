/**
 * @module
 * `/v1/schedules`: create or replace, read, list, patch, pause, resume, delete, and the runs of one.
 * Reads need the `read` scope, every change `schedules:write`; a tenant's key sees only its own
 * schedules.
 */
import { type Context, Hono } from "hono";
import type { ScheduleRecord } from "../../core/model.ts";
import type { CreateScheduleInput, PatchScheduleInput } from "../../core/schemas.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readJson } from "../middleware/body.ts";
import { setRateLimitHeaders, withRateLimitHeaders } from "../middleware/rate-limit.ts";
import { forWriter, requireScope } from "../middleware/scope.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { schedulePathId } from "../path-ids.ts";
import { listSchedulesQuery, pageQuery, parseQuery } from "../query.ts";
import { jobResource, pageResource, scheduleResource } from "../serialize.ts";
import { scheduleStreamHandler } from "../stream/routes.ts";

/**
 * The schedule routes, to mount at `/v1/schedules` when the roles read: the reads, and create,
 * patch, pause, resume and delete when they also write (`config.serves.write`).
 *
 * @example
 * app.route("/v1/schedules", scheduleRoutes(config));
 */
export function scheduleRoutes(config: AppConfig): Hono<AppEnv> {
  const { engine } = config;
  const routes = new Hono<AppEnv>();
  routes.use(authorizeRequest(config.authorize));

  // Reads go through the broker, which reads the actor's own tenant only.
  routes.get("/", requireScope("read"), async (c) => {
    const page = await engine.broker.listSchedules(
      parseQuery(c, listSchedulesQuery),
      c.get("actor"),
    );
    return c.json(pageResource(page, scheduleResource));
  });

  routes.get("/:id", requireScope("read"), async (c) =>
    c.json(
      scheduleResource(
        await engine.broker.getSchedule(schedulePathId(c.req.param("id")), c.get("actor")),
      ),
    ),
  );

  // Server-Sent Events: its runs' status changes (src/http/stream/).
  routes.get("/:id/stream", requireScope("read"), scheduleStreamHandler(config));

  routes.get("/:id/runs", requireScope("read"), async (c) => {
    const query = parseQuery(c, pageQuery);
    const page = await engine.broker.listRuns(
      schedulePathId(c.req.param("id")),
      query,
      c.get("actor"),
    );
    return c.json(pageResource(page, jobResource));
  });

  if (config.serves.write) {
    const write = requireScope("schedules:write");

    routes.post("/", write, async (c) => {
      const body = await readJson(c, config.bodyLimitBytes);
      const { schedule, created, quota } = await withRateLimitHeaders(c, () =>
        engine.broker.createSchedule(body as CreateScheduleInput, c.get("actor")),
      );
      if (quota) setRateLimitHeaders(c, quota);
      if (created) {
        c.header("Location", `${c.get("appPath")}/v1/schedules/${encodeURIComponent(schedule.id)}`);
      }
      return c.json(scheduleResource(schedule), created ? 201 : 200);
    });

    /** A write's answer: the schedule it left (without its input for a key that may not read). */
    const written = (c: Context<AppEnv>, schedule: ScheduleRecord) =>
      c.json(forWriter(c.get("actor"), scheduleResource(schedule)));

    routes.patch("/:id", write, async (c) => {
      const body = await readJson(c, config.bodyLimitBytes);
      const { schedule, quota } = await withRateLimitHeaders(c, () =>
        engine.broker.patchSchedule(
          schedulePathId(c.req.param("id")),
          body as PatchScheduleInput,
          c.get("actor"),
        ),
      );
      if (quota) setRateLimitHeaders(c, quota);
      return written(c, schedule);
    });

    routes.post("/:id/pause", write, async (c) =>
      written(
        c,
        await engine.broker.pauseSchedule(schedulePathId(c.req.param("id")), c.get("actor")),
      ),
    );

    routes.post("/:id/resume", write, async (c) =>
      written(
        c,
        await engine.broker.resumeSchedule(schedulePathId(c.req.param("id")), c.get("actor")),
      ),
    );

    routes.delete("/:id", write, async (c) => {
      const id = c.req.param("id");
      await engine.broker.deleteSchedule(schedulePathId(id), c.get("actor"));
      return c.json({ id, status: "deleted" as const });
    });
  }

  return routes;
}
