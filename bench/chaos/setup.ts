/**
 * @module
 * The fault suite's first phase: the system under test and its fault layers. A private
 * `redis-server` reached through the TCP fault proxy, the ledger on a direct connection, the
 * QStash double behind its publish fault layer (started on Streams too, where nothing uses it),
 * the balancer in front of the app slots, and the fleet of app and tick processes, started and
 * ready.
 */
import { Redis } from "ioredis";
import { type Prng, prng } from "../../test/support/prng.ts";
import { type QStashDouble, startQStashDouble } from "../../test/support/qstash-double/index.ts";
import { type PrivateRedis, startRedisServer } from "../../test/support/redis-server.ts";
import { Balancer, type SlotPorts } from "./balancer.ts";
import { type ChaosTransport, DELIVERY_TIMEOUT_MS, TRANSPORT_OPTIONS } from "./config.ts";
import { childCommand, Fleet } from "./fleet.ts";
import { INTENSITY, PREFIX } from "./intensity.ts";
import { Ledger } from "./ledger.ts";
import { QStashFaultLayer } from "./qstash-faults.ts";
import { RedisFaultProxy } from "./redis-proxy.ts";
import { between } from "./util.ts";

/** The seeded random streams of a run, one per concern, so each is reproducible on its own. */
export interface Streams {
  redis: Prng;
  publish: Prng;
  balancer: Prng;
  kill: Prng;
  double: Prng;
  restart: Prng;
  /** Streams runs: which app process to stall, and for how long. */
  stall: Prng;
}

export function streams(seed: number): Streams {
  const stream = (n: number) => prng((seed * 31 + n) >>> 0);
  return {
    redis: stream(1),
    publish: stream(2),
    balancer: stream(3),
    kill: stream(4),
    double: stream(5),
    restart: stream(6),
    stall: stream(7),
  };
}

/** Whether faults are being injected right now (read by the balancer and the fleet). */
export interface ChaosSwitch {
  on: boolean;
}

/** Everything running for a run. */
export interface Rig {
  redis: PrivateRedis;
  /** A direct connection to Redis (no fault proxy): the ledger's, and the verdict's reads. */
  direct: Redis;
  ledger: Ledger;
  proxy: RedisFaultProxy;
  double: QStashDouble;
  layer: QStashFaultLayer;
  lb: Balancer;
  appPorts: SlotPorts;
  fleet: Fleet;
}

/**
 * Start the rig, registering each part's undo in `cleanups` as soon as it runs; resolves once
 * every process of the fleet is ready.
 */
export async function startRig(
  options: { seed: number; faults: boolean; transport: ChaosTransport },
  rng: Streams,
  chaos: ChaosSwitch,
  cleanups: (() => Promise<unknown>)[],
): Promise<Rig> {
  const redis = await startRedisServer();
  cleanups.push(() => redis.stop());
  const direct = new Redis(redis.url);
  cleanups.push(async () => direct.disconnect());
  const ledger = new Ledger(direct);
  await ledger.reset();
  const proxy = await RedisFaultProxy.start(redis.port);
  cleanups.push(() => proxy.close());
  // Failure callbacks retry on QStash's default backoff (12 s, 2.5 min, 30 min …): shortened
  // 100×, so a drain need not wait half an hour. Retry-After and the transport's retry delay
  // are not scaled.
  const double = await startQStashDouble({ random: rng.double.next, defaultBackoffScale: 0.01 });
  cleanups.push(() => double.close());
  const layer = await QStashFaultLayer.start(
    double.url,
    () => undefined,
    (TRANSPORT_OPTIONS.publishTimeoutMs ?? 10_000) + 500,
  );
  cleanups.push(() => layer.close());
  const appPorts: SlotPorts = [undefined, undefined, undefined];
  const lb = await Balancer.start(
    appPorts,
    {
      slot: (n) => rng.balancer.int(n),
      holdDelivery: () => chaos.on && rng.balancer.chance(INTENSITY.deliveryTimeout),
    },
    DELIVERY_TIMEOUT_MS + 500,
  );
  cleanups.push(() => lb.close());
  const fleet = new Fleet(
    {
      transport: options.transport,
      redisUrl: `redis://127.0.0.1:${proxy.port}`,
      ledgerUrl: redis.url,
      prefix: PREFIX,
      qstash: {
        url: layer.url,
        token: double.token,
        currentSigningKey: double.currentSigningKey,
        nextSigningKey: double.nextSigningKey,
      },
      publicUrl: lb.url,
      afterCompletionCrashRate: options.faults ? INTENSITY.afterCompletionCrashRate : 0,
      seed: options.seed,
      tickEveryMs: 500,
    },
    { appPorts, ticks: 3 },
    () => (chaos.on ? between(rng.restart, INTENSITY.restartMs) : 100),
    await childCommand(),
  );
  cleanups.push(() => fleet.stop());
  fleet.start();
  await fleet.ready(90_000);
  return { redis, direct, ledger, proxy, double, layer, lb, appPorts, fleet };
}
