/**
 * @module
 * Part of the Store contract (`store.contract.ts`): the store's clock and its named leases: fencing
 * tokens from one sequence, renewal and release by the holder only, expiry.
 */
import { describe, expect, it } from "vitest";
import type { Store } from "../../src/store/port.ts";
import { type MakeContractStore, sleep } from "./fixtures.ts";
import { asAcquired, useContractStore } from "./harness.ts";

/** Registers this part of the Store contract for one implementation (`describeStoreContract`). */
export function describeLeaseContract(name: string, make: MakeContractStore): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    const { beginLeader, putDue } = useContractStore(make, (made) => {
      store = made;
    });

    // ── clock ──────────────────────────────────────────────────────────────

    describe("now", () => {
      it("is the store's clock in epoch milliseconds and does not go back", async () => {
        const a = await store.now();
        const b = await store.now();
        expect(Number.isInteger(a)).toBe(true);
        expect(Math.abs(a - Date.now())).toBeLessThan(60_000);
        expect(b).toBeGreaterThanOrEqual(a);
      });
    });

    // ── leases ─────────────────────────────────────────────────────────────

    describe("leases", () => {
      it("acquire hands out increasing tokens from one sequence; a held lease is refused", async () => {
        // Long enough that no lease lapses while the test runs on a busy machine.
        const LEASE_MS = 30_000;
        const a = asAcquired(await store.acquireLease("alpha", LEASE_MS));
        const b = asAcquired(await store.acquireLease("beta", LEASE_MS));
        expect(b.token).toBeGreaterThan(a.token);

        const refused = await store.acquireLease("alpha", LEASE_MS);
        expect(refused.acquired).toBe(false);
        if (refused.acquired) return;
        expect(refused.remainingMs).toBeGreaterThan(0);
        expect(refused.remainingMs).toBeLessThanOrEqual(LEASE_MS);

        expect(await store.releaseLease("alpha", a.token)).toBe(true);
        const c = asAcquired(await store.acquireLease("alpha", LEASE_MS));
        expect(c.token).toBeGreaterThan(b.token);

        // The tick lease draws from the same sequence.
        let last = c.token;
        for (let i = 0; i < 6; i++) {
          const name = i % 2 === 0 ? "gamma" : "delta";
          const next = asAcquired(await store.acquireLease(name, LEASE_MS));
          expect(next.token).toBeGreaterThan(last);
          expect(await store.releaseLease(name, next.token)).toBe(true);
          await putDue();
          const tick = await beginLeader();
          expect(tick.token).toBeGreaterThan(next.token);
          await store.endTick(tick.token, []);
          last = tick.token;
        }
        expect(await store.releaseLease("alpha", c.token)).toBe(true);
      });

      it("any name is a lease of its own, even the sequence's: no token is handed out twice", async () => {
        const LEASE_MS = 30_000;
        const a = asAcquired(await store.acquireLease("alpha", LEASE_MS));
        // `seq`: on Redis the name of the fencing-token sequence's key once sat in the lease space.
        const seq = asAcquired(await store.acquireLease("seq", 40));
        expect(seq.token).toBeGreaterThan(a.token);
        // Neither a release nor a renewal of `seq` with a token of another lease touches the
        // sequence.
        const b = asAcquired(await store.acquireLease("beta", LEASE_MS));
        expect(await store.releaseLease("seq", b.token)).toBe(false);
        expect(await store.renewLease("seq", b.token, LEASE_MS)).toBe(false);
        await sleep(80); // `seq` lapses
        const seen = [a.token, seq.token, b.token];
        const again = asAcquired(await store.acquireLease("seq", LEASE_MS));
        expect(again.token).toBeGreaterThan(b.token);
        seen.push(again.token);
        expect(await store.releaseLease("seq", again.token)).toBe(true);
        for (const name of ["gamma", "seq", "delta"]) {
          const next = asAcquired(await store.acquireLease(name, LEASE_MS));
          expect(next.token).toBeGreaterThan(Math.max(...seen));
          seen.push(next.token);
        }
        await putDue();
        const tick = await beginLeader();
        expect(tick.token).toBeGreaterThan(Math.max(...seen));
        await store.endTick(tick.token, []);
      });

      it("renew extends the lease for its holder only", async () => {
        const a = asAcquired(await store.acquireLease("l", 400));
        expect(await store.renewLease("l", a.token + 1_000, 2_000)).toBe(false);
        expect(await store.renewLease("l", a.token, 2_000)).toBe(true);
        await sleep(500); // past the first 400 ms: only the renewal keeps it
        const refused = await store.acquireLease("l", 2_000);
        expect(refused.acquired).toBe(false);
        if (!refused.acquired) expect(refused.remainingMs).toBeLessThanOrEqual(2_000 - 490);
        expect(await store.renewLease("l", a.token, 2_000)).toBe(true);
      });

      it("release is compare-and-delete", async () => {
        const a = asAcquired(await store.acquireLease("l", 1_000));
        expect(await store.releaseLease("l", a.token + 1)).toBe(false);
        expect((await store.acquireLease("l", 1_000)).acquired).toBe(false);
        expect(await store.releaseLease("l", a.token)).toBe(true);
        expect(await store.releaseLease("l", a.token)).toBe(false);
        expect(await store.releaseLease("never-held", a.token)).toBe(false);
        expect(await store.renewLease("never-held", a.token, 1_000)).toBe(false);
      });

      it("an expired lease is free; its old token can neither renew nor release the next holder's", async () => {
        const a = asAcquired(await store.acquireLease("l", 40));
        await sleep(80);
        expect(await store.renewLease("l", a.token, 1_000)).toBe(false);
        expect(await store.releaseLease("l", a.token)).toBe(false);
        const b = asAcquired(await store.acquireLease("l", 1_000));
        expect(b.token).toBeGreaterThan(a.token);
        expect(await store.releaseLease("l", a.token)).toBe(false);
        expect(await store.renewLease("l", a.token, 1_000)).toBe(false);
        expect(await store.releaseLease("l", b.token)).toBe(true);
      });
    });
  });
}
