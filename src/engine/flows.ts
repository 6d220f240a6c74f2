/**
 * @module
 * Flows (docs/adr/0014-job-dependencies.md, "Flows"): children submitted first, then a parent
 * that waits for them all with `after` — the parent runs once every child succeeded, and a failed
 * child cancels it (or, with `onFailure: "run"`, runs it anyway). Every job of the flow is checked
 * before any is written, so a malformed one writes nothing. With an `idempotencyKey` the whole
 * flow may be submitted again (after a fault or a quota refusal half-way, or by a handler's
 * retry): each job's key derives from it, so what was stored is answered again and only the rest
 * is written.
 */
import { errorWithin, InvalidRequestError } from "../core/errors.ts";
import type { JobRecord } from "../core/model.ts";
import { parseOrThrow, submitFlowSchema } from "../core/schemas.ts";
import { unknownDependencies } from "../store/port/deps.ts";
import type { Actor } from "./actor.ts";
import type { QuotaReport } from "./admission.ts";
import type { JobsBroker, PreparedSubmit, Submitted, SubmitVia } from "./jobs.ts";

/** What a flow submit answers: its parent and children as stored (replayed ones included). */
export interface FlowSubmitted {
  parent: JobRecord;
  children: JobRecord[];
  /** True when every job of the flow was already stored (a flow submitted again). */
  replayed: boolean;
  /** Which of its jobs were already stored (each a replay): the parent, and each child in order. */
  replays: { parent: boolean; children: boolean[] };
  /**
   * Where the tenant's submit quota stands after the flow's last counted job (absent without a
   * quota, and when every job was a replay): each job counts as a submit.
   */
  quota?: QuotaReport;
}

type Body = Record<string, unknown>;

/**
 * The flow's key for one of its jobs, unless the job names its own (a key that is there: an
 * in-process body may carry `idempotencyKey: undefined`, which names none).
 */
function derivedKey(body: unknown, key: string | undefined, suffix: string): SubmitVia {
  if (key === undefined) return {};
  if (typeof body === "object" && body !== null && (body as Body).idempotencyKey !== undefined) {
    return {};
  }
  return { idempotencyKey: `flow:${key}:${suffix}` };
}

/**
 * Submit a flow: check every job (as `submit` would: the body, the manifest, the handler and its
 * input — a 4xx naming the first bad one, nothing written), store the children one by one, then
 * the parent with `after` naming them. The parent may not name `after` itself: it waits for its
 * children (give other dependencies to the children). A child's `after` naming a job the tenant
 * does not have refuses the flow (422 `unknown_dependencies`) before any job is stored. Quotas
 * count each job, and a quota or
 * overload refusal is judged as each job is stored: one half-way leaves the earlier ones stored —
 * submit the flow again with the same `idempotencyKey` to finish it (without one, those children
 * run on their own). The derived keys (`flow:<key>:child:<i>`, `flow:<key>:parent`) are reserved:
 * no plain submit can take them first.
 *
 * @throws as `JobsBroker.submit`; ValidationError (400) for a malformed flow.
 */
export async function submitFlow(
  jobs: JobsBroker,
  body: unknown,
  actor: Actor = {},
  trace?: SubmitVia["trace"],
): Promise<FlowSubmitted> {
  const flow = parseOrThrow(submitFlowSchema, body, "flow");
  const key = flow.idempotencyKey;
  // Checked before anything is written; the parent with stand-in ids (its real `after` comes
  // from the children as stored, which a replay answers with their first ids).
  const prepared: PreparedSubmit[] = flow.children.map((child, i) =>
    prepareAt(jobs, child, actor, `children.${i}`),
  );
  const parentJob = prepareAt(
    jobs,
    waitingFor(
      flow.parent,
      prepared.map((p) => p.job.id),
    ),
    actor,
    "parent",
  ).job;
  // A key two jobs of the flow name would make the second a replay of the first (a parent that is
  // its own child).
  const keys = new Map<string, string>();
  for (const [i, { job }] of [...prepared, { job: parentJob }].entries()) {
    const path = i < prepared.length ? `children.${i}.idempotencyKey` : "parent.idempotencyKey";
    if (job.idempotencyKey === undefined) continue;
    const first = keys.get(job.idempotencyKey);
    if (first !== undefined) {
      throw new InvalidRequestError("invalid flow", [
        { path, message: `the same idempotencyKey as ${first}: each job of a flow needs its own` },
      ]);
    }
    keys.set(job.idempotencyKey, path);
  }
  const viaOf = (i: number): SubmitVia => {
    const via = derivedKey(flow.children[i], key, `child:${i}`);
    return trace ? { ...via, trace } : via;
  };
  // So is every job's size on a transport whose messages are bounded (Cloudflare Queues).
  for (const [i, child] of prepared.entries()) {
    try {
      jobs.checkStoredSize(child.job, viaOf(i));
    } catch (error) {
      throw errorWithin(error, `children.${i}`);
    }
  }
  try {
    const parentVia = derivedKey(flow.parent, key, "parent");
    jobs.checkStoredSize(parentJob, trace ? { ...parentVia, trace } : parentVia);
  } catch (error) {
    throw errorWithin(error, "parent");
  }
  // So is every child's `after`: a child naming an unknown job refuses the flow before any
  // child is stored. Unless the child was stored before, by this flow submitted earlier (its
  // dependency may have gone since): the store answers a replay before it checks `after`, and
  // refuses a new job without writing anything. So such a child is tried first.
  // One read of every distinct id the children name, status and tenant only.
  const early = new Map<number, Submitted>();
  const tenant = prepared[0]?.job.tenant;
  const named = prepared.flatMap((p) => p.job.after ?? []);
  const known =
    tenant === undefined || named.length === 0
      ? new Set<string>()
      : await jobs.knownJobs(named, tenant);
  for (const [i, child] of prepared.entries()) {
    const unknown = (child.job.after ?? []).filter((id) => !known.has(id));
    if (unknown.length === 0) continue;
    const keyed = child.job.idempotencyKey !== undefined || key !== undefined;
    if (!keyed) throw errorWithin(unknownDependencies(unknown), `children.${i}`);
    early.set(i, await storeAt(jobs, child, viaOf(i), `children.${i}`));
  }
  const stored: Submitted[] = [];
  for (const [i, child] of prepared.entries()) {
    stored.push(early.get(i) ?? (await storeAt(jobs, child, viaOf(i), `children.${i}`)));
  }
  const ids = stored.map((s) => s.job.id);
  const parent = prepareAt(jobs, waitingFor(flow.parent, ids), actor, "parent");
  const via = derivedKey(flow.parent, key, "parent");
  const top = await storeAt(jobs, parent, trace ? { ...via, trace } : via, "parent");
  const submitted: FlowSubmitted = {
    parent: top.job,
    children: stored.map((s) => s.job),
    replayed: top.replayed && stored.every((s) => s.replayed),
    replays: { parent: top.replayed, children: stored.map((s) => s.replayed) },
  };
  const quota = [...stored, top].findLast((s) => s.quota !== undefined)?.quota;
  if (quota) submitted.quota = quota;
  return submitted;
}

/** `jobs.store` of the flow's job at `at`, whose errors name their paths from the flow's body. */
async function storeAt(
  jobs: JobsBroker,
  job: PreparedSubmit,
  via: SubmitVia,
  at: string,
): Promise<Submitted> {
  try {
    return await jobs.store(job, via);
  } catch (error) {
    throw errorWithin(error, at);
  }
}

/** `jobs.prepare` of the flow's job at `at`, whose errors name their paths from the flow's body. */
function prepareAt(jobs: JobsBroker, body: unknown, actor: Actor, at: string): PreparedSubmit {
  try {
    return jobs.prepare(body, actor);
  } catch (error) {
    throw errorWithin(error, at);
  }
}

/**
 * The parent's body, waiting for `ids`; one that names `after` itself is refused (an `after`
 * left undefined names none, as an `idempotencyKey` left undefined names no key).
 */
function waitingFor(parent: unknown, ids: string[]): unknown {
  if (typeof parent !== "object" || parent === null || Array.isArray(parent)) return parent;
  if ((parent as { after?: unknown }).after !== undefined) {
    throw new InvalidRequestError("invalid flow", [
      {
        path: "parent.after",
        message: "a flow's parent waits for its children; give other dependencies to the children",
      },
    ]);
  }
  return { ...(parent as Body), after: ids };
}
