/**
 * @module
 * `/v1/schedules`: create or replace, read, list, patch, pause, resume, delete, and the runs of one.
 * Reads need the `read` scope, every change `schedules:write`; a tenant's key sees only its own
 * schedules.
 */
import { Hono } from "hono";
import { NotFoundError } from "../../core/errors.ts";
import type { CreateScheduleInput, PatchScheduleInput } from "../../core/schemas.ts";
import { type Actor, sees } from "../../engine/broker.ts";
import { authorizeRequest } from "../middleware/auth.ts";
import { readJson } from "../middleware/body.ts";
import { setRateLimitHeaders, withRateLimitHeaders } from "../middleware/rate-limit.ts";
import { requireScope } from "../middleware/scope.ts";
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

  /** The schedule, if the actor sees it (another tenant's is a 404, like an unknown id). */
  async function existing(id: string, actor: Actor) {
    const schedule = await engine.store.getSchedule(id);
    if (!schedule || !sees(actor, schedule.tenant)) throw new NotFoundError("schedule", id);
    return schedule;
  }

  routes.get("/", requireScope("read"), async (c) => {
    const actor = c.get("actor");
    const page = await engine.store.listSchedules(parseQuery(c, listSchedulesQuery));
    // Without a per-tenant index the page is filtered: it may hold fewer items (a cursor remains).
    const items = page.items.filter((schedule) => sees(actor, schedule.tenant));
    return c.json(pageResource({ ...page, items }, scheduleResource));
  });

  routes.get("/:id", requireScope("read"), async (c) =>
    c.json(scheduleResource(await existing(c.req.param("id"), c.get("actor")))),
  );

  routes.get("/:id/runs", requireScope("read"), async (c) => {
    const id = c.req.param("id");
    const query = parseQuery(c, pageQuery);
    await existing(id, c.get("actor"));
    return c.json(pageResource(await engine.store.listRuns(id, query), jobResource));
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

    routes.patch("/:id", write, async (c) => {
      const body = await readJson(c, config.bodyLimitBytes);
      const schedule = await withRateLimitHeaders(c, () =>
        engine.broker.updateSchedule(c.req.param("id"), body as PatchScheduleInput, c.get("actor")),
      );
      return c.json(scheduleResource(schedule));
    });

    routes.post("/:id/pause", write, async (c) =>
      c.json(
        scheduleResource(await engine.broker.pauseSchedule(c.req.param("id"), c.get("actor"))),
      ),
    );

    routes.post("/:id/resume", write, async (c) =>
      c.json(
        scheduleResource(await engine.broker.resumeSchedule(c.req.param("id"), c.get("actor"))),
      ),
    );

    routes.delete("/:id", write, async (c) => {
      const id = c.req.param("id");
      await engine.broker.deleteSchedule(id, c.get("actor"));
      return c.json({ id, status: "deleted" as const });
    });
  }

  return routes;
}
