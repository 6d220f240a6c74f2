/**
 * A handler's `ctx` (src/engine/attempt-context.ts) and the Redis store's finish answer
 * (`FinishedRun`, src/store/redis/runs.ts): their lazy members are own getters that a copy
 * carries, and V8 keeps both in fast mode, every object of a kind on one hidden class. An object
 * literal with `get` members, as before, is in dictionary mode: the shape check fails on it
 * (docs/adr/0045-no-per-attempt-getters.md).
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { CancelledError } from "../../src/core/errors.ts";
import type { AttemptControls } from "../../src/engine/attempt.ts";
import { AttemptContext, type ContextJob } from "../../src/engine/attempt-context.ts";
import type { Broker } from "../../src/engine/broker.ts";
import { LazyAbort } from "../../src/engine/lazy-abort.ts";
import { silentLogger } from "../../src/engine/logger.ts";

const controls: AttemptControls = {
  progress: async () => true,
  log: async () => true,
  stop: () => {},
};
const submitted: unknown[] = [];
const broker = {
  submit: async (job: unknown, options: unknown) => {
    submitted.push({ job, options });
    return { job: { id: "child" }, replayed: false };
  },
} as unknown as Broker;

/** A ctx of `job` whose timeout is never due. */
function contextOf(job: ContextJob, attempt = 1, abort = new LazyAbort()): AttemptContext {
  return new AttemptContext(
    job,
    attempt,
    silentLogger,
    controls,
    abort,
    broker,
    Number.POSITIVE_INFINITY,
    () => {},
  );
}

describe("a handler's ctx", () => {
  it("has its members, the optional ones only when the job has them", () => {
    const plain = contextOf({ id: "j1", tenant: "t" }, 2);
    // In the order the object literal listed them before.
    expect(Object.keys(plain)).toEqual([
      "jobId",
      "attempt",
      "signal",
      "logger",
      "jobs",
      "progress",
      "log",
    ]);
    expect(plain.jobId).toBe("j1");
    expect(plain.attempt).toBe(2);
    const full = contextOf({
      id: "j2",
      tenant: "t",
      scheduleId: "s1",
      fireAt: 1_000,
      after: ["a", "b"],
    });
    expect(full.fireAt).toBe(1_000);
    expect(full.after).toEqual(["a", "b"]);
    expect(typeof full.scheduleId).toBe("string");
  });

  it("makes its signal and jobs when first read, once; a copy carries them; they cannot be replaced", async () => {
    const abort = new LazyAbort();
    const ctx = contextOf({ id: "j3", tenant: "acme" }, 1, abort);
    const copy = { ...ctx };
    expect(copy.signal).toBe(ctx.signal);
    expect(copy.jobs).toBe(ctx.jobs);
    abort.abort(new CancelledError("stop"));
    expect(ctx.signal.aborted).toBe(true);
    await ctx.jobs.submit({ handler: "next", input: {} });
    expect(submitted.at(-1)).toEqual({
      job: { handler: "next", input: {} },
      options: { tenant: "acme" },
    });
    expect(() => {
      (ctx as { signal: unknown }).signal = null;
    }).toThrow(TypeError);
    // A wrapper that reads through to ctx (a Proxy, an object whose prototype is ctx) sees them.
    const proxied = new Proxy(ctx, {});
    expect(proxied.signal).toBe(ctx.signal);
    expect(proxied.jobs).toBe(ctx.jobs);
    const derived = Object.create(ctx) as AttemptContext;
    expect(derived.signal).toBe(ctx.signal);
    expect(derived.jobs).toBe(ctx.jobs);
    // The hidden state is no member a copy or a listing shows.
    expect(Object.getOwnPropertySymbols(copy)).toEqual([]);
  });

  it("fires the attempt's timeout when its signal is read past the due time, before answering it", () => {
    const abort = new LazyAbort();
    let fired = 0;
    const timeout = () => {
      fired++;
      abort.abort(new Error("timed out"));
    };
    const at = (due: number) =>
      new AttemptContext(
        { id: "j4", tenant: "t" },
        1,
        silentLogger,
        controls,
        abort,
        broker,
        due,
        timeout,
      );
    expect(at(performance.now() + 60_000).signal.aborted).toBe(false);
    expect(fired).toBe(0);
    // Its timeout passed (a freeze): the read aborts first.
    expect(at(performance.now() - 1).signal.aborted).toBe(true);
    expect(fired).toBe(1);
  });

  it("is in V8's fast mode, every ctx (and every finish answer) on one hidden class", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tw-shape-"));
    try {
      const script = join(dir, "shape.mjs");
      const src = (path: string) => JSON.stringify(resolve("src", path));
      // `%HasFastProperties` and `%HaveSameMap` need --allow-natives-syntax: a child of its own.
      await writeFile(
        script,
        `import { AttemptContext } from ${src("engine/attempt-context.ts")};
import { LazyAbort } from ${src("engine/lazy-abort.ts")};
import { FinishedRun } from ${src("store/redis/runs.ts")};
const controls = { progress: async () => true, log: async () => true, stop() {} };
const ctx = (id) => new AttemptContext({ id, tenant: "t" }, 1, undefined, controls, new LazyAbort(), {}, Infinity, () => {});
const a = ctx("a"), b = ctx("b");
b.signal; // a getter read changes nothing
const f = new FinishedRun('{"ok":{"id":"a"}}'), g = new FinishedRun('{"ok":{"id":"b"}}');
console.log(JSON.stringify({
  ctx: [%HasFastProperties(a), %HasFastProperties(b), %HaveSameMap(a, b)],
  finished: [%HasFastProperties(f), %HaveSameMap(f, g), g.job.id],
}));
`,
      );
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--allow-natives-syntax", "--import", "tsx", script],
        { cwd: process.cwd() },
      );
      expect(JSON.parse(stdout.trim().split("\n").at(-1)!)).toEqual({
        ctx: [true, true, true],
        finished: [true, true, "b"],
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
