/**
 * @module
 * `memory`: Redis bytes per stored schedule and per finished job, as the `used_memory` growth of a
 * private Redis over N of each, divided by N. Schedules: realistic records (cron, time zone,
 * input, tags) written through the store API. Jobs: submitted through the broker, published with
 * `QStashTransport` to the QStash double, delivered by it over HTTP to the app's `/v1/worker`
 * (signature checked, handler run) until every one has `succeeded`: the full record a finished job
 * leaves behind, with its indexes, for its retention period.
 */
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { createApp } from "../../src/http/index.ts";
import { startQStashDouble } from "../../test/support/qstash-double/index.ts";
import { benchEngine, farTemplate, HANDLER, inBatches, seedFar } from "../lib/engine.ts";
import { startRedis, usedMemory } from "../lib/redis.ts";
import { BENCH_API_KEY } from "../lib/settings.ts";

export interface MemoryFigures {
  bytes_per_schedule: number;
  bytes_per_job: number;
  schedules: number;
  jobs: number;
}

export async function benchMemory(
  quick: boolean,
  log: (line: string) => void,
): Promise<MemoryFigures> {
  const n = 10_000;
  const jobs = quick ? 2_000 : 10_000;
  log(
    `memory: used_memory growth of a private Redis over ${n} stored schedules and ${jobs} finished jobs (submitted, delivered through the QStash double, succeeded)`,
  );
  const redis = await startRedis();
  const double = await startQStashDouble();
  let fetchApp: (request: Request) => Response | Promise<Response> = () =>
    new Response(null, { status: 503 });
  const server = serve({
    fetch: (request) => fetchApp(request),
    port: 0,
    hostname: "127.0.0.1",
  }) as Server;
  if (!server.listening) await new Promise((resolve) => server.once("listening", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const bench = await benchEngine(redis.url, double, { workerOrigin: origin });
  try {
    const { engine, store } = bench;
    const app = createApp({
      engine,
      publicUrl: origin,
      apiKeys: [BENCH_API_KEY],
      tickSecret: false,
    });
    fetchApp = (request) => app.fetch(request);

    const template = await farTemplate(engine, await store.now());
    const m0 = await usedMemory(redis.admin);
    await seedFar(engine, template, n);
    const m1 = await usedMemory(redis.admin);

    const ids: string[] = [];
    // The double delivers as soon as it accepts: let each batch finish before the next.
    for (let start = 0; start < jobs; start += 500) {
      await inBatches(start, Math.min(500, jobs - start), 500, async (i) => {
        const { job } = await engine.broker.submit({
          handler: HANDLER,
          input: { to: "ada@example.com", n: i },
        });
        ids.push(job.id);
      });
      await double.idle(60_000);
    }
    let succeeded = 0;
    await inBatches(0, ids.length, 1_000, async (i) => {
      if ((await store.getJob(ids[i]!))?.status === "succeeded") succeeded++;
    });
    if (succeeded !== jobs) throw new Error(`memory: ${succeeded} of ${jobs} jobs succeeded`);
    const m2 = await usedMemory(redis.admin);

    const figures: MemoryFigures = {
      bytes_per_schedule: Math.round((m1 - m0) / n),
      bytes_per_job: Math.round((m2 - m1) / jobs),
      schedules: n,
      jobs,
    };
    log(
      `  ${figures.bytes_per_schedule} B per schedule, ${figures.bytes_per_job} B per finished job (${succeeded} succeeded)`,
    );
    return figures;
  } finally {
    bench.close();
    await double.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await redis.stop();
  }
}
