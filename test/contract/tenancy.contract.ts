/**
 * @module
 * Part of the Store contract (`store.contract.ts`): tenant isolation: a listing reads one tenant's
 * index; its pages and cursors never show another tenant's records.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.ts";
import {
  accepted,
  jobSpec,
  type MakeContractStore,
  occurrenceSpec,
  scheduleRecord,
  uid,
} from "./fixtures.ts";
import { putOk, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeTenancyContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    useContractStore(make, (made) => {
      store = made;
    });

    describe("listings are per tenant", () => {
      it("jobs, dead letters and schedules of one tenant never appear in another's pages or cursors", async () => {
        const mine = "tenant-a";
        const theirs = "tenant-b";
        const own: string[] = [];
        const foreign: string[] = [];
        for (let i = 0; i < 5; i++) {
          for (const [tenant, ids] of [
            [mine, own],
            [theirs, foreign],
          ] as const) {
            const { job } = accepted(
              await store.submitJob(jobSpec({ tenant, handler: `h${i % 2}` }), {
                delayMs: 0,
                recoverGraceMs: 60_000,
              }),
            );
            ids.push(job.id);
          }
        }
        const sA = scheduleRecord({ tenant: mine });
        const sB = scheduleRecord({ tenant: theirs });
        await store.putSchedule(sA);
        await store.putSchedule(sB);
        const deadA = await store.markDead(occurrenceSpec(sA, 1_800_000_000_000), {
          name: "E",
          message: "x",
        });
        const deadB = await store.markDead(occurrenceSpec(sB, 1_800_000_000_000), {
          name: "E",
          message: "x",
        });
        own.push(deadA!.id);
        foreign.push(deadB!.id);

        const seen = (page: { items: { id: string }[]; cursor?: string }) => JSON.stringify(page);
        const pages: string[] = [];
        let cursor: string | undefined;
        do {
          const page = await store.listJobs({ tenant: mine, limit: 1, cursor });
          expect(page.items.length).toBe(1); // a page is full until the last
          pages.push(seen(page));
          cursor = page.cursor;
        } while (cursor);
        expect(pages).toHaveLength(own.length);
        for (const handler of ["h0", "h1"]) {
          cursor = undefined;
          do {
            const page = await store.listJobs({ tenant: mine, handler, limit: 1, cursor });
            pages.push(seen(page));
            cursor = page.cursor;
          } while (cursor);
        }
        pages.push(seen(await store.listDead({ tenant: mine, limit: 10 })));
        pages.push(seen(await store.listSchedules({ tenant: mine, limit: 10 })));
        const text = pages.join("\n");
        for (const id of own) expect(text).toContain(id);
        for (const id of [...foreign, sB.id]) {
          expect(text).not.toContain(id);
          // Cursors too: decoded, none names the other tenant's records.
          for (const page of pages) {
            const c = (JSON.parse(page) as { cursor?: string }).cursor;
            if (c) expect(Buffer.from(c, "base64url").toString()).not.toContain(id);
          }
        }
        expect(
          (await store.listDead({ tenant: theirs, limit: 10 })).items.map((j) => j.id),
        ).toEqual([deadB!.id]);
        expect((await store.listSchedules({ tenant: theirs, limit: 10 })).items).toEqual([
          expect.objectContaining({ id: sB.id }),
        ]);
      });

      it("a schedule written again under another tenant is listed under that tenant only", async () => {
        // Its id as the broker makes another tenant's (`<tenant>:<id>`), which names the tenant
        // where a stored definition cannot be read (Redis's cjson refuses a lone surrogate).
        const s = await putOk(
          store,
          scheduleRecord({ id: `a:${uid("moved")}`, tenant: "a", input: { s: "\ud800" } }),
        );
        const listed = async (tenant: string) =>
          (await store.listSchedules({ tenant, limit: 10 })).items;
        const moved = await putOk(store, { ...s, tenant: "b", input: {} });
        expect(await listed("a")).toEqual([]);
        expect(await listed("b")).toEqual([moved]);
        const back = await putOk(store, { ...moved, tenant: "a" });
        expect(await listed("a")).toEqual([back]);
        expect(await listed("b")).toEqual([]);
      });
    });
  });
}
