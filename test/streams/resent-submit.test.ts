/**
 * A submit whose command ran but whose reply was lost is sent again by ioredis when it reconnects
 * (`autoResendUnfulfilledCommands`): the script runs a second time with the same arguments, the
 * same job id included. On Redis Streams the first run has already put the delivery on the
 * stream, so a worker may have begun or finished the job before the second run. The second run
 * must answer as the first did and write nothing: no reset of the job to `queued`, no second
 * delivery, nothing counted twice (include "job": `submittedBefore`).
 *
 * Each case runs the same `submitJob` / `submitJobs` call twice on a real Redis, in both dispatch
 * modes, with the job begun and finished in between (or not), and compares what the store holds.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import type { NewJob } from "../../src/core/model.ts";
import type { Admission, Store, SubmitItemResult } from "../../src/store/port.ts";
import { fromIoredis, RedisStore } from "../../src/store/redis/index.ts";
import { keys } from "../../src/store/redis/keys.ts";
import { deletePrefixes } from "../redis-rest/harness.ts";
import { specOf } from "../support/job-spec.ts";
import { REDIS_URL } from "../support/stores.ts";

const redis = new Redis(REDIS_URL);
const prefixes: string[] = [];
afterAll(async () => {
  await deletePrefixes(prefixes);
  redis.disconnect();
});

function makeStore(dispatch: "outbox" | "streams") {
  const prefix = `resent-${randomUUID()}`;
  prefixes.push(prefix);
  const store = new RedisStore({ client: fromIoredis(redis), prefix, dispatch });
  const root = keys(prefix).root;
  return { store, root };
}

function newJob(overrides: Partial<NewJob> = {}): NewJob {
  return {
    id: `j_${randomUUID().replaceAll("-", "")}`,
    tenant: "default",
    handler: "email.send",
    input: { to: "ada@example.com" },
    priority: 5,
    timeoutMs: 30_000,
    retries: 3,
    tags: [],
    ...overrides,
  };
}

/** What a second run could change: the job, its listing, the stream, the outbox, the counters. */
async function held(store: Store, root: string, id: string) {
  const stats = await store.stats();
  return {
    job: await redis.hgetall(`${root}:j:${id}`),
    listed: await redis.zscore(`${root}:jobs:7:default`, id),
    stream: await redis.xlen(`${root}:q`),
    delayed: await redis.zcard(`${root}:q:delayed`),
    outbox: await redis.zscore(`${root}:outbox`, id),
    pending: await redis.zscore(`${root}:pending`, id),
    totals: stats.totals,
    jobs: stats.jobs,
    events: await redis.xlen(`${root}:events`),
  };
}

type Submit = (store: Store, job: NewJob, admission?: Admission) => Promise<SubmitItemResult>;

const single: Submit = (store, job, admission) =>
  store.submitJob(job, { delayMs: 0, recoverGraceMs: 5_000 }, admission);
const batched: Submit = async (store, job, admission) => {
  const [answer] = await (store as RedisStore).submitJobs(
    [{ job, delayMs: 0 }],
    { recoverGraceMs: 5_000 },
    admission,
  );
  return answer!;
};

describe.each([
  ["submitJob", single],
  ["submitJobs", batched],
] as const)("%s run twice (its reply lost, the command re-sent)", (_name, submit) => {
  it.each(["streams", "outbox"] as const)(
    "%s: after the job ran and succeeded, the second run answers as the first and changes nothing",
    async (dispatch) => {
      const { store, root } = makeStore(dispatch);
      const job = newJob();
      const first = await submit(store, job);
      expect(first).toMatchObject({ job: { id: job.id, status: "queued" } });
      if (!("job" in first)) throw new Error("not written");
      // A worker took the delivery before the submit's reply came back.
      const begun = await store.beginRun(specOf(first.job), 5_000, 60_000);
      expect(begun.kind).toBe("run");
      await store.finishRun(job.id, 1, { ok: true, result: "sent" }, 60_000);
      const before = await held(store, root, job.id);
      expect(before.job.status).toBe("succeeded");
      expect(before.listed).toBe(String(first.job.createdAt));

      const again = await submit(store, job);
      expect(again).toMatchObject({
        job: { id: job.id, createdAt: first.job.createdAt, runAt: first.job.runAt },
        replayed: false,
      });
      expect(await held(store, root, job.id)).toEqual(before);
      // Nothing to run again: the job is as the worker left it.
      expect(await store.getJob(job.id)).toMatchObject({ status: "succeeded", attempts: 1 });
    },
  );

  it.each(["streams", "outbox"] as const)(
    "%s: right away (still queued), the second run answers as the first and changes nothing",
    async (dispatch) => {
      const { store, root } = makeStore(dispatch);
      const job = newJob({ idempotencyKey: `k-${randomUUID()}` });
      const first = await submit(store, job);
      const before = await held(store, root, job.id);
      expect(before.totals.submitted).toBe(1);
      const again = await submit(store, job);
      // Answered as the write it repeats (202, not an idempotent replay).
      expect(again).toEqual(first);
      expect(await held(store, root, job.id)).toEqual(before);
    },
  );

  it("a refused submit leaves nothing, its listing entry included; sent again it is refused again", async () => {
    const { store, root } = makeStore("streams");
    const quota = { key: `q-${randomUUID()}`, windows: [{ windowMs: 60_000, limit: 1 }] };
    const admitted = newJob();
    expect(await submit(store, admitted, { quota })).toMatchObject({ job: { id: admitted.id } });
    const over = newJob();
    const unknown = newJob({ after: [`j_${"0".repeat(21)}`] });
    for (let i = 0; i < 2; i++) {
      expect(await submit(store, over, { quota })).toMatchObject({ denied: { kind: "quota" } });
      const refused = submit(store, unknown).then(
        (answer) => answer,
        (error: unknown) => error,
      );
      expect(await refused).toMatchObject(
        submit === single ? { code: "unknown_dependencies" } : { unknown: [expect.any(String)] },
      );
      expect(await redis.zrange(`${root}:jobs:7:default`, 0, -1)).toEqual([admitted.id]);
      expect(await redis.exists(`${root}:j:${over.id}`, `${root}:j:${unknown.id}`)).toBe(0);
    }
    expect((await store.stats()).totals.submitted).toBe(1);
  });

  it("a waiting job (its dependency unfinished) answers waiting again; nothing counted twice", async () => {
    const { store, root } = makeStore("streams");
    const dep = newJob();
    await submit(store, dep);
    const job = newJob({ after: [dep.id] });
    const first = await submit(store, job);
    expect(first).toMatchObject({ job: { status: "waiting" } });
    const before = await held(store, root, job.id);
    const again = await submit(store, job);
    expect(again).toMatchObject({ job: { id: job.id, status: "waiting" } });
    expect(await held(store, root, job.id)).toEqual(before);
    expect(before.jobs.waiting).toBe(1);
  });

  it.each([
    ["succeeded", true],
    ["dead", false],
  ] as const)(
    "a job stored waiting whose dependency then %s answers waiting again, with nothing to publish",
    async (_outcome, ok) => {
      const { store, root } = makeStore("outbox");
      const dep = newJob({ retries: 0 });
      const submitted = await submit(store, dep);
      if (!("job" in submitted)) throw new Error("dependency refused");
      const job = newJob({ after: [dep.id] });
      expect(await submit(store, job)).toMatchObject({ job: { status: "waiting" } });
      // The dependency ends before the second run: the job is queued (or cancelled) by then.
      const begun = await store.beginRun(specOf(submitted.job), 5_000);
      if (begun.kind !== "run") throw new Error(`not begun: ${begun.kind}`);
      await store.finishRun(
        dep.id,
        begun.attempt,
        ok
          ? { ok: true, result: null }
          : { ok: false, final: true, error: { name: "E", message: "x" } },
      );
      const before = await held(store, root, job.id);
      const again = await submit(store, job);
      expect(again).toMatchObject({ job: { id: job.id, status: "waiting" } });
      expect("message" in again ? again.message : undefined).toBeUndefined();
      expect(await held(store, root, job.id)).toEqual(before);
    },
  );
});
