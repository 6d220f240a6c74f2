/**
 * Roles over a real socket: every route of the API, asked of an app serving each role (and some
 * mixes), is served exactly when its role is; the rest answer 404 (a path outside the roles) or
 * 405 (a method outside them, on a path they serve in part) as problem+json. Then a split
 * deployment: an `api` app and a `worker` app on one store, the job crossing between them.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createEngine, silentLogger } from "../../src/engine/index.ts";
import { createApp, type Role } from "../../src/http/index.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import { LocalTransport } from "../../src/transport/local/index.ts";
import {
  type Answer,
  call,
  expectProblem,
  type Harness,
  SIGNING_KEY,
  startHarness,
  testHandlers,
} from "./harness.ts";

type Group = "write" | "read" | "tick" | "worker" | "health";

/** Every route of the API and the group serving it. */
const ROUTES: [method: string, path: string, group: Group][] = [
  ["POST", "/v1/jobs", "write"],
  ["GET", "/v1/jobs", "read"],
  ["GET", "/v1/jobs/j_nope", "read"],
  ["DELETE", "/v1/jobs/j_nope", "write"],
  ["POST", "/v1/schedules", "write"],
  ["GET", "/v1/schedules", "read"],
  ["GET", "/v1/schedules/nope", "read"],
  ["PATCH", "/v1/schedules/nope", "write"],
  ["POST", "/v1/schedules/nope/pause", "write"],
  ["POST", "/v1/schedules/nope/resume", "write"],
  ["DELETE", "/v1/schedules/nope", "write"],
  ["GET", "/v1/schedules/nope/runs", "read"],
  ["GET", "/v1/tick", "tick"],
  ["POST", "/v1/tick", "tick"],
  ["POST", "/v1/worker", "worker"],
  ["POST", "/v1/dead", "worker"],
  ["GET", "/v1/dlq", "read"],
  ["POST", "/v1/dlq/j_nope/retry", "write"],
  ["DELETE", "/v1/dlq/j_nope", "write"],
  ["GET", "/health", "health"],
  ["GET", "/ready", "health"],
];

const SERVES: Record<Role, Group[]> = {
  all: ["write", "read", "tick", "worker"],
  api: ["write", "read"],
  tick: ["tick"],
  worker: ["worker"],
  observer: ["read"],
};

/** True when the answer is the app saying "no such route here", not a route's own answer. */
function isRouteMiss(answer: Answer): boolean {
  const type = String(answer.body?.type ?? "");
  return (
    (answer.status === 404 && String(answer.body?.detail ?? "").startsWith("no route for")) ||
    (answer.status === 405 && type.endsWith(":method_not_allowed"))
  );
}

describe("roles", () => {
  const open: Harness[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((h) => h.close()));
  });

  async function app(roles: Role[]): Promise<Harness> {
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: { roles },
    });
    open.push(h);
    return h;
  }

  const mixes: Role[][] = [
    ["all"],
    ["api"],
    ["tick"],
    ["worker"],
    ["observer"],
    ["api", "worker"],
    ["tick", "observer"],
  ];

  it.each(mixes.map((roles) => [roles.join(","), roles] as const))(
    "%s: serves exactly its routes; the others are 404/405 problems naming the roles",
    async (_name, roles) => {
      const h = await app(roles);
      const served = new Set<Group>(["health", ...roles.flatMap((role) => SERVES[role])]);
      for (const [method, path, group] of ROUTES) {
        const answer = await call(h.origin, method, path, {
          ...(method === "POST" || method === "PATCH" ? { json: {} } : {}),
        });
        const where = `${roles.join(",")}: ${method} ${path} → ${answer.status} ${JSON.stringify(answer.body)}`;
        expect(isRouteMiss(answer), where).toBe(!served.has(group));
        if (served.has(group)) continue;
        // Nothing under a path of another role leaks: the whole path is unknown (404), or the
        // path is served for other methods only (405 with what is allowed).
        const partly = ROUTES.some(([m, p, g]) => p === path && m !== method && served.has(g));
        expectProblem(answer, partly ? 405 : 404, /roles served: /);
        if (partly) expect(answer.headers.get("allow")).toBe("GET, HEAD");
      }
    },
  );

  it("observer: reads work, writes are refused and change nothing", async () => {
    const h = await app(["observer"]);
    await h.engine.broker.submit({ handler: "echo", input: 1 });
    const list = await call(h.origin, "GET", "/v1/jobs");
    expect(list.status).toBe(200);
    expect(list.body.items).toHaveLength(1);
    const id = list.body.items[0].id as string;
    expect((await call(h.origin, "GET", `/v1/jobs/${id}`)).status).toBe(200);
    expectProblem(await call(h.origin, "DELETE", `/v1/jobs/${id}`), 405);
    expectProblem(await call(h.origin, "POST", "/v1/jobs", { json: { handler: "echo" } }), 405);
    expect((await call(h.origin, "GET", "/v1/jobs")).body.items).toHaveLength(1);
  });

  it("the API routes of a role still need the API key; routes outside it stay 404 without one", async () => {
    const h = await startHarness({
      store: new MemoryStore(),
      handlers: testHandlers().handlers,
      app: {
        roles: ["tick"],
        dev: false,
        tickSecret: "cron-secret",
        authorize: () => {
          throw new Error("never asked: no API route is mounted");
        },
      },
    });
    open.push(h);
    expectProblem(await call(h.origin, "GET", "/v1/jobs"), 404);
    expectProblem(await call(h.origin, "GET", "/v1/tick"), 401);
    const tick = await call(h.origin, "GET", "/v1/tick", {
      headers: { authorization: "Bearer cron-secret" },
    });
    expect(tick.status).toBe(200);
    expect(tick.body).toMatchObject({ leader: true });
  });

  it("a split deployment: an api app and a worker app on one store run a job between them", async () => {
    const store = new MemoryStore();
    const { handlers } = testHandlers();
    const worker = await startHarness({ store, handlers, app: { roles: ["worker"] } });
    open.push(worker);
    const transport = new LocalTransport({
      workerUrl: `${worker.origin}/v1/worker`,
      failureCallbackUrl: `${worker.origin}/v1/dead`,
      signingKey: SIGNING_KEY,
      onError: () => {},
    });
    const api = await startHarness({ store, handlers, transport, app: { roles: ["api"] } });
    open.push(api);
    try {
      const submitted = await call(api.origin, "POST", "/v1/jobs", {
        json: { handler: "echo", input: { split: true } },
      });
      expect(submitted.status).toBe(202);
      const done = await call(api.origin, "GET", `/v1/jobs/${submitted.body.id}?wait=5s`);
      expect(done.body).toMatchObject({ status: "succeeded", result: { split: true } });
      // The api app has no worker route, the worker app no API.
      expectProblem(await call(api.origin, "POST", "/v1/worker", { json: {} }), 404);
      expectProblem(await call(worker.origin, "GET", `/v1/jobs/${submitted.body.id}`), 404);
    } finally {
      await transport.close();
    }
  });

  it("refuses no roles and unknown roles", () => {
    const engine = createEngine({
      store: new MemoryStore(),
      transport: { publish: async () => [], verify: async () => false },
      handlers: {},
      logger: silentLogger,
    });
    expect(() => createApp({ engine, roles: [] })).toThrow(RangeError);
    expect(() => createApp({ engine, roles: ["cron" as Role] })).toThrow(/unknown role "cron"/);
  });
});
