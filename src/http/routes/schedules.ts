/**
 * @module
 * `/v1/schedules`: create or replace, read, list, patch, pause, resume, delete, and the runs of one.
 */
import { Hono } from "hono";
import { NotFoundError } from "../../core/errors.ts";
import type { CreateScheduleInput, PatchScheduleInput } from "../../core/schemas.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readJson } from "../middleware/body.ts";
import type { AppConfig, AppEnv } from "../options.ts";
import { listSchedulesQuery, pageQuery, parseQuery } from "../query.ts";
import { jobResource, pageResource, scheduleResource } from "../serialize.ts";

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

  async function existing(id: string) {
    const schedule = await engine.store.getSchedule(id);
    if (!schedule) throw new NotFoundError("schedule", id);
    return schedule;
  }

  routes.get("/", async (c) => {
    const page = await engine.store.listSchedules(parseQuery(c, listSchedulesQuery));
    return c.json(pageResource(page, scheduleResource));
  });

  routes.get("/:id", async (c) => c.json(scheduleResource(await existing(c.req.param("id")))));

  routes.get("/:id/runs", async (c) => {
    const id = c.req.param("id");
    const query = parseQuery(c, pageQuery);
    await existing(id);
    return c.json(pageResource(await engine.store.listRuns(id, query), jobResource));
  });

  if (config.serves.write) {
    routes.post("/", async (c) => {
      const body = await readJson(c, config.bodyLimitBytes);
      const { schedule, created } = await engine.broker.createSchedule(
        body as CreateScheduleInput,
        c.get("actor"),
      );
      if (created) {
        c.header(
          "Location",
          `${config.pathPrefix}/v1/schedules/${encodeURIComponent(schedule.id)}`,
        );
      }
      return c.json(scheduleResource(schedule), created ? 201 : 200);
    });

    routes.patch("/:id", async (c) => {
      const body = await readJson(c, config.bodyLimitBytes);
      const schedule = await engine.broker.updateSchedule(
        c.req.param("id"),
        body as PatchScheduleInput,
      );
      return c.json(scheduleResource(schedule));
    });

    routes.post("/:id/pause", async (c) =>
      c.json(scheduleResource(await engine.broker.pauseSchedule(c.req.param("id")))),
    );

    routes.post("/:id/resume", async (c) =>
      c.json(scheduleResource(await engine.broker.resumeSchedule(c.req.param("id")))),
    );

    routes.delete("/:id", async (c) => {
      const id = c.req.param("id");
      await engine.broker.deleteSchedule(id);
      return c.json({ id, status: "deleted" as const });
    });
  }

  return routes;
}
