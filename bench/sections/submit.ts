/**
 * @module
 * `submit`: HTTP submits over real sockets, autocannon (50 connections) in this process against a
 * server process per contender, each on its own private Redis: tickwork `POST /v1/jobs` (QStash
 * transport → the QStash double in a third process), tickwork `POST /v1/jobs` on Redis Streams
 * (`dispatch: "streams"`, the `RedisStreams` transport; no queue double), one `@upstash/qstash`
 * `publishJSON` per request to the same QStash double (what users write without tickwork), the
 * one-`SET` ceiling, and BullMQ `queue.add`.
 */
import autocannon from "autocannon";
import type { Redis } from "ioredis";
import { startTsChild, type TsChild } from "../lib/children.ts";
import { medians, type PairedRatio, pairedRatio } from "../lib/median.ts";
import { redisCpu, startRedis } from "../lib/redis.ts";
import { BENCH_API_KEY, SUBMIT_BODY } from "../lib/settings.ts";

export type Contender = "tickwork" | "streams" | "direct_qstash" | "ceiling" | "bullmq";

/** CPU time per answered request during the measured run, in µs, by process. */
export interface CpuPerRequest {
  server: number;
  redis: number;
  /** The QStash double (tickwork, direct_qstash): work a real deployment has QStash do elsewhere. */
  queue?: number;
}

export interface LoadFigures {
  rps: number;
  p50_ms: number;
  p99_ms: number;
  requests: number;
  non2xx: number;
  errors: number;
}

export interface SubmitFigures {
  tickwork_rps: number;
  /** tickwork on Redis Streams. */
  streams_rps: number;
  /** One `@upstash/qstash` `publishJSON` per request (what Upstash's docs show). */
  direct_qstash_rps: number;
  ceiling_rps: number;
  bullmq_rps: number;
  tickwork_p50_ms: number;
  tickwork_p99_ms: number;
  streams_p50_ms: number;
  streams_p99_ms: number;
  direct_qstash_p50_ms: number;
  direct_qstash_p99_ms: number;
  ceiling_p50_ms: number;
  ceiling_p99_ms: number;
  bullmq_p50_ms: number;
  bullmq_p99_ms: number;
  /** tickwork_rps / ceiling_rps */
  tickwork_vs_ceiling: number;
  /** tickwork_rps / bullmq_rps */
  tickwork_vs_bullmq: number;
  /** streams_rps / bullmq_rps */
  streams_vs_bullmq: number;
  /** tickwork_rps / direct_qstash_rps: both publish to the same QStash double. */
  tickwork_vs_direct_qstash: number;
  /**
   * The same ratios, and the server's CPU per request against BullMQ's route's, taken within each
   * round; the targets are judged on their medians (`PairedRatio`). The ratios above divide
   * medians over the rounds.
   */
  paired: {
    tickwork_vs_ceiling: PairedRatio;
    tickwork_vs_bullmq: PairedRatio;
    streams_vs_bullmq: PairedRatio;
    tickwork_vs_direct_qstash: PairedRatio;
    server_cpu_tickwork_vs_bullmq: PairedRatio;
    server_cpu_streams_vs_bullmq: PairedRatio;
  };
  non2xx: Record<Contender, number>;
  connections: number;
  duration_s: number;
  warmup_s: number;
  /** tickwork's degradation controller after the run (`store.stats()`), or why it is unknown. */
  degradation: unknown;
  /** Messages the QStash double accepted during tickwork's run (warm-up included). */
  queue_messages: number;
  /** The streams contender's store after the run (`store.stats()`), or why it is unknown. */
  streams_after: unknown;
  /**
   * CPU µs per request by process, during the measured run. Unlike req/s, this does not move
   * with other load on the machine; it shows what each request costs where.
   */
  cpu_us_per_request: Record<Contender, CpuPerRequest>;
}

const CONNECTIONS = 50;

async function load(url: string, seconds: number): Promise<LoadFigures> {
  const r = await autocannon({
    url: `${url}/v1/jobs`,
    connections: CONNECTIONS,
    duration: seconds,
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${BENCH_API_KEY}` },
    body: SUBMIT_BODY,
  });
  return {
    rps: r.requests.total / r.duration,
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    requests: r.requests.total,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

interface DoubleReady {
  url: string;
  token: string;
  currentSigningKey: string;
  nextSigningKey: string;
}

export interface Run {
  figures: LoadFigures;
  cpu: CpuPerRequest;
  info: unknown;
  queueMessages: number;
}

export async function runContender(
  name: Contender,
  warmupS: number,
  durationS: number,
  log: (line: string) => void,
): Promise<Run> {
  const redis = await startRedis();
  let double: TsChild<DoubleReady> | undefined;
  let server: TsChild<{ url: string }> | undefined;
  try {
    const env: Record<string, string> = { REDIS_URL: redis.url };
    if (name === "tickwork" || name === "direct_qstash") {
      double = await startTsChild<DoubleReady>("servers/qstash-double.ts");
      Object.assign(env, {
        QSTASH_URL: double.ready.url,
        QSTASH_TOKEN: double.ready.token,
        QSTASH_CURRENT_SIGNING_KEY: double.ready.currentSigningKey,
        QSTASH_NEXT_SIGNING_KEY: double.ready.nextSigningKey,
      });
    }
    server = await startTsChild<{ url: string }>("servers/submit-server.ts", [name], env);
    const warm = await load(server.ready.url, warmupS);
    const cpu0 = await cpuNow(server, redis.admin, double);
    const figures = await load(server.ready.url, durationS);
    const cpu1 = await cpuNow(server, redis.admin, double);
    const per = (a: number, b: number) => Math.round((b - a) / figures.requests);
    const cpu: CpuPerRequest = {
      server: per(cpu0.server, cpu1.server),
      redis: per(cpu0.redis, cpu1.redis),
      ...(double ? { queue: per(cpu0.queue, cpu1.queue) } : {}),
    };
    for (const [phase, f] of [
      ["warm-up", warm],
      ["run", figures],
    ] as const) {
      if (f.non2xx > 0 || f.errors > 0) {
        throw new Error(
          `submit/${name} ${phase}: ${f.non2xx} non-2xx responses and ${f.errors} errors of ${f.requests}`,
        );
      }
    }
    let info: unknown;
    try {
      info = await server.request("info");
    } catch (error) {
      info = { unavailable: (error as Error).message };
    }
    if (name === "streams") {
      // Every 202 means the submit script wrote the job and added it to the stream (requests
      // cut off when the load stopped may be stored without being counted as answered).
      const answered = warm.requests + figures.requests;
      const submitted = (info as { submitted?: number }).submitted;
      if (submitted === undefined || submitted < answered) {
        throw new Error(
          `submit/streams: the store counts ${submitted} submits for ${answered} 202s`,
        );
      }
    }
    let queueMessages = 0;
    let batches = "";
    if (double) {
      const c = await double.request<{ messages: number; rejected: number; batches: number }>(
        "counters",
      );
      queueMessages = c.messages;
      if (c.batches > 0) batches = `, ${(c.messages / c.batches).toFixed(1)} messages per batch`;
      const answered = warm.requests + figures.requests;
      // Every 202 means the store wrote the job; the publish may still have failed (the outbox
      // keeps it). The double must have accepted every one for the run to count.
      if (c.rejected > 0 || c.messages < answered) {
        throw new Error(
          `submit/${name}: the QStash double accepted ${c.messages} messages (rejected ${c.rejected}) for ${answered} submits`,
        );
      }
    }
    log(
      `  ${name.padEnd(8)} ${figures.rps.toFixed(0).padStart(6)} req/s  p50 ${figures.p50_ms} ms  p99 ${figures.p99_ms} ms  non-2xx ${figures.non2xx}  (${figures.requests} requests; CPU µs/request: ${JSON.stringify(cpu)}${batches})`,
    );
    return { figures, cpu, info, queueMessages };
  } finally {
    await server?.stop();
    await double?.stop();
    await redis.stop();
  }
}

async function cpuNow(
  server: TsChild<unknown>,
  redis: Redis,
  double: TsChild<unknown> | undefined,
): Promise<{ server: number; redis: number; queue: number }> {
  const [s, r, q] = await Promise.all([
    server.request<number>("cpu"),
    redisCpu(redis),
    double ? double.request<number>("cpu") : 0,
  ]);
  return { server: s, redis: r, queue: q };
}

/**
 * Run the five contenders one after another, same load and duration each: `rounds` rounds (full:
 * 5), the order reversed every other round, each figure the median over the rounds (machine noise
 * moves one run by a third here; the median of alternating rounds moves far less), and each
 * ratio also taken within every round (`paired`), which the targets read.
 */
export async function benchSubmit(
  quick: boolean,
  log: (line: string) => void,
): Promise<SubmitFigures> {
  const warmupS = 2;
  const durationS = quick ? 4 : 10;
  const rounds = quick ? 1 : 5;
  log(
    `submit: autocannon, ${CONNECTIONS} connections, ${warmupS} s warm-up + ${durationS} s per contender; median of ${rounds} round(s), the order reversed every other round`,
  );
  const order: Contender[] = ["tickwork", "ceiling", "streams", "direct_qstash", "bullmq"];
  const runs = new Map<Contender, Run[]>(order.map((c) => [c, []]));
  for (let round = 0; round < rounds; round++) {
    for (const name of round % 2 === 0 ? order : [...order].reverse()) {
      runs.get(name)!.push(await runContender(name, warmupS, durationS, log));
    }
  }
  const median = (name: Contender): Run => {
    const all = runs.get(name)!;
    return {
      figures: medians(all.map((r) => r.figures)),
      cpu: medians(all.map((r) => r.cpu)),
      info: all.at(-1)!.info,
      queueMessages: all.at(-1)!.queueMessages,
    };
  };
  const tickwork = median("tickwork");
  const ceiling = median("ceiling");
  const streams = median("streams");
  const direct = median("direct_qstash");
  const bullmq = median("bullmq");
  const rps = (name: Contender) => runs.get(name)!.map((r) => r.figures.rps);
  const serverCpu = (name: Contender) => runs.get(name)!.map((r) => r.cpu.server);
  log(`  tickwork degradation controller after the run: ${JSON.stringify(tickwork.info)}`);
  log(`  streams store after the run: ${JSON.stringify(streams.info)}`);
  const t = tickwork.figures;
  const st = streams.figures;
  return {
    tickwork_rps: round(t.rps),
    streams_rps: round(st.rps),
    direct_qstash_rps: round(direct.figures.rps),
    ceiling_rps: round(ceiling.figures.rps),
    bullmq_rps: round(bullmq.figures.rps),
    tickwork_p50_ms: t.p50_ms,
    tickwork_p99_ms: t.p99_ms,
    streams_p50_ms: st.p50_ms,
    streams_p99_ms: st.p99_ms,
    direct_qstash_p50_ms: direct.figures.p50_ms,
    direct_qstash_p99_ms: direct.figures.p99_ms,
    ceiling_p50_ms: ceiling.figures.p50_ms,
    ceiling_p99_ms: ceiling.figures.p99_ms,
    bullmq_p50_ms: bullmq.figures.p50_ms,
    bullmq_p99_ms: bullmq.figures.p99_ms,
    tickwork_vs_ceiling: round(t.rps / ceiling.figures.rps, 2),
    tickwork_vs_bullmq: round(t.rps / bullmq.figures.rps, 2),
    streams_vs_bullmq: round(st.rps / bullmq.figures.rps, 2),
    tickwork_vs_direct_qstash: round(t.rps / direct.figures.rps, 2),
    paired: {
      tickwork_vs_ceiling: pairedRatio(rps("tickwork"), rps("ceiling")),
      tickwork_vs_bullmq: pairedRatio(rps("tickwork"), rps("bullmq")),
      streams_vs_bullmq: pairedRatio(rps("streams"), rps("bullmq")),
      tickwork_vs_direct_qstash: pairedRatio(rps("tickwork"), rps("direct_qstash")),
      server_cpu_tickwork_vs_bullmq: pairedRatio(serverCpu("tickwork"), serverCpu("bullmq")),
      server_cpu_streams_vs_bullmq: pairedRatio(serverCpu("streams"), serverCpu("bullmq")),
    },
    non2xx: {
      tickwork: t.non2xx,
      streams: st.non2xx,
      direct_qstash: direct.figures.non2xx,
      ceiling: ceiling.figures.non2xx,
      bullmq: bullmq.figures.non2xx,
    },
    connections: CONNECTIONS,
    duration_s: durationS,
    warmup_s: warmupS,
    degradation: tickwork.info,
    queue_messages: tickwork.queueMessages,
    streams_after: streams.info,
    cpu_us_per_request: {
      tickwork: tickwork.cpu,
      streams: streams.cpu,
      direct_qstash: direct.cpu,
      ceiling: ceiling.cpu,
      bullmq: bullmq.cpu,
    },
  };
}

function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
