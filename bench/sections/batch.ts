/**
 * @module
 * `batch`: jobs/s submitting 10,000 jobs over HTTP as one request per job (`POST /v1/jobs`,
 * autocannon, 50 connections, as the `submit` section) and as 10 requests of 1,000 jobs
 * (`POST /v1/jobs/batch`, 2 at a time), one after the other against the same server process and
 * private Redis (the `submit` section's `servers/submit-server.ts`: tickwork on QStash, publishing
 * to the QStash double in a third process, and tickwork on Redis Streams). Also CPU µs per job
 * by process and Redis round trips per job. Every job must be answered accepted, and on QStash
 * every message published (the double's counter), for a figure to count.
 */
import autocannon from "autocannon";
import { startTsChild, type TsChild } from "../lib/children.ts";
import { redisCpu, startRedis } from "../lib/redis.ts";
import { BENCH_API_KEY, SUBMIT_BODY } from "../lib/settings.ts";

type Contender = "tickwork" | "streams";

/** One way of submitting the jobs. */
export interface BatchPhase {
  jobs_per_s: number;
  ms: number;
  requests: number;
  /** CPU µs per job: the server process, Redis, and (QStash) the queue double. */
  cpu_us_per_job: { server: number; redis: number; queue?: number };
  /** Redis commands processed per job (`INFO stats` total_commands_processed). */
  redis_commands_per_job: number;
}

export interface BatchContenderFigures {
  single: BatchPhase;
  batch: BatchPhase;
  /** batch.jobs_per_s / single.jobs_per_s */
  batch_vs_single: number;
}

export interface BatchFigures {
  jobs: number;
  batch_size: number;
  single_connections: number;
  batch_concurrency: number;
  /** tickwork on QStash (the default transport). */
  qstash: BatchContenderFigures;
  /** tickwork on Redis Streams (`dispatch: "streams"`). */
  streams: BatchContenderFigures;
}

const JOBS = 10_000;
const BATCH = 1_000;
const CONNECTIONS = 50;
const BATCH_CONCURRENCY = 2;
const HEADERS = { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` };
const BATCH_BODY = `{"jobs":[${Array(BATCH).fill(SUBMIT_BODY).join(",")}]}`;

interface DoubleReady {
  url: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
}

/** `count` single submits, `CONNECTIONS` at a time. */
async function singles(url: string, count: number): Promise<number> {
  const r = await autocannon({
    url: `${url}/v1/jobs`,
    connections: CONNECTIONS,
    amount: count,
    method: "POST",
    headers: HEADERS,
    body: SUBMIT_BODY,
  });
  if (r.non2xx > 0 || r.errors + r.timeouts > 0 || r.requests.total !== count) {
    throw new Error(
      `batch/single: ${r.non2xx} non-2xx, ${r.errors + r.timeouts} errors of ${r.requests.total}`,
    );
  }
  return r.requests.total;
}

/** `count` jobs as batches of `BATCH`, `BATCH_CONCURRENCY` requests at a time. */
async function batches(url: string, count: number): Promise<number> {
  let left = count / BATCH;
  let requests = 0;
  const lane = async () => {
    while (left > 0) {
      left -= 1;
      const res = await fetch(`${url}/v1/jobs/batch`, {
        method: "POST",
        headers: HEADERS,
        body: BATCH_BODY,
      });
      const body = (await res.json()) as { accepted?: number };
      if (res.status !== 200 || body.accepted !== BATCH) {
        throw new Error(`batch/batch: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
      }
      requests += 1;
    }
  };
  await Promise.all(Array.from({ length: BATCH_CONCURRENCY }, lane));
  return requests;
}

async function commandsProcessed(admin: { info(section: string): Promise<string> }) {
  const text = await admin.info("stats");
  return Number(/total_commands_processed:(\d+)/.exec(text)?.[1] ?? Number.NaN);
}

async function runContender(
  name: Contender,
  quick: boolean,
  log: (line: string) => void,
): Promise<BatchContenderFigures> {
  const redis = await startRedis();
  let double: TsChild<DoubleReady> | undefined;
  let server: TsChild<{ url: string }> | undefined;
  try {
    const env: Record<string, string> = { REDIS_URL: redis.url };
    if (name === "tickwork") {
      double = await startTsChild<DoubleReady>("servers/qstash-double.ts");
      Object.assign(env, {
        QSTASH_URL: double.ready.url,
        QSTASH_TOKEN: double.ready.token,
        QSTASH_CURRENT_SIGNING_KEY: double.ready.currentSigningKey,
        QSTASH_NEXT_SIGNING_KEY: double.ready.nextSigningKey,
      });
    }
    server = await startTsChild<{ url: string }>("servers/submit-server.ts", [name], env);
    const url = server.ready.url;
    // Warm-up: both routes, JIT and script caches.
    const warm = quick ? 1_000 : 2_000;
    await singles(url, warm);
    await batches(url, warm);
    let expected = 2 * warm;

    const measure = async (run: () => Promise<number>): Promise<BatchPhase> => {
      const before = await snapshot(server!, redis.admin, double);
      const t0 = performance.now();
      const requests = await run();
      const ms = performance.now() - t0;
      expected += JOBS;
      // The server publishes in the background: wait for the double to have every message.
      if (double) await published(double, expected);
      const after = await snapshot(server!, redis.admin, double);
      const per = (a: number, b: number) => round((b - a) / JOBS, 1);
      return {
        jobs_per_s: round((JOBS / ms) * 1000),
        ms: round(ms),
        requests,
        cpu_us_per_job: {
          server: per(before.server, after.server),
          redis: per(before.redis, after.redis),
          ...(double ? { queue: per(before.queue, after.queue) } : {}),
        },
        redis_commands_per_job: per(before.commands, after.commands),
      };
    };
    const single = await measure(() => singles(url, JOBS));
    const batch = await measure(() => batches(url, JOBS));
    const info = (await server.request("info")) as { submitted?: number };
    if (info.submitted !== expected) {
      throw new Error(`batch/${name}: the store counts ${info.submitted} submits of ${expected}`);
    }
    const label = name === "tickwork" ? "qstash" : name;
    log(
      `  ${label.padEnd(8)} one request per job ${single.jobs_per_s} jobs/s · batches of ${BATCH} ${batch.jobs_per_s} jobs/s = ${round(batch.jobs_per_s / single.jobs_per_s, 2)} ×  (CPU µs/job single ${JSON.stringify(single.cpu_us_per_job)}, batch ${JSON.stringify(batch.cpu_us_per_job)}; Redis commands/job ${single.redis_commands_per_job} · ${batch.redis_commands_per_job})`,
    );
    return { single, batch, batch_vs_single: round(batch.jobs_per_s / single.jobs_per_s, 2) };
  } finally {
    await server?.stop();
    await double?.stop();
    await redis.stop();
  }
}

async function snapshot(
  server: TsChild<unknown>,
  admin: Parameters<typeof redisCpu>[0],
  double: TsChild<unknown> | undefined,
) {
  const [s, r, q, commands] = await Promise.all([
    server.request<number>("cpu"),
    redisCpu(admin),
    double ? double.request<number>("cpu") : 0,
    commandsProcessed(admin),
  ]);
  return { server: s, redis: r, queue: q, commands };
}

/** Waits (up to 30 s) until the QStash double accepted `count` messages. */
async function published(double: TsChild<unknown>, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const c = await double.request<{ messages: number; rejected: number }>("counters");
    if (c.rejected > 0) throw new Error(`batch: the QStash double rejected ${c.rejected} messages`);
    if (c.messages >= count) return;
    if (Date.now() > deadline) {
      throw new Error(`batch: the QStash double has ${c.messages} of ${count} messages`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** One request per job vs batches of 1,000, on QStash and on Redis Streams. */
export async function benchBatch(
  quick: boolean,
  log: (line: string) => void,
): Promise<BatchFigures> {
  log(
    `batch: ${JOBS} jobs as one POST /v1/jobs each (${CONNECTIONS} connections) vs POST /v1/jobs/batch of ${BATCH} (${BATCH_CONCURRENCY} at a time)`,
  );
  const qstash = await runContender("tickwork", quick, log);
  const streams = await runContender("streams", quick, log);
  return {
    jobs: JOBS,
    batch_size: BATCH,
    single_connections: CONNECTIONS,
    batch_concurrency: BATCH_CONCURRENCY,
    qstash,
    streams,
  };
}

function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
