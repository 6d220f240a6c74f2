/**
 * @module
 * Placement: where a job may run (docs/adr/0017-placement.md). A job or schedule may carry a
 * {@link Placement}; every node (a `tickwork start` process, a serverless deployment) has a
 * {@link NodeIdentity}. The runner checks the two before a run begins: a node that does not match
 * hands the delivery back (not an attempt), and push queues publish a job with a `group` to that
 * worker group's URL.
 */
import * as z from "zod";
import { isWellFormedText } from "./text.ts";

/** Most entries in `capabilities`, `nodes` and `notNodes`. */
export const MAX_PLACEMENT_ENTRIES = 32;

/** The names a capability or group may not have: inherited names of plain objects. */
const INHERITED = new Set(["__proto__", "constructor", "prototype"]);

/**
 * The default group's name where one is needed: the key of QStash's `workerGroups` whose URL
 * receives jobs without a group. No group may be named so.
 */
export const DEFAULT_GROUP = "default";

/** A worker group's name: 1–64 of A–Z a–z 0–9 _ . : @ / -, not an inherited name nor `default`. */
const groupName = z
  .string()
  .regex(/^[A-Za-z0-9_.:@/-]{1,64}$/, "use 1–64 of A–Z a–z 0–9 _ . : @ / -")
  .refine(
    (name) => !INHERITED.has(name) && name !== DEFAULT_GROUP,
    "__proto__, constructor, prototype and default are not group names",
  );

/** Longest capability name or value, and node id (the node registry's bounds). */
const MAX_CHARS = 200;

/** Text without control characters or lone surrogates, `min`–200 characters. */
const text = (min: number) =>
  z
    .string()
    .min(min)
    .max(MAX_CHARS)
    .refine(
      (s) => isWellFormedText(s) && !/\p{Cc}/u.test(s),
      "control characters or broken Unicode",
    );

const capabilities = z
  // On the input as sent: a parsed record would already have lost an own `__proto__`.
  .custom<Record<string, string>>(
    (caps) =>
      typeof caps !== "object" ||
      caps === null ||
      Object.keys(caps).every((name) => !INHERITED.has(name)),
    "__proto__, constructor and prototype are not capability names",
  )
  .pipe(
    z.record(text(1), text(0)).refine((caps) => Object.keys(caps).length <= MAX_PLACEMENT_ENTRIES, {
      message: `at most ${MAX_PLACEMENT_ENTRIES} capabilities`,
    }),
  );

/** `placement` of a job or schedule. Every field is optional; an empty placement matches any node. */
export const placementSchema = z
  .object({
    group: groupName.optional().meta({
      description:
        "Worker group: only nodes started in this group run it; push queues publish it to the group's URL.",
    }),
    capabilities: capabilities.optional().meta({
      description:
        'Capabilities the node must have, each with this exact value, e.g. {"gpu":"nvidia"}.',
    }),
    nodes: z.array(text(1)).min(1).max(MAX_PLACEMENT_ENTRIES).optional().meta({
      description: "Only these node ids may run it (TICKWORK_NODE_ID).",
    }),
    notNodes: z.array(text(1)).min(1).max(MAX_PLACEMENT_ENTRIES).optional().meta({
      description: "These node ids never run it.",
    }),
  })
  .strict();

/** Where a job may run. */
export type Placement = z.output<typeof placementSchema>;

/** What a node says about itself, matched against a job's {@link Placement}. */
export interface NodeIdentity {
  /** The node's id (`TICKWORK_NODE_ID`, else generated per process). */
  id: string;
  /** Its worker group; absent: the default group, which runs jobs without a `group`. */
  group?: string | undefined;
  /** Its capabilities (`TICKWORK_CAPABILITIES`). */
  capabilities?: Readonly<Record<string, string>> | undefined;
}

/**
 * What is wrong with a node's `group` or `capabilities` (the same rules as a placement's), or
 * `undefined`. The id is checked where it is chosen (1–200 characters).
 */
export function nodeIdentityProblem(node: NodeIdentity): string | undefined {
  if (node.group !== undefined && !groupName.safeParse(node.group).success) {
    return `group must be 1–64 of A–Z a–z 0–9 _ . : @ / -, got ${JSON.stringify(node.group.slice(0, 80))}`;
  }
  for (const [name, value] of Object.entries(node.capabilities ?? {})) {
    if (typeof value !== "string") return `capability ${JSON.stringify(name)} must be a string`;
  }
  return undefined;
}

/** Why a node may not run a job, or `undefined` when it may. */
export function placementMismatch(
  placement: Placement | undefined,
  node: NodeIdentity,
): string | undefined {
  // Groups partition the fleet: a node in a group runs only that group's jobs.
  const group = placement?.group;
  if (group !== node.group) {
    return group === undefined
      ? `node is in group "${node.group}", the job in the default group`
      : `job needs group "${group}"`;
  }
  if (!placement) return undefined;
  if (placement.nodes && !placement.nodes.includes(node.id)) return "node not in `nodes`";
  if (placement.notNodes?.includes(node.id)) return "node in `notNodes`";
  for (const [name, value] of Object.entries(placement.capabilities ?? {})) {
    const has = node.capabilities && Object.hasOwn(node.capabilities, name);
    if (!has || node.capabilities?.[name] !== value) {
      return `job needs capability ${name}=${value}`;
    }
  }
  return undefined;
}

/** A placement with nothing in it is no placement: `undefined`, so it is not stored. */
export function normalPlacement(placement: Placement | undefined): Placement | undefined {
  if (!placement) return undefined;
  const out: Placement = {};
  if (placement.group !== undefined) out.group = placement.group;
  if (placement.capabilities && Object.keys(placement.capabilities).length > 0) {
    out.capabilities = placement.capabilities;
  }
  if (placement.nodes) out.nodes = [...new Set(placement.nodes)];
  if (placement.notNodes) out.notNodes = [...new Set(placement.notNodes)];
  return Object.keys(out).length > 0 ? out : undefined;
}
