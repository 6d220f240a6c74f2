/**
 * Job dependencies as a property (ADR 0014): random DAGs of at most 15 jobs, submitted in
 * topological order interleaved with runs, each job succeeding or failing (finishRun final, or the
 * queue's failure callback) as drawn. No job begins a run before all its dependencies succeeded
 * (`onFailure: "run"`: before all of them finished), and in the end every job is final, in the
 * state a reference model gives.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JobRecord, JobSpec, JobStatus } from "../../src/core/model.ts";
import type { Store } from "../../src/store/port.ts";
import { storeFactories } from "../support/stores.ts";

interface Node {
  deps: readonly number[];
  onFailure: "cancel" | "run";
  outcome: "ok" | "fail" | "callback";
}

const FINAL: JobStatus[] = ["succeeded", "dead", "cancelled", "skipped"];

const dagArb = fc.integer({ min: 1, max: 15 }).chain((n) =>
  fc.tuple(
    fc.tuple(
      ...Array.from({ length: n }, (_, i) =>
        fc.record({
          deps:
            i === 0 ? fc.constant<number[]>([]) : fc.uniqueArray(fc.nat(i - 1), { maxLength: 4 }),
          onFailure: fc.constantFrom("cancel" as const, "run" as const),
          outcome: fc.constantFrom(
            "ok" as const,
            "ok" as const,
            "fail" as const,
            "callback" as const,
          ),
        }),
      ),
    ),
    // Interleaving: each step submits the next job (true) or runs a queued one (false, index).
    fc.array(fc.tuple(fc.boolean(), fc.nat()), { maxLength: 40 }),
  ),
);

/** What each job must end as: run (and its outcome) if its dependencies allow, else cancelled. */
function expected(nodes: Node[]): JobStatus[] {
  const out: JobStatus[] = [];
  nodes.forEach((node, i) => {
    const ok = node.deps.every((d) => out[d] === "succeeded");
    out[i] =
      ok || node.onFailure === "run" ? (node.outcome === "ok" ? "succeeded" : "dead") : "cancelled";
  });
  return out;
}

async function check(store: Store, nodes: Node[], steps: [boolean, number][]): Promise<void> {
  const ids: string[] = [];
  const get = async (i: number) => (await store.getJob(ids[i] as string)) as JobRecord;
  const submitNext = async () => {
    const i = ids.length;
    const node = nodes[i] as Node;
    const id = `j_${Math.random().toString(36).slice(2).padEnd(21, "0").slice(0, 21)}`;
    ids.push(id);
    await store.submitJob(
      {
        id,
        tenant: "default",
        handler: "h",
        input: null,
        priority: 5,
        timeoutMs: 1_000,
        retries: 0,
        tags: [],
        ...(node.deps.length ? { after: node.deps.map((d) => ids[d] as string) } : {}),
        onFailure: node.onFailure,
      },
      { delayMs: 0, recoverGraceMs: 60_000 },
    );
  };
  const runOne = async (pick: number): Promise<boolean> => {
    const queued: number[] = [];
    for (let i = 0; i < ids.length; i++) if ((await get(i)).status === "queued") queued.push(i);
    if (queued.length === 0) return false;
    const i = queued[pick % queued.length] as number;
    const node = nodes[i] as Node;
    const job = await get(i);
    const { status: _s, attempts: _a, ...spec } = job;
    const begun = await store.beginRun(spec as JobSpec, 5_000);
    expect(begun.kind).toBe("run");
    // The property: at its start, every dependency succeeded (or, onFailure run, finished).
    for (const d of node.deps) {
      const dep = (await get(d)).status;
      if (node.onFailure === "run") expect(FINAL).toContain(dep);
      else expect(dep).toBe("succeeded");
    }
    if (begun.kind !== "run") return true;
    if (node.outcome === "ok")
      await store.finishRun(job.id, begun.attempt, { ok: true, result: 1 });
    else if (node.outcome === "fail") {
      const error = { name: "E", message: "x" };
      await store.finishRun(job.id, begun.attempt, { ok: false, error, final: true });
    } else {
      await store.finishRun(job.id, begun.attempt, {
        ok: false,
        error: { name: "E", message: "x" },
        final: false,
      });
      await store.markDead(spec as JobSpec, { name: "Gone", message: "queue gave up" });
    }
    return true;
  };
  for (const [submit, pick] of steps) {
    if (submit && ids.length < nodes.length) await submitNext();
    else await runOne(pick);
  }
  while (ids.length < nodes.length) await submitNext();
  while (await runOne(0)) {}
  const statuses = await Promise.all(ids.map(async (_, i) => (await get(i)).status));
  expect(statuses).toEqual(expected(nodes));
  expect((await store.stats()).jobs).toMatchObject({ waiting: 0, queued: 0, running: 0 });
}

describe.each(storeFactories.filter((f) => f.name !== "upstash"))(
  "job dependencies (property) on $name",
  (factory) => {
    it("no job runs before its dependencies succeeded; every job ends as the model says", async () => {
      await fc.assert(
        fc.asyncProperty(dagArb, async ([nodes, steps]) => {
          const handle = await factory.make();
          try {
            await check(handle.store, nodes, steps);
          } finally {
            await handle.cleanup();
          }
        }),
        { numRuns: factory.name === "memory" ? 150 : 40 },
      );
    }, 120_000);
  },
);
