/**
 * Finding 5 of the input-bounds review (see `bounds.test.ts`): a path id that create would refuse
 * answers 404 without a store call, on the memory store and on Redis; and a schedule's running key
 * is never readable through the API.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.ts";
import { expectProblem, type Harness } from "../http/harness.ts";
import { makeRedisStore, type StoreHandle, storeFactories } from "../support/stores.ts";
import { bearer, call, securedApp, type TestTenant, tenant } from "./support.ts";

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "5. path ids on $name",
  (factory) => {
    let handle: StoreHandle;
    let h: Harness;
    let acme: TestTenant;
    const calls: string[] = [];

    beforeEach(async () => {
      handle = await factory.make();
      acme = await tenant("acme", { admin: ["admin"] });
      h = await securedApp(counting(handle.store, calls), [acme]);
    });

    afterEach(async () => {
      await h.close();
      await handle.cleanup();
    });

    it("an id create would refuse answers 404 without a store call", async () => {
      const as = bearer(acme.keys.admin!);
      const scheduleIds = ["s1:running", "a@1", "{tw}:s:x", "..", "x".repeat(129), "%ED%A0%80"];
      const jobIds = [
        "x:running",
        "constructor",
        "{tw}:s:x",
        "..",
        "%2e%2e",
        "a:b:c@1",
        "s1@x",
        "j_short",
        `j_${"a".repeat(300)}`,
        "%ED%A0%80",
      ];
      const requests: [string, string][] = [];
      for (const id of scheduleIds) {
        const path = `/v1/schedules/${id}`;
        requests.push(
          ["GET", path],
          ["GET", `${path}/runs`],
          ["GET", `${path}/stream`],
          ["PATCH", path],
          ["DELETE", path],
          ["POST", `${path}/pause`],
          ["POST", `${path}/resume`],
        );
      }
      for (const id of jobIds) {
        requests.push(
          ["GET", `/v1/jobs/${id}`],
          ["GET", `/v1/jobs/${id}/stream`],
          ["DELETE", `/v1/jobs/${id}`],
          ["POST", `/v1/dlq/${id}/retry`],
          ["DELETE", `/v1/dlq/${id}`],
        );
      }
      for (const [method, path] of requests) {
        calls.length = 0;
        const answer = await call(h.origin, method, path, {
          headers: as,
          ...(method === "PATCH" ? { json: { priority: 3 } } : {}),
        });
        expectProblem(answer, 404);
        expect(answer.body.type).toBe("urn:tickwork:problem:not_found");
        expect(calls, `${method} ${path}`).toEqual([]);
      }
      // Ids of the right shape are looked up (and unknown: the same 404).
      for (const path of [
        "/v1/jobs/j_0000000000000000000zz",
        "/v1/jobs/s1@1700000000000",
        "/v1/jobs/acme:s1@1700000000000",
        "/v1/schedules/s1",
      ]) {
        calls.length = 0;
        expectProblem(await call(h.origin, "GET", path, { headers: as }), 404);
        expect(calls.length, path).toBeGreaterThan(0);
      }
    });
  },
);

describe("5. a schedule's running key is not readable through the API (Redis)", () => {
  it("answers 404, not a WRONGTYPE 500, while the schedule runs", async () => {
    const handle = await makeRedisStore();
    const acme = await tenant("acme", { admin: ["admin"] });
    const other = await tenant("default", { admin: ["admin"] });
    const h = await securedApp(handle.store, [acme, other]);
    try {
      const created = await call(h.origin, "POST", "/v1/schedules", {
        json: { id: "s1", handler: "echo", schedule: "5m", overlap: "skip" },
        headers: bearer(acme.keys.admin!),
      });
      expect(created.status).toBe(201);
      // While an occurrence runs, the schedule's running key holds its job id (a string) — under
      // the tenant-qualified id (`acme:s1`), and under the bare one (the layout before tenants).
      for (const id of ["acme:s1", "s1"]) {
        await handle.redis.set(`{${handle.prefix}}:s:${id}:running`, "s1@1700000000000");
      }
      // The owner asking for `s1:running`, and a default-tenant key (whose ids are not qualified)
      // asking for `acme:s1:running` — another tenant's key.
      for (const [key, id] of [
        [acme.keys.admin!, "s1:running"],
        [other.keys.admin!, "acme:s1:running"],
        [other.keys.admin!, "s1:running"],
      ] as const) {
        for (const [method, path] of [
          ["GET", `/v1/schedules/${id}`],
          ["GET", `/v1/schedules/${id}/runs`],
          ["PATCH", `/v1/schedules/${id}`],
          ["DELETE", `/v1/schedules/${id}`],
          ["POST", `/v1/schedules/${id}/pause`],
          ["POST", `/v1/schedules/${id}/resume`],
        ] as const) {
          const answer = await call(h.origin, method, path, {
            headers: bearer(key),
            ...(method === "PATCH" ? { json: { priority: 3 } } : {}),
          });
          expectProblem(answer, 404);
        }
      }
    } finally {
      await h.close();
      await handle.cleanup();
    }
  });
});

/** `store`, recording the name of every method called on it into `calls`. */
function counting(store: Store, calls: string[]): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(String(key));
        return value.apply(target, args);
      };
    },
  });
}
