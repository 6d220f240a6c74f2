/**
 * @module
 * `precision`: how late schedules and delayed jobs start, measured in real time (handler start
 * minus the time it was due; `bench/servers/precision-handlers.ts` reads the clock first thing).
 * Two paths run side by side on one private Redis (different prefixes), for the same wall-clock
 * window (full: 125 s, so every case sees at least two minute boundaries; quick: 65 s):
 *
 * - `qstash`: `bench/servers/precision-worker.ts` — the tick called once a minute, at the start
 *   of each minute, as platform cron (Cloudflare, Vercel) calls it; the tick dispatches what falls
 *   due in its 65 s look-ahead to the QStash double with a not-before time (the whole second it
 *   falls in; the runner waits out the rest: docs/adr/0023-sub-second-not-before.md), and the
 *   double delivers each message back over HTTP when that time comes.
 * - `start`: `tickwork start` (the CLI, Redis over TCP, no QStash: Redis Streams) with its
 *   internal one-second tick timer.
 *
 * Cases, on each path: schedules `1s` (2 of them), `10s` (5) and `0 * * * * *` (10, so two minutes
 * give 20 samples), and a `delay` case: a job submitted every 500 ms with `runAt` 2–5 s ahead at
 * an arbitrary millisecond. Each case reports p50, p99 and max of the error in ms, and its samples
 * (those due after the first 5 s: a warm-up while each process loads its code).
 */
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { startTsChild, type TsChild, track } from "../lib/children.ts";
import { startRedis } from "../lib/redis.ts";
import { BENCH_API_KEY } from "../lib/settings.ts";

export type PrecisionVia = "qstash" | "start";

export interface PrecisionCase {
  name: string;
  via: PrecisionVia;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
  samples: number;
}

export interface PrecisionFigures {
  /** Wall-clock seconds both paths ran. */
  window_s: number;
  /** Seconds at the start of the window whose samples are not counted. */
  warmup_s: number;
  cases: PrecisionCase[];
  /** How each path ticks. */
  ticks: Record<PrecisionVia, string>;
}

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const HANDLERS = "bench/servers/precision-handlers.ts";
const LEDGER = "precision:samples";
const SCHEDULES: { name: string; schedule: string; count: number }[] = [
  { name: "1s", schedule: "1s", count: 2 },
  { name: "10s", schedule: "10s", count: 5 },
  { name: "0 * * * * *", schedule: "0 * * * * *", count: 10 },
];
/** Samples due in the first this-many ms of the window are not counted (a warm-up). */
const WARMUP_MS = 5_000;
/** Order of the cases in the results. */
const CASES = [...SCHEDULES.map((s) => s.name), "delay"];

interface Started {
  url: string;
  stop(): Promise<void>;
}

/** `tickwork start` from the sources (as `npm run dev` runs them), waiting for its banner. */
async function startCli(env: Record<string, string>): Promise<Started> {
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !k.startsWith("QSTASH_") && !k.startsWith("TICKWORK_"),
    ),
  );
  const child = track(
    spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "src/cli.ts",
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--handlers",
        HANDLERS,
      ],
      { cwd: ROOT, env: { ...clean, ...env }, stdio: ["ignore", "pipe", "pipe"] },
    ),
  );
  let out = "";
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const found = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      if (found) {
        child.stdout?.off("data", onData);
        resolve(found);
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    void exited.then(() => reject(new Error(`tickwork start exited before listening:\n${out}`)));
  });
  child.stdout?.resume();
  return {
    url,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 8_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

async function api(url: string, path: string, body: unknown): Promise<void> {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` },
    body: JSON.stringify(body),
  });
  if (!response.ok) {
    throw new Error(`precision: POST ${path} → ${response.status} ${await response.text()}`);
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
}

export async function benchPrecision(
  quick: boolean,
  log: (line: string) => void,
): Promise<PrecisionFigures> {
  const windowS = quick ? 65 : 125;
  log(
    `precision: ${windowS} s of real time; schedules ${SCHEDULES.map((s) => `${s.schedule} ×${s.count}`).join(", ")} and a delayed job every 500 ms, on the QStash double (tick once a minute) and under tickwork start (1 s timer, Redis Streams)`,
  );
  const redis = await startRedis();
  let double: TsChild<Record<string, string>> | undefined;
  let worker: TsChild<{ url: string }> | undefined;
  let cli: Started | undefined;
  try {
    double = await startTsChild<Record<string, string>>("servers/qstash-double.ts", ["deliver"]);
    const ledger = { PRECISION_REDIS_URL: redis.url, PRECISION_LEDGER: LEDGER };
    worker = await startTsChild<{ url: string }>("servers/precision-worker.ts", [], {
      REDIS_URL: redis.url,
      QSTASH_URL: double.ready.url ?? "",
      QSTASH_TOKEN: double.ready.token ?? "",
      QSTASH_CURRENT_SIGNING_KEY: double.ready.currentSigningKey ?? "",
      QSTASH_NEXT_SIGNING_KEY: double.ready.nextSigningKey ?? "",
      PRECISION_VIA: "qstash",
      ...ledger,
    });
    cli = await startCli({
      REDIS_URL: redis.url,
      TICKWORK_PREFIX: "precision-start",
      TICKWORK_API_KEY: BENCH_API_KEY,
      PRECISION_VIA: "start",
      ...ledger,
    });
    const targets = [worker.ready.url, cli.url];
    for (const url of targets) {
      for (const s of SCHEDULES) {
        for (let i = 0; i < s.count; i++) {
          await api(url, "/v1/schedules", {
            id: `p-${s.name.replaceAll(/[^a-z0-9]/g, "x")}-${i}`,
            handler: "precision.fire",
            schedule: s.schedule,
            input: { case: s.name },
          });
        }
      }
    }
    await worker.request("start");
    const started = Date.now();
    const endAt = started + windowS * 1_000;
    // Delayed jobs until 6 s before the end (each is due 2–5 s after it is submitted).
    while (Date.now() < endAt - 6_000) {
      const due = Date.now() + 2_000 + Math.floor(Math.random() * 3_000);
      const runAt = new Date(due).toISOString();
      await Promise.all(
        targets.map((url) =>
          api(url, "/v1/jobs", {
            handler: "precision.fire",
            input: { case: "delay", due },
            runAt,
          }),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, endAt - Date.now())));
    await worker.request("stop");
    const ticks = await worker.request<number>("ticks");
    const raw = await redis.admin.lrange(LEDGER, 0, -1);
    const errors = new Map<string, number[]>();
    const measureFrom = started + WARMUP_MS;
    for (const line of raw) {
      const sample = JSON.parse(line) as {
        case: string;
        via: PrecisionVia;
        due: number;
        error_ms: number;
      };
      // Each process loads its code on first use (tsx compiles on demand): the first seconds
      // measure that, not the scheduling.
      if (sample.due < measureFrom) continue;
      const key = `${sample.via}\u0000${sample.case}`;
      errors.set(key, [...(errors.get(key) ?? []), sample.error_ms]);
    }
    const cases: PrecisionCase[] = [];
    for (const via of ["qstash", "start"] as const) {
      for (const name of CASES) {
        const sorted = (errors.get(`${via}\u0000${name}`) ?? []).sort((a, b) => a - b);
        const c: PrecisionCase = {
          name,
          via,
          p50_ms: percentile(sorted, 0.5),
          p99_ms: percentile(sorted, 0.99),
          max_ms: sorted.at(-1) ?? Number.NaN,
          samples: sorted.length,
        };
        cases.push(c);
        log(
          `  ${via.padEnd(6)} ${name.padEnd(12)} p50 ${c.p50_ms} ms  p99 ${c.p99_ms} ms  max ${c.max_ms} ms  (${c.samples} samples)`,
        );
      }
    }
    return {
      window_s: windowS,
      warmup_s: WARMUP_MS / 1_000,
      cases,
      ticks: {
        qstash: `once now, then at the start of each minute (${ticks} ticks), 65 s look-ahead`,
        start: "tickwork start's internal timer, every 1 s",
      },
    };
  } finally {
    await cli?.stop();
    await worker?.stop();
    await double?.stop();
    await redis.stop();
  }
}
