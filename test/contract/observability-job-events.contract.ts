/**
 * @module
 * Part of the observability contract (`observability.contract.ts`): `events()` of one job — the
 * `jobId` filter (exact ids, with the type filter, ids that need escaping), the bound on events a
 * call examines (`more` when the scan stopped early, `last` to read on), and reading a job's
 * events from its creation time.
 */
import { describe, expect, it } from "vitest";
import type { JobSpec } from "../../src/core/model.ts";
import type { Store, TickEvent } from "../../src/store/port.ts";
import { accepted, jobSpec, type MakeContractStore, scheduleRecord } from "./fixtures.ts";
import { asLeader, ERROR, useObservabilityStore } from "./observability-harness.ts";

/** Events one call examines at most (the port's bound). */
const SCAN = 1_000;

/** Registers this part of the observability contract for one implementation. */
export function describeJobEventsContract(name: string, make: MakeContractStore): void {
  describe(`Observability contract: ${name}`, () => {
    let store: Store;
    const { submitted, run, allEvents, tickOpts } = useObservabilityStore(make, (made) => {
      store = made;
    });

    /** [type, attempt, error message] of each event, for comparing a job's history. */
    const history = (events: TickEvent[]) =>
      events.map((e) => [e.type, e.attempt ?? null, e.error?.message ?? null]);

    it("filters by job: its events only, oldest first, with attempts and errors", async () => {
      const a = await submitted();
      // An id that is `a`'s with more after it, and one that needs escaping in JSON.
      const longer = await submitted({ id: `${a.id}0` });
      const odd = await submitted({ id: `q"uo/te\\é-${a.id}` });
      await run(a);
      await store.finishRun(a.id, 1, { ok: false, error: ERROR, final: false });
      await run(a);
      await store.finishRun(a.id, 2, { ok: true, result: 1 });
      // Another job's error naming `a` as JSON text matches nothing of `a`.
      await run(odd);
      await store.finishRun(odd.id, 1, {
        ok: false,
        error: { name: "Error", message: `,"jobId":"${a.id}"` },
        final: true,
      });
      await store.cancelJob(longer.id);

      const all = await allEvents();
      const mine = await store.events({ jobId: a.id, limit: 100 });
      expect(mine.events).toEqual(all.filter((e) => e.jobId === a.id));
      expect(history(mine.events)).toEqual([
        ["job.created", null, null],
        ["job.started", 1, null],
        ["job.failed", 1, "boom"],
        ["job.started", 2, null],
        ["job.succeeded", null, null],
      ]);
      // Every event was examined: `last` is the log's last, and nothing follows.
      expect(mine.last).toBe(all.at(-1)?.id);
      expect(mine.more).toBeUndefined();

      expect(history((await store.events({ jobId: odd.id, limit: 100 })).events)).toEqual([
        ["job.created", null, null],
        ["job.started", 1, null],
        ["job.dead", 1, `,"jobId":"${a.id}"`],
      ]);
      expect(history((await store.events({ jobId: longer.id, limit: 100 })).events)).toEqual([
        ["job.created", null, null],
        ["job.cancelled", null, null],
      ]);
      // With the type filter: both apply.
      const started = await store.events({ jobId: a.id, types: ["job.started"], limit: 100 });
      expect(started.events.map((e) => [e.type, e.attempt])).toEqual([
        ["job.started", 1],
        ["job.started", 2],
      ]);
      // A job without events, and an empty id (no filter).
      expect(await store.events({ jobId: "j_nothing", limit: 10 })).toEqual({
        events: [],
        last: all.at(-1)?.id,
      });
      expect((await store.events({ jobId: "", limit: 1_000 })).events).toEqual(all);
    });

    it("reads on from `last` at `limit`, and says `more` only when events follow", async () => {
      const a = await submitted();
      await store.cancelJob(a.id);
      const first = await store.events({ jobId: a.id, limit: 1 });
      expect(first.events.map((e) => e.type)).toEqual(["job.created"]);
      expect(first.more).toBe(true);
      const second = await store.events({ jobId: a.id, after: first.last, limit: 1 });
      expect(second.events.map((e) => e.type)).toEqual(["job.cancelled"]);
      expect(second.more).toBeUndefined();
      expect(await store.events({ jobId: a.id, after: second.last, limit: 1 })).toEqual({
        events: [],
      });
    });

    it("stops a job's scan after 1,000 events examined, says so, and goes on from `last`", async () => {
      const target = await submitted();
      const others: JobSpec[] = [];
      for (let i = 0; i < SCAN + 50; i += 50) {
        others.push(...(await Promise.all(Array.from({ length: 50 }, () => submitted()))));
      }
      await store.cancelJob(target.id);

      const first = await store.events({ jobId: target.id, limit: 10 });
      expect(first.events.map((e) => [e.type, e.jobId])).toEqual([["job.created", target.id]]);
      // It stopped early: 1,000 events examined (the target's and 999 others), more after them.
      expect(first.more).toBe(true);
      const examined = await store.events({ limit: SCAN });
      expect(examined.events).toHaveLength(SCAN);
      expect(first.last).toBe(examined.last);

      const second = await store.events({ jobId: target.id, after: first.last, limit: 10 });
      expect(second.events.map((e) => [e.type, e.jobId])).toEqual([["job.cancelled", target.id]]);
      expect(second.more).toBeUndefined();
      // The whole log, unfiltered, needs two calls as well; the second one ends it.
      expect(examined.more).toBe(true);
      const rest = await store.events({ after: examined.last, limit: SCAN });
      expect(rest.events).toHaveLength(others.length + 2 - SCAN);
      expect(rest.more).toBeUndefined();
    });

    it("with a tenant, scans only what it may see: another tenant's events end no page", async () => {
      const acme = await submitted({ tenant: "acme" });
      // A leader change: the deployment's event, which every tenant sees (a tick leads only
      // with something due).
      await store.putSchedule(scheduleRecord({ nextRunAt: (await store.now()) - 1_000 }));
      const tick = asLeader(await store.beginTick(tickOpts({ holder: "h1" })));
      await store.endTick(tick.token, []);
      const globex = await submitted({ tenant: "globex" });
      // An error naming acme as tenant, in globex's job: not its tenant.
      await run(globex);
      await store.finishRun(globex.id, 1, {
        ok: false,
        error: { name: "Error", message: ',"tenant":"acme"' },
        final: true,
      });
      await store.cancelJob(acme.id);
      const all = await allEvents();
      const seen = (tenant: string) =>
        all.filter((e) => e.tenant === tenant || (e.jobId === undefined && !e.scheduleId));

      /** The ids of the events `tenant` may not see. */
      const others = (tenant: string) =>
        new Set(all.filter((e) => !seen(tenant).includes(e)).map((e) => e.id));
      for (const tenant of ["acme", "globex"]) {
        const page = await store.events({ tenant, limit: 100 });
        expect(page.events).toEqual(seen(tenant));
        // Its `last` names none of the other's events; the server's reader reads on from the
        // last one examined.
        expect(others(tenant).has(page.last!)).toBe(false);
        expect(page.last).toBeDefined();
        expect(page.examined ?? page.last).toBe(all.at(-1)?.id);
      }
      expect(seen("globex").map((e) => e.type)).toEqual([
        "leader.changed",
        "job.created",
        "job.started",
        "job.dead",
      ]);
      // globex asking for acme's job, or acme's kind of event, one at a time: the same answer as
      // for a job that does not exist. Before, the scan stopped at acme's event (`more`, and
      // `last` its id): whether acme's job existed, and when its events happened.
      // Nor does its `last`: a position before the store's clock, whatever happened.
      const shape = (page: Awaited<ReturnType<Store["events"]>>) => ({
        ...page,
        last: others("globex").has(page.last!) ? page.last : "not another's",
      });
      const none = await store.events({ tenant: "globex", jobId: "j_nosuchjob", limit: 1 });
      expect(shape(none)).toEqual({ events: [], last: "not another's", examined: all.at(-1)?.id });
      expect(shape(await store.events({ tenant: "globex", jobId: acme.id, limit: 1 }))).toEqual(
        shape(none),
      );
      const cancelled = await store.events({
        tenant: "globex",
        types: ["job.cancelled"],
        limit: 1,
      });
      expect(shape(cancelled)).toEqual(shape(none));
      // Its own kind of event still ends a page at `limit`, with `more` when others follow.
      const own = await store.events({ tenant: "acme", types: ["job.created"], limit: 1 });
      expect(own.events.map((e) => e.jobId)).toEqual([acme.id]);
      expect(own.more).toBe(true);
      expect(own.last).toBe(own.events[0]?.id);

      // Read on from its `last`: nothing it saw comes again, and a later event of its own comes.
      const read = await store.events({ tenant: "globex", limit: 100 });
      const later = await submitted({ tenant: "globex" });
      const next = await store.events({ tenant: "globex", after: read.last!, limit: 100 });
      expect(next.events.map((e) => [e.jobId, e.type])).toEqual([[later.id, "job.created"]]);
    });

    it("with a tenant, a read whose 1,000 events end the log names none of another's; a limit of 0 reads as 1", async () => {
      const before = (await allEvents()).at(-1)?.id;
      for (let i = 0; i < 1_000; i++) await submitted({ tenant: "globex" });
      const theirs = (await allEvents()).filter((e) => e.tenant === "globex");
      expect(theirs).toHaveLength(1_000);
      // The read examines exactly its 1,000 events, the last of them the log's last: its end.
      const page = await store.events({
        tenant: "acme",
        limit: 10,
        ...(before ? { after: before } : {}),
      });
      expect(page.events).toEqual([]);
      expect(page.more).toBeUndefined();
      expect(theirs.map((e) => e.id)).not.toContain(page.last);
      expect(page.examined).toBe(theirs.at(-1)?.id);
      // Read from the start with a limit of 0: as 1, on every store.
      const own = await submitted({ tenant: "acme" });
      const zero = await store.events({ tenant: "acme", limit: 0, after: page.examined! });
      expect(zero.events.map((e) => e.jobId)).toEqual([own.id]);
    });

    it("with a tenant whose name JSON escapes, sees its own events and no other's", async () => {
      // Tenants a custom `authorize` may name: escaped differently by the event writers (`/` as
      // `\/` or not, controls as `\u…`).
      const names = ["org/one", 'q"t', "b\\s", "a\u007fb"];
      for (const tenant of names) {
        const { id } = await submitted({ tenant });
        await store.cancelJob(id);
      }
      for (const tenant of names) {
        const page = await store.events({ tenant, limit: 100 });
        expect(page.events.map((e) => [e.tenant, e.type])).toEqual([
          [tenant, "job.created"],
          [tenant, "job.cancelled"],
        ]);
      }
      // A name that reads like another's escaped form, and the empty name: nothing of theirs.
      const nobody = await store.events({ tenant: "nobody", limit: 1 });
      expect(nobody.events).toEqual([]);
      const { last: _last, ...rest } = nobody;
      for (const tenant of ["org\\/one", ""]) {
        const { last: _at, ...page } = await store.events({ tenant, limit: 1 });
        expect(page).toEqual(rest);
      }
    });

    it("finds a job's events from its creation time, skipping what came before", async () => {
      for (let i = 0; i < 5; i++) await submitted();
      const a = accepted(await store.submitJob(jobSpec(), { delayMs: 0, recoverGraceMs: 60_000 }));
      await store.cancelJob(a.job.id);
      // As `GET /v1/events?since=<createdAt>` asks: ids above the last of the millisecond before.
      const page = await store.events({
        jobId: a.job.id,
        after: `${a.job.createdAt - 1}-9999999999999999`,
        limit: 10,
      });
      expect(page.events.map((e) => e.type)).toEqual(["job.created", "job.cancelled"]);
      expect(page.events[0]?.at).toBe(a.job.createdAt);
    });
  });
}
