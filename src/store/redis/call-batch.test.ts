/**
 * How `CallBatch` groups calls, with the script calls answered by the test: when groups go, how
 * many are under way, and that each call gets its own answer. (The scripts themselves are tested
 * against a real Redis in test/streams/run-batches.test.ts and submit-batches.test.ts.)
 */
import { describe, expect, it } from "vitest";
import { CallBatch, MAX_IN_FLIGHT } from "./call-batch.ts";
import { submitBatch } from "./jobs.ts";
import { keys } from "./keys.ts";

/** A stand-in for Redis: records each script call and answers it when the test says. */
function fakeRedis() {
  const sent: { calls: string[]; answer: () => void }[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const take = (calls: string[]) =>
    new Promise<unknown>((resolve) => {
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      sent.push({
        calls,
        answer: () => {
          inFlight--;
          resolve(calls.length === 1 ? `done ${calls[0]}` : calls.map((c) => `done ${c}`));
        },
      });
    });
  return {
    sent,
    mostInFlight: () => mostInFlight,
    one: (args: string[]) => take(args),
    many: (args: string[], width: number) => {
      expect(width).toBe(1);
      return take(args);
    },
  };
}

/** Lets pending promise callbacks and the end of the event loop's turn run. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("CallBatch", () => {
  it("groups the calls of a turn at its end, and the calls made while a group is under way after it", async () => {
    const redis = fakeRedis();
    const batch = new CallBatch("op", redis.one, redis.many);
    const first = ["a", "b", "c"].map((x) => batch.call([x]));
    expect(redis.sent).toHaveLength(0);
    await turn();
    expect(redis.sent.map((s) => s.calls)).toEqual([["a", "b", "c"]]);
    const later = ["d", "e"].map((x) => batch.call([x]));
    await turn();
    expect(redis.sent).toHaveLength(1);
    redis.sent[0]!.answer();
    expect(await Promise.all(first)).toEqual(["done a", "done b", "done c"]);
    await turn();
    expect(redis.sent.map((s) => s.calls)).toEqual([
      ["a", "b", "c"],
      ["d", "e"],
    ]);
    redis.sent[1]!.answer();
    expect(await Promise.all(later)).toEqual(["done d", "done e"]);
  });

  it("with sendAt, sends a group once that many wait and as many as are under way, while fewer than the most groups are", async () => {
    const redis = fakeRedis();
    const batch = new CallBatch("op", redis.one, redis.many, 2);
    const names = Array.from({ length: 40 }, (_, i) => `c${i}`);
    const calls = names.map((x) => batch.call([x]));
    // Within the turn: groups that double until MAX_IN_FLIGHT are under way; the rest wait.
    expect(MAX_IN_FLIGHT).toBe(4);
    expect(redis.sent.map((s) => s.calls)).toEqual([
      names.slice(0, 2),
      names.slice(2, 4),
      names.slice(4, 8),
      names.slice(8, 16),
    ]);
    redis.sent[0]!.answer();
    await turn();
    expect(redis.sent.at(-1)!.calls).toEqual(names.slice(16));
    for (const s of redis.sent.slice(1)) s.answer();
    expect(await Promise.all(calls)).toEqual(names.map((x) => `done ${x}`));
  });

  /**
   * Four loops that each await their call before the next, answered in order: grouped at the end
   * of the turn they move in step, one group under way at a time; with sendAt 2 they form two
   * pairs that take turns, so a pair is under way while the other's callers make their next
   * calls.
   */
  async function loops(sendAt?: number) {
    const redis = fakeRedis();
    const batch = new CallBatch("op", redis.one, redis.many, sendAt);
    let made = 0;
    const loop = async (name: string) => {
      for (let i = 0; i < 5; i++) {
        made++;
        expect(await batch.call([`${name}${i}`])).toBe(`done ${name}${i}`);
      }
    };
    const all = Promise.all(["w", "x", "y", "z"].map(loop));
    let answered = 0;
    while (made < 20 || answered < redis.sent.length) {
      await turn();
      const next = redis.sent[answered];
      if (next) {
        next.answer();
        answered++;
      }
    }
    await all;
    return { groups: redis.sent.map((s) => s.calls.length), most: redis.mostInFlight() };
  }

  it("callers that await each call move in step in one group, and take turns in pairs with sendAt 2", async () => {
    const together = await loops();
    expect(together.most).toBe(1);
    expect(together.groups.every((n) => n === 4)).toBe(true);
    const pairs = await loops(2);
    expect(pairs.most).toBe(2);
    expect(pairs.groups.every((n) => n === 2)).toBe(true);
  });
});

describe("the submits' CallBatch (submitBatch)", () => {
  /** `submitBatch` on a stand-in for Redis that answers when the test says. */
  function submits() {
    const sent: string[][] = [];
    const answers: (() => void)[] = [];
    const run = (_script: unknown, _keys: string[], args: (string | number)[]) =>
      new Promise<unknown>((resolve) => {
        sent.push(args.map(String));
        // A group's arguments are its width, then its calls'.
        answers.push(() => resolve(args.length > 1 ? args.slice(1).map(() => "{}") : "{}"));
      });
    return { batch: submitBatch(run, keys("cb")), sent, answers };
  }

  it("sends a busy server's requests at once, in groups that double until they hold 16", async () => {
    // Fifty requests' submits made in one turn, as an HTTP server under load makes them: none
    // waits for a group under way to answer (docs/adr/0052) until fewer than 16 are left; each
    // group holds as many as those under way, or 16 (docs/adr/0056).
    const { batch, sent, answers } = submits();
    const calls = Array.from({ length: 50 }, (_, i) => batch.call([`s${i}`]));
    expect(sent.map((args) => args.length - 1)).toEqual([2, 2, 4, 8, 16, 16]);
    // The two left wait for an answer, then go.
    answers[0]!();
    await turn();
    expect(sent.at(-1)!.slice(1)).toEqual(["s48", "s49"]);
    for (const answer of answers.slice(1)) answer();
    expect(await Promise.all(calls)).toHaveLength(50);
  });
});
