/**
 * @module
 * The fault suite's faults, each a loop at exponentially distributed intervals while the switch
 * is on: Redis faults at the proxy, publish faults at the QStash layer, SIGKILLs of app processes
 * running handlers and of tick processes, and the double's duplicate and reorder windows. On
 * Streams, nothing goes through QStash (its publish faults and delivery windows stay off); app
 * processes running handlers are stalled (SIGSTOP … SIGCONT) past their run lease instead.
 */
import type { Prng } from "../../test/support/prng.ts";
import type { ChaosTransport } from "./config.ts";
import type { Slot } from "./fleet.ts";
import { INTENSITY } from "./intensity.ts";
import type { ChaosSwitch, Rig, Streams } from "./setup.ts";
import { between, exponential, pickCumulative, sleep } from "./util.ts";

/** Faults counted here (the others are counted by the parts that inject them). */
export interface FaultCounts {
  worker_kill_mid_handler: number;
  ticker_kill: number;
  qstash_duplicate_window: number;
  qstash_reorder_window: number;
  /** Streams runs only. */
  worker_stall_past_lease: number;
}

export interface Faults {
  readonly counts: FaultCounts;
  /** Switch every fault off and wait for the loops to end. */
  stop(): Promise<void>;
}

/** Switch the faults on (when `enabled`; off, the run is the no-fault baseline) and start them. */
export function startFaults(
  rig: Rig,
  rng: Streams,
  chaos: ChaosSwitch,
  enabled: boolean,
  transport: ChaosTransport = "qstash",
): Faults {
  const { proxy, layer, fleet, double } = rig;
  chaos.on = enabled;
  const counts: FaultCounts = {
    worker_kill_mid_handler: 0,
    ticker_kill: 0,
    qstash_duplicate_window: 0,
    qstash_reorder_window: 0,
    worker_stall_past_lease: 0,
  };
  const loops: Promise<void>[] = [];
  // The waits between faults end when the faults are switched off (an exponential wait can be
  // long: without this, stopping waited for it while the drain's time ran).
  const waits = new Set<() => void>();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waits.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waits.add(done);
    });
  const every = (mean: () => number, r: Prng, act: () => void | Promise<void>) => {
    loops.push(
      (async () => {
        while (chaos.on) {
          await pause(exponential(r, mean()));
          if (chaos.on) await act();
        }
      })(),
    );
  };
  const totalWeight = Object.values(INTENSITY.redisWeights).reduce((a, b) => a + b, 0);
  every(
    () => INTENSITY.redisFaultEveryMs,
    rng.redis,
    () => {
      const kind = pickCumulative(INTENSITY.redisWeights, rng.redis.next() * totalWeight) ?? "drop";
      const ms =
        kind === "stall"
          ? between(rng.redis, INTENSITY.stallMs)
          : kind === "outage"
            ? between(rng.redis, INTENSITY.outageMs)
            : 0;
      proxy.fault(kind, (n) => rng.redis.int(n), ms);
    },
  );
  const qstash = transport === "qstash";
  if (chaos.on && qstash) {
    layer.pick = () => pickCumulative(INTENSITY.publishFaults, rng.publish.next());
  }

  const apps = fleet.slots.filter((s) => s.role === "app");
  const ticks = fleet.slots.filter((s) => s.role === "tick");
  every(
    () => INTENSITY.workerKillEveryMs,
    rng.kill,
    async () => {
      // A random moment while handlers run: wait for one if none does right now.
      for (let i = 0; i < 40 && chaos.on; i++) {
        const busy = apps.filter((s) => s.ready && s.inflight > 0);
        const victim = busy[rng.kill.int(busy.length)];
        if (victim && fleet.kill(victim)) {
          counts.worker_kill_mid_handler++;
          return;
        }
        await sleep(25);
      }
    },
  );
  every(
    () => INTENSITY.tickerKillEveryMs,
    rng.kill,
    () => {
      const alive: Slot[] = ticks.filter((s) => s.ready);
      const victim = alive[rng.kill.int(alive.length)];
      if (victim && fleet.kill(victim)) counts.ticker_kill++;
    },
  );
  if (qstash) {
    every(
      () => INTENSITY.doubleSwitchEveryMs,
      rng.double,
      () => {
        const duplicate = rng.double.chance(INTENSITY.duplicateShare);
        const reorder = rng.double.chance(INTENSITY.reorderShare);
        if (duplicate && !double.faults.duplicateDeliveries) counts.qstash_duplicate_window++;
        if (reorder && double.faults.reorderMs === 0) counts.qstash_reorder_window++;
        double.faults.duplicateDeliveries = duplicate;
        double.faults.reorderMs = reorder ? INTENSITY.reorderMs : 0;
      },
    );
  } else {
    // Its own stream (seeded apart from the others), so the QStash runs' draws are unchanged.
    const stalls = rng.stall;
    every(
      () => INTENSITY.workerStallEveryMs,
      stalls,
      async () => {
        // One stalled process at a time (two or three at once leave nobody to take over).
        if (apps.some((s) => s.stalled)) return;
        for (let i = 0; i < 40 && chaos.on; i++) {
          const busy = apps.filter((s) => s.ready && s.inflight > 0);
          const victim = busy[stalls.int(busy.length)];
          if (victim && fleet.stall(victim, between(stalls, INTENSITY.workerStallMs))) {
            counts.worker_stall_past_lease++;
            return;
          }
          await sleep(25);
        }
      },
    );
  }

  return {
    counts,
    async stop() {
      chaos.on = false;
      for (const done of [...waits]) done();
      fleet.resumeAll();
      layer.pick = () => undefined;
      double.faults.duplicateDeliveries = false;
      double.faults.reorderMs = 0;
      await Promise.all(loops);
    },
  };
}
