/**
 * `ScoreIndex` against a plain map scanned in full, over random sequences of sets, moves and
 * deletes (fast-check).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ScoreIndex } from "./score-index.ts";

describe("ScoreIndex", () => {
  it("counts, adds and removes like a scanned map", () => {
    const op = fc.oneof(
      fc.record({
        kind: fc.constant("set" as const),
        id: fc.integer({ min: 0, max: 20 }),
        score: fc.integer({ min: 0, max: 50 }),
      }),
      fc.record({ kind: fc.constant("delete" as const), id: fc.integer({ min: 0, max: 20 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), fc.integer({ min: -1, max: 51 }), (ops, at) => {
        const index = new ScoreIndex();
        const model = new Map<string, number>();
        for (const o of ops) {
          const id = `j${o.id}`;
          if (o.kind === "set") {
            index.set(id, o.score);
            model.set(id, o.score);
          } else {
            expect(index.delete(id)).toBe(model.delete(id));
          }
          expect(index.size).toBe(model.size);
          expect(index.has(id)).toBe(model.has(id));
        }
        const expected = [...model.values()].filter((s) => s <= at).length;
        expect(index.countUpTo(at)).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });
});
