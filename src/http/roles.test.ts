import { expect, test } from "vitest";
import { normalizeRoles, parseRoles, routeSet } from "./roles.ts";

test("parseRoles reads comma lists, repeated, in any case and order, without duplicates", () => {
  expect(parseRoles("api, worker")).toEqual(["api", "worker"]);
  expect(parseRoles(["worker", "API,tick", " api "])).toEqual(["api", "tick", "worker"]);
  expect(parseRoles("observer,")).toEqual(["observer"]);
  expect(parseRoles(["tick", "all"])).toEqual(["all"]);
});

test("parseRoles and normalizeRoles refuse unknown roles and empty lists, naming the choices", () => {
  expect(() => parseRoles("api,cron")).toThrow(
    'unknown role "cron" (roles: all, api, tick, worker, observer)',
  );
  expect(() => parseRoles(" , ")).toThrow(RangeError);
  expect(() => normalizeRoles([])).toThrow(RangeError);
});

test("routeSet: api reads and writes, observer only reads, tick and worker only their routes", () => {
  expect(routeSet(["all"])).toEqual({ write: true, read: true, tick: true, worker: true });
  expect(routeSet(["api"])).toEqual({ write: true, read: true, tick: false, worker: false });
  expect(routeSet(["observer"])).toEqual({ write: false, read: true, tick: false, worker: false });
  expect(routeSet(["tick", "worker"])).toEqual({
    write: false,
    read: false,
    tick: true,
    worker: true,
  });
});
