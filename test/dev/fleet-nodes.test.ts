/**
 * The node registry across real processes (`GET /v1/nodes`, src/http/routes/nodes.ts): two
 * `tickwork start` servers with the worker role (and the api role, so either answers the API) on
 * one Redis prefix, labelled by `TICKWORK_CAPABILITIES` (`{"gpu":"nvidia"}`, `{"gpu":"none"}`)
 * and heartbeating every 300 ms with a 1 s TTL (`TICKWORK_HEARTBEAT_MS`,
 * `TICKWORK_NODE_TTL_MS`).
 *
 * Both are listed with their capabilities and keep heartbeating; the nvidia one is SIGKILLed (no
 * deregistration runs); the survivor's listing shows it `stale` once its TTL has passed, then no
 * more once 10 TTLs have (`NODE_DROP_TTLS`, src/store/port/nodes.ts). Dropped records leave
 * Redis through the heartbeats themselves (the `heartbeatNode` script prunes them; listing only
 * hides them): the survivor is the only process left on the prefix, so the record leaving
 * `{prefix}:nodes` is its doing.
 *
 * Runs the built CLI (`npm run build` first). Signals only: banners, HTTP answers, Redis state,
 * each polled with a deadline.
 */
import { Redis } from "ioredis";
import { afterAll, describe, expect, test } from "vitest";
import { createClient, type RegisteredNode } from "../../src/client/index.ts";
import {
  type DevServer,
  deletePrefix,
  REDIS_URL,
  randomPrefix,
  startDevServer,
  waitFor,
} from "./server.ts";

const API_KEY = "fleet-nodes-key";
const HEARTBEAT_MS = 300;
const TTL_MS = 1_000;
const HANDLERS = "test/dev/fleet-handlers.ts";

/** Two labelled worker processes on one prefix (each also serving the API). */
interface GpuFleet {
  nvidia: DevServer;
  none: DevServer;
}

/**
 * Start the two-node fleet on `prefix`; every process started is pushed to `servers` (for the
 * caller's `afterAll` to stop) even when another fails to start.
 */
async function startGpuFleet(prefix: string, servers: DevServer[]): Promise<GpuFleet> {
  const start = (gpu: string) =>
    startDevServer({
      command: {
        bin: ["start", "--host", "127.0.0.1", "--handlers", HANDLERS, "--role", "api,worker"],
      },
      env: {
        REDIS_URL,
        TICKWORK_PREFIX: prefix,
        TICKWORK_API_KEY: API_KEY,
        TICKWORK_CAPABILITIES: JSON.stringify({ gpu }),
        TICKWORK_HEARTBEAT_MS: String(HEARTBEAT_MS),
        TICKWORK_NODE_TTL_MS: String(TTL_MS),
        TICKWORK_CONCURRENCY: "4",
      },
      timeoutMs: 30_000,
    });
  const started = await Promise.allSettled([start("nvidia"), start("none")]);
  for (const result of started) if (result.status === "fulfilled") servers.push(result.value);
  const failed = started.find((result) => result.status === "rejected");
  if (failed) throw failed.reason;
  const [nvidia, none] = started.map((r) => (r as PromiseFulfilledResult<DevServer>).value) as [
    DevServer,
    DevServer,
  ];
  return { nvidia, none };
}

describe("the node registry across tickwork start processes", () => {
  const prefix = randomPrefix();
  const redis = new Redis(REDIS_URL);
  const servers: DevServer[] = [];

  afterAll(async () => {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await deletePrefix(prefix);
    redis.disconnect();
  });

  test("both nodes listed with their capabilities; a SIGKILLed one goes stale, then is dropped by the survivor", async () => {
    const { nvidia, none } = await startGpuFleet(prefix, servers);
    const client = createClient({ url: none.url, apiKey: API_KEY });
    const byPid = async (pid: number): Promise<RegisteredNode | undefined> =>
      (await client.nodes.list()).nodes.find((node) => node.pid === pid);

    // Each registers before its banner prints: both are listed at once.
    const listed = await client.nodes.list();
    expect(listed.deployment).toBe("node");
    expect(listed.nodes).toHaveLength(2);
    const gpuNode = listed.nodes.find((node) => node.pid === nvidia.pid);
    const plainNode = listed.nodes.find((node) => node.pid === none.pid);
    for (const [node, gpu] of [
      [gpuNode, "nvidia"],
      [plainNode, "none"],
    ] as const) {
      expect(node).toMatchObject({
        status: "live",
        capabilities: { gpu },
        ttlMs: TTL_MS,
        transport: "streams",
        concurrency: 4,
      });
      expect(node!.roles).toEqual(expect.arrayContaining(["api", "worker"]));
      expect(node!.handlers).toEqual(["fleet.limited", "fleet.where"]);
    }
    // The other server answers the same fleet.
    const fromNvidia = await createClient({ url: nvidia.url, apiKey: API_KEY }).nodes.list();
    expect(fromNvidia.nodes.map((node) => node.id).sort()).toEqual(
      listed.nodes.map((node) => node.id).sort(),
    );
    // Heartbeats every 300 ms: both move `lastSeen` on well within a TTL's worth of polling.
    await waitFor(
      async () => {
        const [a, b] = await Promise.all([byPid(nvidia.pid), byPid(none.pid)]);
        return a && b && a.lastSeen > gpuNode!.lastSeen && b.lastSeen > plainNode!.lastSeen
          ? true
          : undefined;
      },
      "both nodes to heartbeat again",
      10_000,
      50,
    );

    // A crash: no shutdown runs, the record stays until it is judged stale, then dropped.
    await nvidia.kill();
    const stale = await waitFor(
      async () => {
        const node = await byPid(nvidia.pid);
        expect(node, "listed until it is dropped").toBeDefined();
        return node?.status === "stale" ? node : undefined;
      },
      "the killed node to be stale",
      15_000,
      50,
    );
    // Stale means: no heartbeat for longer than its TTL (the store's clock answers `lastSeen`).
    expect(stale.id).toBe(gpuNode!.id);
    expect(await byPid(none.pid)).toMatchObject({ status: "live" });

    await waitFor(
      async () => ((await byPid(nvidia.pid)) === undefined ? true : undefined),
      "the killed node to be dropped from the listing",
      // 10 TTLs after its last heartbeat, and a slow machine's slack.
      10 * TTL_MS + 15_000,
      100,
    );
    const remaining = (await client.nodes.list()).nodes;
    expect(remaining.map((node) => node.pid)).toEqual([none.pid]);
    expect(remaining[0]).toMatchObject({ status: "live", capabilities: { gpu: "none" } });
    // …and from Redis: pruned by the survivor's heartbeat (a listing only hides it).
    await waitFor(
      async () => {
        const [inHash, inExpiry] = await Promise.all([
          redis.hexists(`{${prefix}}:nodes`, gpuNode!.id),
          redis.zscore(`{${prefix}}:nodes:expiry`, gpuNode!.id),
        ]);
        return inHash === 0 && inExpiry === null ? true : undefined;
      },
      "the survivor's heartbeat to remove the dropped record",
      5_000,
      50,
    );
    expect(await redis.hexists(`{${prefix}}:nodes`, plainNode!.id)).toBe(1);
  }, 60_000);
});

/**
 * Placement across the fleet (docs/adr/0017-placement.md): jobs requiring `gpu=nvidia` only ever
 * run on the nvidia process — from the job's recorded `node` and from the handler's own answer
 * (`fleet.where` returns the pid and capabilities of the process that ran it) — and the other
 * process's refusals are recorded and counted, never charged as attempts. Jobs without a
 * placement run anywhere.
 */
describe("placement across the fleet", () => {
  const prefix = randomPrefix();
  const servers: DevServer[] = [];

  afterAll(async () => {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await deletePrefix(prefix);
  });

  test("a job requiring gpu=nvidia only ever runs on that node", async () => {
    const { nvidia, none } = await startGpuFleet(prefix, servers);
    const client = createClient({ url: none.url, apiKey: API_KEY });
    const ids = new Map((await client.nodes.list()).nodes.map((node) => [node.pid, node.id]));
    const submitted = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        client.jobs.submit({
          handler: "fleet.where",
          input: { i },
          placement: { capabilities: { gpu: "nvidia" } },
        }),
      ),
    );
    const free = await client.jobs.submit({ handler: "fleet.where", input: { free: true } });
    const finals = await waitFor(
      async () => {
        const jobs = await Promise.all([...submitted, free].map((job) => client.jobs.get(job.id)));
        return jobs.every((job) => job.status === "succeeded") ? jobs : undefined;
      },
      "every job to succeed",
      45_000,
      100,
    );
    const placed = finals.slice(0, -1);
    for (const job of placed) {
      expect(job.result).toEqual({ pid: nvidia.pid, capabilities: { gpu: "nvidia" } });
      expect(job.node).toBe(ids.get(nvidia.pid));
      expect(job.attempts).toBe(1);
    }
    expect(finals.at(-1)?.node).toMatch(/^tw-/);
    // Both workers pull from one stream: the plain one was handed some of them and gave them
    // back. Each refusal is counted, and the last one is recorded on the job it refused.
    const stats = (await (
      await fetch(`${none.url}/v1/stats`, { headers: { authorization: `Bearer ${API_KEY}` } })
    ).json()) as { totals: { unplaced: number; started: number } };
    expect(stats.totals.started).toBe(25);
    const refused = placed.filter((job) => job.refused !== undefined);
    expect(refused.length).toBeLessThanOrEqual(stats.totals.unplaced);
    for (const job of refused) {
      expect(job.refused).toMatchObject({
        node: ids.get(none.pid),
        reason: "job needs capability gpu=nvidia",
      });
    }
  }, 90_000);
});
