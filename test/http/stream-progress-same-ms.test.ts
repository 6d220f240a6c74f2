/**
 * A job's stream sends every progress value that changed between two reads of the job, also when
 * two values were reported within the same millisecond: the second was never sent (its time was
 * not later than the one sent), so the stream's last progress event showed a middle value for good.
 */
import { describe, expect, it } from "vitest";
import type { Engine } from "../../src/engine/index.ts";
import { runJobStream } from "../../src/http/stream/job-stream.ts";
import { resolveStreamConfig, type SseWriter } from "../../src/http/stream/sse.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { SubmitResult } from "../../src/store/port.ts";
import { newJob } from "../support/redis-store-fixtures.ts";

describe("job stream progress", () => {
  it("a value reported in the same millisecond as the one already sent is still sent", async () => {
    let now = 1_700_000_000_000;
    const store = new MemoryStore({ clock: () => now });
    const submitted = (await store.submitJob(newJob(), {
      delayMs: 0,
      recoverGraceMs: 0,
    })) as SubmitResult;
    const spec = submitted.message!.job;
    const id = spec.id;
    now += 10;
    expect((await store.beginRun(spec, 60_000)).kind).toBe("run");
    now += 10;
    await store.reportProgress(id, 1, '"A"');

    const events: { name: string; data: unknown }[] = [];
    const out: SseWriter = {
      event: (name, _id, data) => events.push({ name, data }),
      comment: () => {},
      position: () => {},
      idleMs: () => 0,
    };
    const engine = {
      store,
      broker: { getJob: async (jid: string) => (await store.getJob(jid))! },
    } as unknown as Engine;
    const abort = new AbortController();
    const running = runJobStream({
      engine,
      config: resolveStreamConfig({ pollMs: 20, heartbeatMs: 60_000, maxMs: 60_000 }),
      actor: {},
      id,
      job: (await store.getJob(id))!,
      resume: undefined,
      out,
      signal: abort.signal,
    });
    // The stream has read and sent A; the handler reports again within the same millisecond.
    await expect.poll(() => events.some((e) => e.name === "progress")).toBe(true);
    await store.reportProgress(id, 1, '"B"');
    now += 1_000;
    await store.finishRun(id, 1, { ok: true, result: "done" });
    // The stream ends with the job's final status.
    await running;
    abort.abort();

    const progress = events
      .filter((e) => e.name === "progress")
      .map((e) => (e.data as { value: unknown }).value);
    const done = events.find((e) => e.name === "done")?.data as { progress?: { value: unknown } };
    expect(done?.progress?.value).toBe("B");
    expect(progress).toEqual(["A", "B"]);
  });
});
