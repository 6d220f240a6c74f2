/**
 * What the security suites share: tenants with real random keys (only their hashes go into the
 * configuration), an app on a real socket with a queue that holds what it is given (so admitted
 * jobs stay put for the checks), and a snapshot of everything a refused request must not change.
 */
import { generateKey, hashKey } from "../../src/config/keys.ts";
import type { Manifest, TenantConfig } from "../../src/config/schema.ts";
import type { Scope } from "../../src/config/scopes.ts";
import type { EngineOptions } from "../../src/engine/index.ts";
import type { AppOptions } from "../../src/http/index.ts";
import type { Store } from "../../src/store/port.ts";
import { call, type Harness, startHarness, testHandlers } from "../http/harness.ts";
import { ChaosQueue } from "../support/chaos-queue.ts";
import { prng } from "../support/prng.ts";

export const TICK_SECRET = "tick-secret-for-tests";

/** A key of a tenant: the plain key (what a client sends) and what the configuration stores. */
export interface TestKey {
  key: string;
  scopes: Scope[];
}

/** Every tenant made by {@link tenant} in this process, and the default one. */
const TENANTS = new Set<string>(["default"]);

/** A tenant for a test: its configuration and its plain keys by name. */
export interface TestTenant {
  config: TenantConfig;
  keys: Record<string, TestKey>;
}

/**
 * A tenant with one key per entry of `keys` (name → scopes), fresh random keys each time.
 *
 * @example
 * const acme = await tenant("acme", { writer: ["jobs:write", "read"] }, { submit: ["echo"] });
 */
export async function tenant(
  id: string,
  keys: Record<string, Scope[]>,
  manifest?: Manifest,
): Promise<TestTenant> {
  TENANTS.add(id);
  const plain: Record<string, TestKey> = {};
  const configKeys: TenantConfig["keys"] = [];
  for (const [name, scopes] of Object.entries(keys)) {
    const key = generateKey();
    plain[name] = { key, scopes };
    configKeys.push({ id: name, hash: await hashKey(key), scopes });
  }
  return { config: { id, keys: configKeys, ...(manifest ? { manifest } : {}) }, keys: plain };
}

/** The `Authorization` header of a key. */
export function bearer(key: TestKey | string): Record<string, string> {
  return { authorization: `Bearer ${typeof key === "string" ? key : key.key}` };
}

/**
 * The app outside dev with `tenants`, on `store`, over a queue that keeps every message (nothing
 * is delivered unless a test drives it).
 */
export async function securedApp(
  store: Store,
  tenants: TestTenant[],
  options: { app?: Omit<AppOptions, "engine">; engine?: EngineOptions } = {},
): Promise<Harness & { queue: ChaosQueue }> {
  const queue = new ChaosQueue(prng(7));
  const h = await startHarness({
    store,
    handlers: testHandlers().handlers,
    transport: queue,
    app: {
      dev: false,
      tickSecret: TICK_SECRET,
      tenants: tenants.map((t) => t.config),
      ...options.app,
    },
    engine: { degradation: false, ...options.engine },
  });
  return { ...h, queue };
}

/**
 * Everything a client could observe in the store: jobs, schedules, dead letters (every page),
 * and the counters (the clock and lease left out).
 */
export async function storeState(store: Store): Promise<string> {
  const all = async <T>(page: (cursor?: string) => Promise<{ items: T[]; cursor?: string }>) => {
    const items: T[] = [];
    let cursor: string | undefined;
    do {
      const next = await page(cursor);
      items.push(...next.items);
      cursor = next.cursor;
    } while (cursor !== undefined);
    return items;
  };
  // Listings are per tenant: read every tenant the tests made.
  const tenants = [...TENANTS].sort();
  const perTenant = await Promise.all(
    tenants.map(async (tenant) => ({
      tenant,
      jobs: await all((cursor) => store.listJobs({ tenant, limit: 100, cursor })),
      schedules: await all((cursor) => store.listSchedules({ tenant, limit: 100, cursor })),
      dead: await all((cursor) => store.listDead({ tenant, limit: 100, cursor })),
    })),
  );
  const stats = await store.stats();
  const { now: _now, leader: _leader, degradation: _degradation, ...counters } = stats;
  return JSON.stringify({ perTenant, counters });
}

export { call };
