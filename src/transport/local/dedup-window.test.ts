import { afterEach, describe, expect, it, vi } from "vitest";
import { DedupWindow, type DedupWindowOptions } from "./dedup-window.ts";

let clock = 1_000;
const windows: DedupWindow[] = [];
afterEach(() => {
  for (const w of windows.splice(0)) w.clear();
  vi.useRealTimers();
});

function dedupWindow(options: Partial<DedupWindowOptions> = {}): DedupWindow {
  const w = new DedupWindow({ windowMs: 100, maxEntries: 1_000, now: () => clock, ...options });
  windows.push(w);
  return w;
}

describe("DedupWindow", () => {
  it("gives back an id's ticket within the window, and nothing from its end", () => {
    clock = 1_000;
    const w = dedupWindow();
    expect(w.remember("a")).toBe(0);
    expect(w.remember("b")).toBe(1);
    clock = 1_099;
    expect([w.lookup("a"), w.lookup("b"), w.lookup("c")]).toEqual([0, 1, undefined]);
    clock = 1_100;
    expect([w.lookup("a"), w.lookup("b")]).toEqual([undefined, undefined]);
    expect(w.size).toBe(0);
    expect(w.remember("a")).toBe(2);
    expect(w.lookup("a")).toBe(2);
  });

  it("drops expired ids as it goes", () => {
    clock = 0;
    const w = dedupWindow({ maxEntries: 100_000 });
    for (let i = 0; i < 50_000; i++) {
      clock = i;
      w.remember(`id-${i}`);
    }
    // A window of 100 ms at one id per ms: only the last 100 are remembered.
    expect(w.size).toBe(100);
    expect(w.lookup("id-49900")).toBe(49_900);
    expect(w.lookup("id-49899")).toBeUndefined();
    clock = 1_000_000;
    expect(w.lookup("id-49999")).toBeUndefined();
    expect(w.size).toBe(0);
  });

  it("drops expired ids on a timer when nothing is published", () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let now = Date.now();
    const w = dedupWindow({ windowMs: 10, sweepIntervalMs: 20, now: () => now });
    w.remember("a");
    w.remember("b");
    expect(w.size).toBe(2);
    now += 10;
    vi.advanceTimersByTime(19);
    expect(w.size).toBe(2); // expired, but not looked at yet
    vi.advanceTimersByTime(1);
    expect(w.size).toBe(0);
  });

  it("past maxEntries forgets the oldest id early, and counts it", () => {
    clock = 1_000;
    const w = dedupWindow({ maxEntries: 3 });
    for (const id of ["a", "b", "c", "d"]) w.remember(id);
    expect(w.size).toBe(3);
    expect(w.evictedEarly).toBe(1);
    expect(["a", "b", "c", "d"].map((id) => w.lookup(id))).toEqual([undefined, 1, 2, 3]);
  });

  it("after the clock steps back, still ends each id's window on time", () => {
    clock = 1_000;
    const w = dedupWindow();
    w.remember("a"); // until 1100
    clock = 900;
    w.remember("b"); // until 1000, behind "a" in the ring
    clock = 1_050;
    expect(w.lookup("b")).toBeUndefined();
    expect(w.lookup("a")).toBe(0);
    expect(w.remember("b")).toBe(2); // until 1150; its old slot is now stale
    clock = 1_120;
    // "a" and the stale slot of "b" are dropped; the stale one must not take "b" with it.
    expect([w.lookup("a"), w.lookup("b")]).toEqual([undefined, 2]);
    expect(w.size).toBe(1);
  });

  it("keeps tickets right across the 2^30 wrap of its index", () => {
    for (const firstTicket of [2 ** 30 - 2, 2 ** 32 - 3, 2 ** 40 + 2 ** 30 - 1]) {
      clock = 1_000;
      const w = dedupWindow({ firstTicket });
      const ids = ["a", "b", "c", "d", "e"];
      expect(ids.map((id) => w.remember(id))).toEqual(ids.map((_, i) => firstTicket + i));
      expect(ids.map((id) => w.lookup(id))).toEqual(ids.map((_, i) => firstTicket + i));
      clock = 1_100;
      expect(w.remember("f")).toBe(firstTicket + 5);
      expect(w.size).toBe(1);
      expect([w.lookup("a"), w.lookup("f")]).toEqual([undefined, firstTicket + 5]);
    }
  });

  it("clear() forgets everything; tickets keep counting", () => {
    clock = 1_000;
    const w = dedupWindow();
    w.remember("a");
    w.remember("b");
    w.clear();
    expect([w.size, w.lookup("a")]).toEqual([0, undefined]);
    expect(w.remember("a")).toBe(2);
  });

  it("validates its options", () => {
    const now = () => 0;
    expect(() => new DedupWindow({ windowMs: 0, maxEntries: 1, now })).toThrow(RangeError);
    expect(() => new DedupWindow({ windowMs: 1, maxEntries: 0, now })).toThrow(RangeError);
    expect(() => new DedupWindow({ windowMs: 1, maxEntries: 1.5, now })).toThrow(RangeError);
    expect(() => new DedupWindow({ windowMs: 1, maxEntries: 2 ** 28 + 1, now })).toThrow(
      RangeError,
    );
  });
});
