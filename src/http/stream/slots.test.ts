/**
 * `StreamSlots`, on a clock of its own: a key holds at most `maxPerKey` slots; a slot given back
 * frees its place (once, however often it is given back); and a slot never given back lapses
 * `maxMs` and a grace after it was taken, because on workerd a stream whose client left is never
 * told so and would hold its slot for the isolate's life.
 */
import { describe, expect, it } from "vitest";
import { TooManyStreamsError } from "../../core/errors.ts";
import { STREAM_SLOT_GRACE_MS, StreamSlots } from "./sse.ts";

describe("StreamSlots", () => {
  it("holds maxPerKey slots per key; one more is a 429; a slot given back frees its place once", () => {
    const slots = new StreamSlots(2, 1_000, () => 0);
    const a = slots.take("k");
    slots.take("k");
    expect(() => slots.take("k")).toThrow(TooManyStreamsError);
    slots.take("other");
    a();
    a();
    expect(slots.count("k")).toBe(1);
    slots.take("k");
    expect(() => slots.take("k")).toThrow(TooManyStreamsError);
  });

  it("a slot never given back lapses maxMs and the grace after it was taken", () => {
    let now = 0;
    const slots = new StreamSlots(2, 1_000, () => now);
    slots.take("k");
    now = 500;
    slots.take("k");
    now = 1_000 + STREAM_SLOT_GRACE_MS - 1;
    expect(() => slots.take("k")).toThrow(TooManyStreamsError);
    now = 1_000 + STREAM_SLOT_GRACE_MS;
    const third = slots.take("k");
    expect(() => slots.take("k")).toThrow(TooManyStreamsError);
    now = 1_500 + STREAM_SLOT_GRACE_MS;
    slots.take("k");
    third();
    expect(slots.count("k")).toBe(1);
  });

  it("forgets a key with no slot left", () => {
    const slots = new StreamSlots(1, 1_000, () => 0);
    slots.take("k")();
    expect(slots.count("k")).toBe(0);
  });
});
