/**
 * The attempts' timeout watch (src/engine/timeout-watch.ts) is a linked list: checked against a
 * model (a plain list of what is watched) over random sequences of watches, unwatches (also
 * twice, also from inside a fire) and checks.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkTimeouts, watchState, watchTimeout } from "../../src/engine/timeout-watch.ts";

type Op =
  | { kind: "watch"; due: number; unwatchOnFire: number | undefined }
  | { kind: "unwatch"; pick: number }
  | { kind: "check"; now: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant("watch" as const),
    due: fc.integer({ min: 0, max: 100 }),
    // Its fire unwatches an entry (itself or another, picked among those watched then).
    unwatchOnFire: fc.option(fc.nat(), { nil: undefined }),
  }),
  fc.record({ kind: fc.constant("unwatch" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("check" as const), now: fc.integer({ min: 0, max: 120 }) }),
);

describe("the attempts' timeout watch", () => {
  it("fires exactly the watched entries that are due, each time it checks, and stops checking when none is watched", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        interface Entry {
          id: number;
          due: number;
          unwatch: () => void;
          watched: boolean;
        }
        const entries: Entry[] = [];
        let fired: number[] = [];
        // Other files in this worker share the module: attempts of theirs may still be watched
        // (due far later than these checks). Counted from what is watched now.
        const before = watchState().watching;
        const unwatchEntry = (e: Entry) => {
          e.unwatch();
          e.watched = false;
        };
        try {
          for (const o of ops) {
            if (o.kind === "watch") {
              const id = entries.length;
              const entry: Entry = { id, due: o.due, unwatch: () => {}, watched: true };
              entry.unwatch = watchTimeout(o.due, () => {
                fired.push(id);
                const live = entries.filter((e) => e.watched);
                if (o.unwatchOnFire !== undefined && live.length > 0) {
                  unwatchEntry(live[o.unwatchOnFire % live.length]!);
                }
              });
              entries.push(entry);
            } else if (o.kind === "unwatch") {
              // Any entry, watched or not: unwatching twice does nothing.
              if (entries.length > 0) unwatchEntry(entries[o.pick % entries.length]!);
            } else {
              fired = [];
              const dueBefore = entries.filter((e) => e.watched && o.now >= e.due);
              checkTimeouts(o.now);
              // Each entry due and watched when the check began fires once, unless a fire before
              // it unwatched it; nothing else fires.
              const firedSet = new Set(fired);
              expect(fired.length).toBe(firedSet.size);
              for (const id of fired) expect(dueBefore.some((e) => e.id === id)).toBe(true);
              for (const e of dueBefore) {
                if (!firedSet.has(e.id)) expect(e.watched).toBe(false);
              }
            }
            const watching = before + entries.filter((e) => e.watched).length;
            expect(watchState()).toEqual({ watching, checking: watching > 0 });
          }
        } finally {
          for (const e of entries) unwatchEntry(e);
        }
        expect(watchState()).toEqual({ watching: before, checking: before > 0 });
      }),
      { numRuns: 300 },
    );
  });
});
