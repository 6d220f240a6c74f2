import { describe, expect, it } from "vitest";
import { Background } from "./background.ts";

function deferred() {
  let resolve!: () => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("Background", () => {
  it("settles once everything deferred so far has settled, failures included", async () => {
    const background = new Background();
    const a = deferred();
    const b = deferred();
    background.defer(a.promise);
    background.defer(b.promise);
    expect(background.size).toBe(2);

    let settled = false;
    const all = background.settled().then(() => {
      settled = true;
    });
    a.resolve();
    await Promise.resolve();
    expect(settled).toBe(false);
    b.reject(new Error("publish failed"));
    await all;
    expect(settled).toBe(true);
    expect(background.size).toBe(0);
  });

  it("resolves at once with nothing pending", async () => {
    await expect(new Background().settled()).resolves.toBeUndefined();
  });
});
