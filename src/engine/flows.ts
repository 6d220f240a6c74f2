/**
 * @module
 * Flows (docs/adr/0014-job-dependencies.md, "Flows"): children submitted first, then a parent
 * that waits for them all with `after` — the parent runs once every child succeeded, and a failed
 * child cancels it (or, with `onFailure: "run"`, runs it anyway). Every job of the flow is checked
 * before any is written, so a bad one writes nothing. With an `idempotencyKey` the whole flow may
 * be submitted again (after a fault half-way, or by a handler's retry): each job's key derives
 * from it, so what was stored is answered again and only the rest is written.
 */
import type { JobRecord } from "../core/model.ts";
import { parseOrThrow, submitFlowSchema } from "../core/schemas.ts";
import type { Actor } from "./actor.ts";
import type { JobsBroker, PreparedSubmit, Submitted } from "./jobs.ts";

/** What a flow submit answers: its parent and children as stored (replayed ones included). */
export interface FlowSubmitted {
  parent: JobRecord;
  children: JobRecord[];
  /** True when every job of the flow was already stored (a flow submitted again). */
  replayed: boolean;
}

type Body = Record<string, unknown>;

/** `body` with `key` as its idempotency key, unless it has its own. */
function keyed(body: unknown, key: string | undefined): unknown {
  if (key === undefined || typeof body !== "object" || body === null) return body;
  return "idempotencyKey" in body ? body : { ...(body as Body), idempotencyKey: key };
}

/** The parent's body, waiting for `ids` besides what it already waits for. */
function waitingFor(parent: unknown, ids: string[]): unknown {
  if (typeof parent !== "object" || parent === null) return parent;
  const own = (parent as Body).after;
  return { ...(parent as Body), after: [...(Array.isArray(own) ? own : []), ...ids] };
}

/**
 * Submit a flow: check every job (as `submit` would, a 4xx naming the first bad one: nothing
 * written), store the children one by one, then the parent with `after` naming them. Quotas count
 * each job. A fault after some children were stored leaves them stored: submit the flow again
 * with the same `idempotencyKey` to finish it (without one, those children run on their own).
 *
 * @throws as `JobsBroker.submit`; ValidationError (400) for a malformed flow.
 */
export async function submitFlow(
  jobs: JobsBroker,
  body: unknown,
  actor: Actor = {},
): Promise<FlowSubmitted> {
  const flow = parseOrThrow(submitFlowSchema, body, "flow");
  const key = flow.idempotencyKey;
  const children = flow.children.map((child, i) => keyed(child, key && `${key}:child:${i}`));
  const parent = keyed(flow.parent, key && `${key}:parent`);
  // Checked before anything is written; the parent with stand-in ids (its real `after` comes
  // from the children as stored, which a replay answers with their first ids).
  const prepared: PreparedSubmit[] = children.map((child) => jobs.prepare(child, actor));
  jobs.prepare(
    waitingFor(
      parent,
      prepared.map((p) => p.job.id),
    ),
    actor,
  );
  const stored: Submitted[] = [];
  for (const child of prepared) stored.push(await jobs.store(child));
  const ids = stored.map((s) => s.job.id);
  const top = await jobs.store(jobs.prepare(waitingFor(parent, ids), actor));
  return {
    parent: top.job,
    children: stored.map((s) => s.job),
    replayed: top.replayed && stored.every((s) => s.replayed),
  };
}
