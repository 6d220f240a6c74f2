/**
 * The process log line a handler's ctx.log()/ctx.logger writes keeps its own level, time, msg and
 * the request's (and job's) fields; a handler's fields cannot replace them (`{ level: 5 }` wrote
 * `"level":5` on an error line, which level filters and alerts then missed).
 */
import { describe, expect, it } from "vitest";
import { attemptControls } from "../../src/engine/attempt.ts";
import { jsonLogger } from "../../src/engine/logger.ts";
import { MemoryStore } from "../../src/store/memory/index.ts";
import type { SubmitResult } from "../../src/store/port.ts";
import { newJob } from "../support/redis-store-fixtures.ts";

describe("ctx.log's process log line", () => {
  it("a field named level/time/msg/requestId/jobId does not overwrite the line's own", async () => {
    const store = new MemoryStore();
    const submitted = (await store.submitJob(newJob(), {
      delayMs: 0,
      recoverGraceMs: 0,
    })) as SubmitResult;
    const spec = submitted.message!.job;
    await store.beginRun(spec, 60_000);
    const lines: { line: Record<string, unknown>; level: string }[] = [];
    const root = jsonLogger({
      level: "info",
      sink: (line, level) => lines.push({ line: JSON.parse(line), level }),
    });
    // As the HTTP app and the runner build it.
    const logger = root
      .child({ requestId: "req-1" })
      .child({ jobId: spec.id, handler: "work", attempt: 1 });
    const controls = attemptControls(store, spec.id, 1, () => {}, logger, 0);
    // Ordinary user data: a game level, an event's time, a message id, the caller's request id.
    await controls.log(
      "user upgraded",
      { level: 5, time: "yesterday", msg: "m-9", requestId: "theirs", jobId: "j_other" },
      "error",
    );
    controls.stop();
    expect(lines).toHaveLength(1);
    const { line, level } = lines[0]!;
    expect(level).toBe("error");
    expect(line.level).toBe("error");
    expect(line.msg).toBe("user upgraded");
    expect(Number.isNaN(Date.parse(String(line.time)))).toBe(false);
    expect(line.requestId).toBe("req-1");
    expect(line.jobId).toBe(spec.id);
    // The job's own log keeps the fields as given.
    const page = await store.readLogs(spec.id, { limit: 10 });
    expect(page!.items[0]!.fields).toMatchObject({ level: 5, requestId: "theirs" });
  });
});
