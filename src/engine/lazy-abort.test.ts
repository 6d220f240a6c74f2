import { describe, expect, it } from "vitest";
import { LazyAbort } from "./lazy-abort.ts";

describe("LazyAbort", () => {
  it("a signal read first is aborted by the first abort, with its reason", () => {
    const abort = new LazyAbort();
    const signal = abort.signal;
    expect(signal.aborted).toBe(false);
    let heard: unknown;
    signal.addEventListener("abort", () => {
      heard = signal.reason;
    });
    const reason = new Error("timed out");
    abort.abort(reason);
    expect(signal.aborted).toBe(true);
    expect(heard).toBe(reason);
    expect(abort.signal).toBe(signal);
  });

  it("a signal first read after the abort is made aborted, with the abort's reason", () => {
    const abort = new LazyAbort();
    const reason = new Error("cancelled");
    abort.abort(reason);
    expect(abort.signal.aborted).toBe(true);
    expect(abort.signal.reason).toBe(reason);
  });

  it("only the first abort counts, read before or after", () => {
    const early = new LazyAbort();
    early.abort("first");
    early.abort("second");
    expect(early.signal.reason).toBe("first");

    const read = new LazyAbort();
    const signal = read.signal;
    read.abort("first");
    read.abort("second");
    expect(signal.reason).toBe("first");
  });

  it("never aborted, the signal stays open", () => {
    expect(new LazyAbort().signal.aborted).toBe(false);
  });
});
